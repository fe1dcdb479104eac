"""The endpoints about this bookie: probes (``/heartbeat``, ``/api/v1/bookie/is_ready``: what Kubernetes asks),
``/metrics``, its configuration, state, read-only mode, GC and compaction, its files, and the sanity test.

Where we differ from BookKeeper: ``PUT /api/v1/config/server_config`` is refused (this bookie reads its
configuration at start only; BookKeeper stores the keys in memory, where most are never read again); values of keys
naming a password, secret or token are not shown; bodies carry a Content-Type (text/plain or application/json;
BookKeeper's carry none but /metrics'); and /heartbeat and is_ready answer from the moment the port is bound, before
ZooKeeper and the journal replay (a Java bookie opens its HTTP port once started).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from pathlib import Path
from typing import Any

from aiohttp import web

from bookie.codec.digest import DigestType
from bookie.codec.jackson import hash_map
from bookie.errors import BKError
from bookie.server.http.common import NOT_STARTED, Failed, Handler, jackson, json_body, params, started, text
from bookie.server.prometheus import CONTENT_TYPE as PROMETHEUS_CONTENT_TYPE  # MetricsService's
from bookie.storage.checkpoint import highest_mark, mark_file
from bookie.storage.dir_files import files_by_age
from bookie.storage.gc import MAJOR, MINOR, GarbageCollector
from bookie.storage.group_commit import LogMark

log = logging.getLogger(__name__)
# server_config hides the values of these keys (tlsKeyStorePasswordPath, httpServerKeyStorePassword, ...). BookKeeper's
# ConfigurationService shows every value raw (conf.asJson()); ours hides them anyway: no secret in any output.
SECRET_KEY = re.compile(r"password|secret|token", re.IGNORECASE)
GC_STATUS_FIELDS = (
    "forceCompacting",
    "majorCompacting",
    "minorCompacting",
    "lastMajorCompactionTime",
    "lastMinorCompactionTime",
    "lastEntryLocationCompactionTime",
    "majorCompactionCounter",
    "minorCompactionCounter",
    "entryLocationCompactionCounter",
)  # GarbageCollectionStatus
# ListDiskFilesService: file_type -> (its key in the answer, the directories' configuration keys, the extension)
DISK_FILES = {
    "journal": ("journal files", ("journalDirectories",), "txn"),
    "entrylog": ("entrylog files", ("ledgerDirectories",), "log"),
    "index": ("index files", ("indexDirectories", "ledgerDirectories"), "idx"),
}
SANITY_ENTRIES = 10  # SanityTestCommand's default
SANITY_TIMEOUT = 30.0  # seconds for the whole test (BookKeeper: 1 s per add and read); a loaded bookie is not broken
SANITY_QUEUE_WAIT = 5.0  # BookieSanityService.TIMEOUT_MS


class BookieApi:
    def __init__(self, admin: Any) -> None:
        self.admin = admin
        self.bookie = admin.bookie
        self._sanity = asyncio.Lock()  # BookieSanityService: one test at a time

    def routes(self) -> dict[str, Handler]:
        return {
            "/heartbeat": self.heartbeat,
            "/metrics": self.metrics,
            "/api/v1/config/server_config": self.server_config,
            "/api/v1/bookie/state": self.state,
            "/api/v1/bookie/state/readonly": self.readonly,
            "/api/v1/bookie/is_ready": self.is_ready,
            "/api/v1/bookie/info": self.info,
            "/api/v1/bookie/last_log_mark": self.last_log_mark,
            "/api/v1/bookie/list_disk_file": self.list_disk_file,
            "/api/v1/bookie/gc": self.gc,
            "/api/v1/bookie/gc_details": self.gc_details,
            "/api/v1/bookie/gc/suspend_compaction": self.suspend_compaction,
            "/api/v1/bookie/gc/resume_compaction": self.resume_compaction,
            "/api/v1/bookie/sanity": self.sanity,
        }

    # ---- probes and metrics ----
    async def heartbeat(self, request: web.Request) -> web.Response:
        return text(200, "OK\n")  # HeartbeatService: any method

    async def metrics(self, request: web.Request) -> web.Response:
        if request.method != "GET":
            return text(403, f"{request.method} is forbidden. Should be GET method")
        return web.Response(body=self.bookie.stats.text().encode(), headers={"Content-Type": PROMETHEUS_CONTENT_TYPE})

    async def is_ready(self, request: web.Request) -> web.Response:
        if request.method != "GET":
            return text(404, "Only support GET method check if bookie is ready.")
        if self.bookie.running and not self.bookie.shutting_down:
            return text(200, "OK")
        return text(503, NOT_STARTED)

    # ---- configuration ----
    async def server_config(self, request: web.Request) -> web.Response:
        if request.method == "GET":  # ConfigurationService: every key set, values as strings, in HashMap order
            shown = (
                (k, "******" if SECRET_KEY.search(k) else str(v)) for k, v in self.bookie.config.properties.items()
            )
            return jackson(hash_map(shown))
        if request.method == "PUT":
            return text(
                403, "this bookie reads its configuration at start only: change bk_server.conf and restart the bookie"
            )
        return text(404, "Request body not found. should contains k-v pairs")

    # ---- state ----
    def _state(self) -> dict[str, Any]:
        bookie = self.bookie
        return {
            "running": bookie.running,
            "readOnly": bookie.read_only,
            "shuttingDown": bookie.shutting_down,
            "availableForHighPriorityWrites": not bookie.read_only_by_disk,
        }

    async def state(self, request: web.Request) -> web.Response:
        if request.method != "GET":
            return text(404, "Only support GET method to retrieve bookie state.")
        return jackson(self._state())

    @started
    async def readonly(self, request: web.Request) -> web.Response:
        bookie = self.bookie
        if request.method == "PUT":
            wanted = (await json_body(request)).get("readOnly")
            if not isinstance(wanted, bool):
                raise Failed(f"readOnly must be true or false, not {wanted!r}")
            if wanted and not bookie.read_only and not bookie.config.readOnlyModeEnabled:
                return text(400, "Bookie is disabled ReadOnly mode, cannot transit to readOnly mode")
            if wanted != bookie.read_only_by_operator:
                await bookie.set_read_only_by_operator(wanted)
        elif request.method != "GET":
            return text(404, "Unsupported method. Should be GET or PUT method")
        return jackson({"readOnly": bookie.read_only})

    async def info(self, request: web.Request) -> web.Response:
        if request.method != "GET":
            return text(404, "Only GET is supported.")
        dirs = self.bookie.ledger_dirs
        free, total = await asyncio.to_thread(lambda: (dirs.free_space(), dirs.total_space()))
        return jackson({"freeSpace": free, "totalSpace": total})  # BookieInfoService.BookieInfo

    async def last_log_mark(self, request: web.Request) -> web.Response:
        """GetLastLogMarkService: per journal, the mark persisted by the last checkpoint (the highest of its lastMark
        files in the ledger directories), in a Java HashMap's order."""
        if request.method != "GET":
            return text(404, "Not found method. Should be GET method")
        config = self.bookie.config
        journals = len(config.journal_dirs)

        def marks() -> list[LogMark]:
            found = (highest_mark(config.ledger_dirs, mark_file(i, journals)) for i in range(journals))
            return [m or LogMark(0, 0) for m in found]

        return jackson(
            hash_map(
                (f"LastLogMark: Journal Id - {m.journal_id}({m.journal_id:x}.txn)", f"Pos - {m.offset}")
                for m in await asyncio.to_thread(marks)
            )
        )

    async def list_disk_file(self, request: web.Request) -> web.Response:
        """ListDiskFilesService: the names of the journal, entry log and index files (``file_type`` one kind),
        each followed by a tab, oldest first."""
        if request.method != "GET":
            return text(404, "Not found method. Should be GET method")
        kind = params(request).get("file_type")
        kinds = [kind] if kind in DISK_FILES else list(DISK_FILES)
        files = await asyncio.to_thread(lambda: [(DISK_FILES[k][0], self._files(*DISK_FILES[k][1:])) for k in kinds])
        return jackson(hash_map(files))

    def _files(self, keys: tuple[str, ...], extension: str) -> str:
        """BookieShell.listFilesAndSort: every ``*.extension`` under the first of ``keys`` configured, oldest first."""
        config = self.bookie.config
        directories = next(dirs for dirs in (config.dirs(k) for k in keys) if dirs)
        return "".join(f"{path.name}\t" for path in files_by_age(map(Path, directories), extension))

    # ---- garbage collection ----
    @started
    async def gc(self, request: web.Request) -> web.Response:
        """TriggerGCService. PUT: force a GC run; the body may say forceMajor/forceMinor (default: each unless it
        is suspended). GET: whether a forced run is in progress."""
        collectors = self.bookie.collectors
        if request.method == "PUT":
            asked_text = await request.text()
            suspended = collectors.state.suspended
            force = {"forceMajor": MAJOR not in suspended, "forceMinor": MINOR not in suspended}
            if asked_text.strip():
                try:
                    asked = json.loads(asked_text)
                except ValueError as exc:
                    return text(400, f"Failed to handle the request, exception: {exc}")
                for key in force:
                    if key in asked:
                        force[key] = str(asked[key]).lower() == "true"  # Boolean.parseBoolean(x.toString())
            collectors.trigger(force["forceMajor"], force["forceMinor"])
            return jackson(f"Triggered GC on BookieServer: {self.bookie.bookie_id}")
        if request.method == "GET":
            return jackson({"is_in_force_gc": str(collectors.forcing).lower()})
        return text(405, "Not allowed method. Should be PUT to trigger GC, Or GET to get Force GC state.")

    @started
    async def gc_details(self, request: web.Request) -> web.Response:
        """GCDetailsService: the ledger storage's getGarbageCollectionStatus, a GarbageCollectionStatus per collector
        (InterleavedLedgerStorage's one; DbLedgerStorage's one per ledger directory, in their order)."""
        if request.method != "GET":
            return text(
                404,
                "Only support GET method to retrieve GC details. If you want to trigger gc, send a "
                "POST to gc endpoint.",
            )
        return jackson([_gc_status(collector) for collector in self.bookie.collectors.collectors])

    def _server_name(self) -> str:
        """BookieServer.toString(), which the compaction answers quote."""
        return f"Bookie Server listening on {self.bookie.network.address} with id {self.bookie.bookie_id}"

    async def _compaction(self, request: web.Request, verb: str) -> web.Response:
        """SuspendCompactionService / ResumeCompactionService."""
        if request.method == "PUT":
            asked = await json_body(request)
            major, minor = asked.get(f"{verb}Major"), asked.get(f"{verb}Minor")
            if major is None and minor is None:
                return text(400, f"No {verb}Major or {verb}Minor params found")
            if not all(v is None or isinstance(v, bool) for v in (major, minor)):
                raise Failed(f"{verb}Major and {verb}Minor must be true or false")  # Java's (Boolean) cast
            output, name = "", self._server_name()
            if major:
                output = f"{verb.capitalize()} majorGC on BookieServer: {name}"
                self.bookie.collectors.suspend([MAJOR], verb == "suspend")
            if minor:
                output += f", {verb.capitalize()} minorGC on BookieServer: {name}"
                self.bookie.collectors.suspend([MINOR], verb == "suspend")
            return jackson(output)
        if request.method == "GET" and verb == "suspend":
            suspended = self.bookie.collectors.state.suspended
            return jackson(
                hash_map(
                    [
                        ("isMajorGcSuspended", str(MAJOR in suspended).lower()),
                        ("isMinorGcSuspended", str(MINOR in suspended).lower()),
                    ]
                )
            )
        return text(
            404, f"Not found method. Should be PUT to {verb} major or minor compaction, Or GET to get compaction state."
        )

    @started
    async def suspend_compaction(self, request: web.Request) -> web.Response:
        return await self._compaction(request, "suspend")

    @started
    async def resume_compaction(self, request: web.Request) -> web.Response:
        return await self._compaction(request, "resume")

    # ---- sanity ----
    @started
    async def sanity(self, request: web.Request) -> web.Response:
        """BookieSanityService: SanityTestCommand's write and read on this bookie. ``readOnly`` says whether the
        bookie is forced read-only (forceReadOnlyBookie), which ours never is."""
        if request.method != "GET":
            return text(404, "Only support GET method to retrieve bookie sanity state.")
        try:
            await asyncio.wait_for(self._sanity.acquire(), SANITY_QUEUE_WAIT)
        except TimeoutError:
            # BookKeeper means to answer so (it ignores tryAcquire's false and runs the tests side by side)
            return text(500, "Timing out due to max number of sanity request are running concurrently")
        try:
            # A bookie that is not writable fails at once: LocalBookieEnsemblePlacementPolicy has no ensemble for it
            passed = not self.bookie.read_only and await asyncio.wait_for(
                self.admin.run(sanity_test, self.bookie.bookie_id), SANITY_TIMEOUT
            )
        except TimeoutError:
            log.warning("bookie sanity test: not done within %g s", SANITY_TIMEOUT)
            passed = False
        finally:
            self._sanity.release()
        return jackson({"passed": passed, "readOnly": False})


def _gc_status(collector: GarbageCollector) -> dict[str, Any]:
    """GarbageCollectorThread.getGarbageCollectionStatus (ours has no entry location compaction: 0)."""
    state = collector.state
    values = (
        collector.forcing,
        state.compacting == MAJOR,
        state.compacting == MINOR,
        int(state.last_compaction.get(MAJOR, 0) * 1000),
        int(state.last_compaction.get(MINOR, 0) * 1000),
        0,
        state.counters[MAJOR],
        state.counters[MINOR],
        0,
    )
    return dict(zip(GC_STATUS_FIELDS, values, strict=True))


async def sanity_test(core: Any, bookie_id: str) -> bool:
    """SanityTestCommand, on the client's loop: a ledger on this bookie alone (E1 W1 A1, MAC, no password), ten
    entries ``entry-N``, closed, opened with recovery, its LAC and entries checked, then deleted."""
    writer = None
    try:
        writer = await core.create(1, 1, 1, DigestType.HMAC, b"", None, ensemble=[bookie_id])
        await asyncio.gather(*(writer.append(b"entry-%d" % i) for i in range(SANITY_ENTRIES)))
        md = await writer.close()
        if {b for s in md.segments for b in s.bookies} != {bookie_id}:  # the local placement replaces no bookie
            raise BKError(f"an ensemble change moved the ledger off {bookie_id}")
        reader = await core.open(writer.ledger_id, b"", recovery=True)
        if reader.lac != SANITY_ENTRIES - 1:
            raise BKError(f"Invalid last entry found on ledger. expecting: {SANITY_ENTRIES - 1} -- found: {reader.lac}")
        payloads = [e.payload for e in await reader.read(0, SANITY_ENTRIES - 1)]
        if payloads != [b"entry-%d" % i for i in range(SANITY_ENTRIES)]:
            raise BKError(f"Failed validation of received messages: {payloads}")
        log.info("bookie sanity test succeeded (ledger %d)", writer.ledger_id)
        return True
    except BKError as exc:
        log.warning("bookie sanity test failed: %s", exc)
        return False
    finally:
        if writer is not None:
            try:
                await core.delete(writer.ledger_id)
            except BKError as exc:
                log.info("bookie sanity test: ledger %d not deleted: %s", writer.ledger_id, exc)

"""Apache BookKeeper's HTTP admin API on our bookies (``httpServerEnabled``, ``httpServerPort``, ``httpServerHost``):
the paths, methods, bodies and status codes of BookKeeper 4.17.4's ``server/http/service/*.java``, written as its
``JsonUtil`` writes them (bookie.codec.jackson). Kubernetes probes use ``/heartbeat`` and ``/api/v1/bookie/is_ready``;
dashboards scrape ``/metrics``.

aiohttp serves it, on the bookie's event loop: a maintained HTTP server that keeps the event loop's model (one loop,
no thread per request), and whose handlers can await the bookie's own coroutines (read-only transitions).

Like BookKeeper's, the endpoints are unauthenticated: those that change the bookie (read-only, GC, compaction) are
as open as the address they listen on (``httpServerHost``; the sandbox binds 127.0.0.1). Where we differ:
``PUT /api/v1/config/server_config`` is refused (this bookie reads its configuration at start only; BookKeeper
stores the keys in memory, where most are never read again); values of keys naming a password, secret or token are
not shown; bodies carry a Content-Type (text/plain or application/json; BookKeeper's carry none but /metrics'); and
/heartbeat and is_ready answer from the moment the port is bound, before ZooKeeper and the journal replay (a Java
bookie opens its HTTP port once started).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import shutil

from aiohttp import web

from bookie.codec.jackson import hash_map, pretty
from bookie.server.stats import CONTENT_TYPE as PROMETHEUS_CONTENT_TYPE  # MetricsService's
from bookie.storage.checkpoint import read_last_mark
from bookie.storage.gc import MAJOR, MINOR

log = logging.getLogger(__name__)
SECRET_KEY = re.compile(r"password|secret|token", re.IGNORECASE)
STARTED_ONLY = ("/api/v1/bookie/gc", "/api/v1/bookie/state/readonly")  # they act on what start() makes
GC_STATUS_FIELDS = ("forceCompacting", "majorCompacting", "minorCompacting", "lastMajorCompactionTime",
                    "lastMinorCompactionTime", "lastEntryLocationCompactionTime", "majorCompactionCounter",
                    "minorCompactionCounter", "entryLocationCompactionCounter")  # GarbageCollectionStatus


def _text(status: int, body: str, content_type: str = "text/plain") -> web.Response:
    """BookKeeper's Vert.x server sends its bodies without a content type (but /metrics'); aiohttp always sends
    one (RFC 9110), so ours say what they are."""
    return web.Response(status=status, text=body, content_type=content_type)


def _json(value, status: int = 200) -> web.Response:
    return _text(status, pretty(value), "application/json")


class _Failed(Exception):
    """A handler's exception: BookKeeper's Vert.x handler answers it with ErrorHttpService, 500 and no body."""


async def _body(request: web.Request):
    text = await request.text()
    try:
        return json.loads(text)
    except ValueError:
        raise _Failed(f"not JSON: {text[:100]!r}") from None


class HttpAdmin:
    """The handlers, over a running :class:`bookie.server.bookie.BookieServer`."""

    def __init__(self, bookie):
        self.bookie = bookie
        self.runner: web.AppRunner | None = None
        app = web.Application(middlewares=[self._errors])
        for path, handler in {
            "/heartbeat": self.heartbeat,
            "/metrics": self.metrics,
            "/api/v1/config/server_config": self.server_config,
            "/api/v1/bookie/state": self.state,
            "/api/v1/bookie/state/readonly": self.readonly,
            "/api/v1/bookie/is_ready": self.is_ready,
            "/api/v1/bookie/info": self.info,
            "/api/v1/bookie/last_log_mark": self.last_log_mark,
            "/api/v1/bookie/gc": self.gc,
            "/api/v1/bookie/gc_details": self.gc_details,
            "/api/v1/bookie/gc/suspend_compaction": self.suspend_compaction,
            "/api/v1/bookie/gc/resume_compaction": self.resume_compaction,
        }.items():
            app.router.add_route("*", path, handler)
        self.app = app

    async def start(self, host: str, port: int) -> int:
        """Listen; return the port (``port`` 0 picks a free one)."""
        self.runner = web.AppRunner(self.app, access_log=None, handle_signals=False)
        await self.runner.setup()
        site = web.TCPSite(self.runner, host, port, reuse_address=True)
        await site.start()
        return site._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()

    @web.middleware
    async def _errors(self, request: web.Request, handler):
        if not self.bookie.running and request.path.startswith(STARTED_ONLY):
            return _text(503, "Bookie is not fully started yet")  # replaying, or waiting for ZooKeeper
        try:
            return await handler(request)
        except web.HTTPException:
            raise
        except Exception as exc:  # as BookKeeper: 500, empty body; the reason goes to the log, one line
            log.warning("HTTP %s %s failed: %s", request.method, request.path, exc)
            return _text(500, "")

    # ---- probes and metrics ----
    async def heartbeat(self, request: web.Request) -> web.Response:
        return _text(200, "OK\n")  # HeartbeatService: any method

    async def metrics(self, request: web.Request) -> web.Response:
        if request.method != "GET":
            return _text(403, f"{request.method} is forbidden. Should be GET method")
        return web.Response(body=self.bookie.stats.text().encode(), headers={"Content-Type": PROMETHEUS_CONTENT_TYPE})

    async def is_ready(self, request: web.Request) -> web.Response:
        if request.method != "GET":
            return _text(404, "Only support GET method check if bookie is ready.")
        if self.bookie.running and not self.bookie.shutting_down:
            return _text(200, "OK")
        return _text(503, "Bookie is not fully started yet")

    # ---- configuration ----
    async def server_config(self, request: web.Request) -> web.Response:
        if request.method == "GET":  # ConfigurationService: every key set, values as strings, in HashMap order
            shown = ((k, "******" if SECRET_KEY.search(k) else str(v))
                     for k, v in self.bookie.config.properties.items())
            return _json(hash_map(shown))
        if request.method == "PUT":
            return _text(403, "this bookie reads its configuration at start only: change bk_server.conf and restart "
                              "the bookie")
        return _text(404, "Request body not found. should contains k-v pairs")

    # ---- state ----
    def _state(self) -> dict:
        bookie = self.bookie
        return {"running": bookie.running, "readOnly": bookie.read_only, "shuttingDown": bookie.shutting_down,
                "availableForHighPriorityWrites": not bookie.read_only_by_disk}

    async def state(self, request: web.Request) -> web.Response:
        if request.method != "GET":
            return _text(404, "Only support GET method to retrieve bookie state.")
        return _json(self._state())

    async def readonly(self, request: web.Request) -> web.Response:
        bookie = self.bookie
        if request.method == "PUT":
            wanted = (await _body(request)).get("readOnly")
            if not isinstance(wanted, bool):
                raise _Failed(f"readOnly must be true or false, not {wanted!r}")
            if wanted and not bookie.read_only and not bookie.config.readOnlyModeEnabled:
                return _text(400, "Bookie is disabled ReadOnly mode, cannot transit to readOnly mode")
            if wanted != bookie.read_only_by_operator:
                await bookie.set_read_only_by_operator(wanted)
        elif request.method != "GET":
            return _text(404, "Unsupported method. Should be GET or PUT method")
        return _json({"readOnly": bookie.read_only})

    async def info(self, request: web.Request) -> web.Response:
        if request.method != "GET":
            return _text(404, "Only GET is supported.")
        usage = await asyncio.to_thread(shutil.disk_usage, self.bookie.config.ledger_dir)
        return _json({"freeSpace": usage.free, "totalSpace": usage.total})  # BookieInfoService.BookieInfo

    async def last_log_mark(self, request: web.Request) -> web.Response:
        """GetLastLogMarkService: the mark persisted by the last checkpoint (it reads the lastMark file)."""
        if request.method != "GET":
            return _text(404, "Not found method. Should be GET method")
        mark = await asyncio.to_thread(read_last_mark, self.bookie.config.ledger_dir)
        journal_id, offset = (mark.journal_id, mark.offset) if mark else (0, 0)
        return _json({f"LastLogMark: Journal Id - {journal_id}({journal_id:x}.txn)": f"Pos - {offset}"})

    # ---- garbage collection ----
    async def gc(self, request: web.Request) -> web.Response:
        """TriggerGCService. PUT: force a GC run; the body may say forceMajor/forceMinor (default: each unless it
        is suspended). GET: whether a forced run is in progress."""
        collector = self.bookie.collector
        if request.method == "PUT":
            text = await request.text()
            suspended = collector.state.suspended
            force = {"forceMajor": MAJOR not in suspended, "forceMinor": MINOR not in suspended}
            if text.strip():
                try:
                    asked = json.loads(text)
                except ValueError as exc:
                    return _text(400, f"Failed to handle the request, exception: {exc}")
                for key in force:
                    if key in asked:
                        force[key] = str(asked[key]).lower() == "true"  # Boolean.parseBoolean(x.toString())
            collector.trigger(force["forceMajor"], force["forceMinor"])
            return _json(f"Triggered GC on BookieServer: {self.bookie.bookie_id}")
        if request.method == "GET":
            return _json({"is_in_force_gc": str(collector.forcing).lower()})
        return _text(405, "Not allowed method. Should be PUT to trigger GC, Or GET to get Force GC state.")

    async def gc_details(self, request: web.Request) -> web.Response:
        if request.method != "GET":
            return _text(404, "Only support GET method to retrieve GC details. If you want to trigger gc, send a "
                              "POST to gc endpoint.")
        state = self.bookie.collector.state
        values = (self.bookie.collector.forcing, state.compacting == MAJOR, state.compacting == MINOR,
                  int(state.last_compaction.get(MAJOR, 0) * 1000), int(state.last_compaction.get(MINOR, 0) * 1000), 0,
                  state.counters[MAJOR], state.counters[MINOR], 0)
        return _json([dict(zip(GC_STATUS_FIELDS, values))])  # one ledger directory: one status

    def _server_name(self) -> str:
        """BookieServer.toString(), which the compaction answers quote."""
        config = self.bookie.config
        address = f"{config.advertisedAddress or config.listeningInterface}:{config.bookiePort}"
        return f"Bookie Server listening on {address} with id {self.bookie.bookie_id}"

    async def _compaction(self, request: web.Request, verb: str) -> web.Response:
        """SuspendCompactionService / ResumeCompactionService."""
        if request.method == "PUT":
            asked = await _body(request)
            major, minor = asked.get(f"{verb}Major"), asked.get(f"{verb}Minor")
            if major is None and minor is None:
                return _text(400, f"No {verb}Major or {verb}Minor params found")
            if not all(v is None or isinstance(v, bool) for v in (major, minor)):
                raise _Failed(f"{verb}Major and {verb}Minor must be true or false")  # Java's (Boolean) cast
            output, name = "", self._server_name()
            if major:
                output = f"{verb.capitalize()} majorGC on BookieServer: {name}"
                self.bookie.collector.suspend([MAJOR], verb == "suspend")
            if minor:
                output += f", {verb.capitalize()} minorGC on BookieServer: {name}"
                self.bookie.collector.suspend([MINOR], verb == "suspend")
            return _json(output)
        if request.method == "GET" and verb == "suspend":
            suspended = self.bookie.collector.state.suspended
            return _json(hash_map([("isMajorGcSuspended", str(MAJOR in suspended).lower()),
                                   ("isMinorGcSuspended", str(MINOR in suspended).lower())]))
        return _text(404, f"Not found method. Should be PUT to {verb} major or minor compaction, Or GET to get "
                          "compaction state.")

    async def suspend_compaction(self, request: web.Request) -> web.Response:
        return await self._compaction(request, "suspend")

    async def resume_compaction(self, request: web.Request) -> web.Response:
        return await self._compaction(request, "resume")

"""Run a scripted workload against one bookie on a lossy disk, then check every crash point it went through.

A crash point ``k`` is the disk as it is after its ``k``-th sync (0: before any), the state a power cut anywhere
between sync ``k`` and sync ``k + 1`` leaves. For each one the disk is laid out as a plain directory at the same
path (the cookie names the directories), the same bookie (id, port, configuration, ZooKeeper) starts on it, and
every entry whose acknowledgement the client had received before sync ``k + 1`` completed must read back with its
exact bytes. A bookie that refuses to start is a failure when any entry was acknowledged by then, and an accepted
refusal (with its reason recorded) when none was.

ZooKeeper is not cut: it holds the state of the end of the run. Two things in it are put back as they were at the
crash point: the bookie's cookie (written at its first start, deleted by a format) and its registration (a killed
bookie's ephemeral node is deleted at once instead of waiting for its session to expire). Deleted ledgers are not
checked at any point: their metadata is gone.
"""

from __future__ import annotations

import hashlib
import shutil
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from faults.lossyfs.model import Sync, materialize
from faults.lossyfs.mount import LossyMount

from bookie.client.bookie_client import EFENCED
from bookie.errors import BKError, NoSuchEntry, NoSuchLedger
from bookie.local.bookies import LocalBookie, wait_registered
from bookie.local.process import tail
from bookie.meta.layout import init_cluster
from bookie.meta.store import MetadataStore
from bookie.meta.uri import parse_service_uri

_T = TypeVar("_T")
PASSWORD = b"crashpoints"
STORAGES = ("interleaved", "db")
DB_STORAGE = "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage"
START_TIMEOUT = 60.0


def payload(seed: str, ledger_id: int, entry_id: int, size: int) -> bytes:
    digest = hashlib.blake2b(f"{seed}/{ledger_id}/{entry_id}".encode(), digest_size=16).digest()
    return (digest * (size // 16 + 1))[:size]


@dataclass
class Ack:
    ledger_id: int
    entry_id: int
    at: float  # time.monotonic() in the client when the acknowledgement arrived


@dataclass
class Recording:
    """What a workload run left: the acknowledgements, the sizes, the ledgers deleted, the syncs, and the events
    (name, time.monotonic()) that show which part of the workload each sync belongs to."""

    seed: str
    acks: list[Ack] = field(default_factory=list)
    sizes: dict[int, int] = field(default_factory=dict)  # ledger -> entry size
    next_entry: dict[int, int] = field(default_factory=dict)  # ledger -> the id its next add gets
    deleted: set[int] = field(default_factory=set)
    events: list[tuple[str, float]] = field(default_factory=list)
    syncs: list[Sync] = field(default_factory=list)
    first: int = 0  # the first crash point checked
    # ZooKeeper's cookie of the bookie over time, where a workload changes it: (from time.monotonic(), its bytes or
    # None for none); empty: left as it is
    cookie: list[tuple[float, bytes | None]] = field(default_factory=list)
    forgotten: dict[int, float] = field(default_factory=dict)  # ledger -> when its bookie was formatted
    fenced: dict[int, float] = field(default_factory=dict)  # ledger -> when a recovery open that fenced it returned

    def cookie_at(self, before: float) -> bytes | None:
        """The cookie in ZooKeeper when the power went just before ``before``."""
        return next((data for at, data in reversed(self.cookie) if at < before), None)

    def phase(self, sync: Sync | None) -> str:
        """The step of the workload that made ``sync``: the last event before it completed."""
        at = sync.at if sync is not None else float("-inf")
        return next((name for name, when in reversed(self.events) if when <= at), "")

    def expected(self, before: float) -> dict[int, int]:
        """ledger -> the last entry acknowledged before ``before`` (entries 0..it were all acknowledged)."""
        last: dict[int, int] = {}
        for ack in self.acks:
            if (
                ack.at < before
                and ack.ledger_id not in self.deleted
                and self.forgotten.get(ack.ledger_id, before) >= before
            ):
                last[ack.ledger_id] = max(last.get(ack.ledger_id, -1), ack.entry_id)
        return last


@dataclass
class Point:
    """The check of one crash point."""

    number: int
    sync: Sync | None  # the sync that made this state (None: the state before any sync)
    acknowledged: int  # entries acknowledged before the next sync completed
    read_back: int = 0
    lost: list[str] = field(default_factory=list)  # what did not read back, one line per ledger
    refused: str | None = None  # why the bookie did not start
    seconds: float = 0.0
    phase: str = ""  # the step of the workload the sync belongs to (the last one begun before it)

    @property
    def failed(self) -> bool:
        return bool(self.lost) or (self.refused is not None and self.acknowledged > 0)

    def describe(self) -> str:
        where = (
            "before any sync" if self.sync is None else f"after sync {self.number} ({self.sync.op} {self.sync.path})"
        )
        if self.phase:
            where += f" during {self.phase}"
        if self.refused is not None:
            verdict = f"start refused with {self.acknowledged} entries acknowledged: {self.refused}"
        else:
            verdict = "; ".join(self.lost)
        return f"crash point {self.number} {where}: {verdict}"


@dataclass
class Case:
    """One workload on one storage: its crash points and what each showed."""

    workload: str
    storage: str
    points: list[Point] = field(default_factory=list)
    acknowledged: int = 0  # entries acknowledged in the whole run
    run_seconds: float = 0.0
    check_seconds: float = 0.0
    error: str | None = None  # the workload itself failed (not a crash point)
    directory: Path | None = None

    @property
    def failures(self) -> list[Point]:
        return [p for p in self.points if p.failed]

    @property
    def refusals(self) -> list[Point]:
        """Starts refused with nothing acknowledged: allowed, with their reasons."""
        return [p for p in self.points if p.refused is not None and not p.failed]

    @property
    def ok(self) -> bool:
        return self.error is None and not self.failures


@dataclass
class SweepResult:
    cases: list[Case] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def crash_points(self) -> int:
        return sum(len(c.points) for c in self.cases)

    @property
    def acknowledged(self) -> int:
        """Acknowledged entries checked, summed over the crash points (an entry is checked at every point after its
        acknowledgement)."""
        return sum(p.acknowledged for c in self.cases for p in c.points)

    @property
    def read_back(self) -> int:
        return sum(p.read_back for c in self.cases for p in c.points)

    @property
    def lost(self) -> int:
        return self.acknowledged - self.read_back

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.cases)

    def render(self) -> str:
        lines = [f"{'workload':<16} {'storage':<12} {'points':>6} {'acked':>6} {'run s':>6} {'check s':>8}  result"]
        for c in self.cases:
            result = "ok" if c.ok else (c.error or f"{len(c.failures)} crash points failed")
            if c.ok and c.refusals:
                result += f" ({len(c.refusals)} refused starts, nothing acknowledged)"
            lines.append(
                f"{c.workload:<16} {c.storage:<12} {len(c.points):>6} {c.acknowledged:>6} "
                f"{c.run_seconds:>6.1f} {c.check_seconds:>8.1f}  {result}"
            )
        for c in self.cases:
            for p in c.failures:
                lines.append(f"FAILED {c.workload}/{c.storage} {p.describe()}")
            for p in c.refusals:
                lines.append(f"refused {c.workload}/{c.storage} {p.describe()}")
        checks = [p.seconds for c in self.cases for p in c.points]
        per_check = sum(checks) / len(checks) if checks else 0.0
        lines += [
            f"crash points checked: {self.crash_points} ({per_check:.2f} s each, {self.seconds:.0f} s in all)",
            f"entries acknowledged before a crash point, summed over them: {self.acknowledged}, "
            f"read back: {self.read_back}",
            f"entries lost at crash points (missing, other bytes, or the start refused): {self.lost}",
        ]
        return "\n".join(lines)


# ---- one run ----
class Session:
    """What a workload script uses: the client, the bookie, the disk, and the recording."""

    def __init__(self, bk, bookie: LocalBookie, mount: LossyMount, recording: Recording, store: MetadataStore):
        self.bk, self.bookie, self.mount, self.recording, self.store = bk, bookie, mount, recording, store
        self.password = PASSWORD

    def event(self, name: str) -> None:
        self.recording.events.append((name, time.monotonic()))

    def ledger(self, size: int = 100):
        """A new ledger on this bookie alone (E1 W1 A1), its entries ``size`` bytes."""
        handle = self.bk.create_ledger(1, 1, 1, password=PASSWORD)
        self.recording.sizes[handle.ledger_id] = size
        return handle

    def add(self, handles: list, count: int, rounds: int = 1) -> None:
        """``rounds`` times: ``count`` entries to each ledger, pipelined, all ledgers at once (concurrent writers,
        whose adds the journal commits in groups), then wait for their acknowledgements. The time of each
        acknowledgement is taken in the client's loop as it completes."""
        recording = self.recording
        self.event(f"adds ({rounds} x {count} to {len(handles)} ledgers)")
        for _ in range(rounds):
            futures: list[tuple[Future, int, int]] = []
            for handle in handles:
                lid, size = handle.ledger_id, recording.sizes[handle.ledger_id]
                for _ in range(count):
                    entry_id = recording.next_entry.get(lid, 0)
                    recording.next_entry[lid] = entry_id + 1
                    future = handle.add_entry_async(payload(recording.seed, lid, entry_id, size))
                    future.add_done_callback(
                        lambda f, lid=lid, eid=entry_id: (
                            f.exception() is None and recording.acks.append(Ack(lid, eid, time.monotonic()))
                        )
                    )
                    futures.append((future, lid, entry_id))
            for future, lid, entry_id in futures:
                if (got := future.result(timeout=60)) != entry_id:
                    raise AssertionError(f"ledger {lid}: the add of entry {entry_id} completed as entry {got}")

    def wait_for_sync(self, fragment: str, timeout: float = 20.0) -> Sync:
        """Wait for the next sync of a path containing ``fragment`` (a checkpoint writes ``lastMark``)."""
        seen = self.mount.sync_count()
        self.event("checkpoint" if fragment == "lastMark" else f"waiting for a sync of {fragment}")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for sync in self.mount.syncs(seen):
                if fragment in sync.path:
                    return sync
            time.sleep(0.05)
        raise TimeoutError(f"no sync of a path containing {fragment!r} within {timeout:g} s")

    def fence(self, handle) -> None:
        """Open the ledger with recovery: the bookie fences it (no more adds from its writer) and it is closed."""
        self.event(f"recovery open of ledger {handle.ledger_id} (fence)")
        self.bk.open_ledger(handle.ledger_id, PASSWORD, recovery=True)
        self.recording.fenced[handle.ledger_id] = time.monotonic()

    def stop(self) -> None:
        """Stop the bookie cleanly (SIGTERM: it checkpoints and unregisters)."""
        self.event("clean stop")
        self.bookie.stop()

    def start(self) -> None:
        self.event("the bookie's start")
        self.bookie.start()
        wait_registered(self.store, [self.bookie], START_TIMEOUT)

    def format(self, ledgers: list) -> None:
        """``bkctl bookie format --delete-cookie`` on the stopped bookie: its data and cookie go by design, so
        ``ledgers`` are not checked at crash points after the format began."""
        import subprocess
        import sys

        self.event("bkctl bookie format --delete-cookie")
        began = time.monotonic()
        recording = self.recording
        if not recording.cookie:
            current = _cookie(self.store, self.bookie.bookie_id)
            recording.cookie.append((float("-inf"), current[0] if current else None))
        for handle in ledgers:
            recording.forgotten[handle.ledger_id] = began
        command = [sys.executable, "-m", "bkctl", "-c", str(self.bookie.conf_path), "bookie", "format"]
        done = subprocess.run([*command, "--delete-cookie", "--yes"], capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"bkctl bookie format failed: {done.stderr.strip().splitlines()[-3:]}")
        recording.cookie.append((time.monotonic(), None))  # deleted last, once the directories are emptied

    def cookie_written(self) -> None:
        """Note when the bookie's (new) cookie reached ZooKeeper, after a start that wrote one."""
        if (cookie := _cookie(self.store, self.bookie.bookie_id)) is not None:
            self.recording.cookie.append((cookie[1], cookie[0]))

    def delete(self, handle) -> None:
        self.recording.deleted.add(handle.ledger_id)
        self.event(f"deletion of ledger {handle.ledger_id}")
        self.bk.delete_ledger(handle.ledger_id)

    def gc(self, major: bool = False, minor: bool = False, timeout: float = 30.0):
        """Force a garbage collection run and wait until it ended; returns its run."""
        from bookie.client.admin_client import admin_client
        from bookie.meta.registration import BookieRegistry

        registered = BookieRegistry(self.store).get(self.bookie.bookie_id)
        with admin_client(registered, "gc") as admin:
            self.event(f"forced GC (major {major}, minor {minor})")
            run_id = admin.trigger_gc(major, minor).run_id or 0
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                last = admin.gc_status().last_run
                if last is not None and (last.run_id or 0) >= run_id:
                    if last.error:
                        raise RuntimeError(f"the forced GC failed: {last.error}")
                    self.event(
                        f"after GC run {last.run_id} ({last.kind or 'no'} compaction, {last.logs_deleted} logs "
                        f"deleted, {last.logs_compacted} compacted)"
                    )
                    return last
                time.sleep(0.05)
        raise TimeoutError(f"the forced GC did not end within {timeout:g} s")


@dataclass(frozen=True)
class Workload:
    """A short scripted workload. ``settings(storage, disk)`` are its bookie settings beyond the directories;
    ``fresh``: its run begins with the bookie's first start on empty directories (else the bookie was started once
    and stopped cleanly before). ``count_start``: the syncs of that start are crash points too (else the crash points
    begin once the bookie registered: every workload's start is the same, and ``first-start`` and ``group-commit``
    cover it on each storage)."""

    name: str
    script: Callable[[Session], None]
    about: str
    storages: tuple[str, ...] = STORAGES
    settings: Callable[[str, Path], dict[str, str]] = lambda storage, disk: {}
    fresh: bool = False
    count_start: bool = False


def bookie_settings(workload: Workload, storage: str, disk: Path) -> dict[str, str]:
    settings = {
        "journalDirectories": str(disk / "journal"),
        "ledgerDirectories": str(disk / "ledgers"),
        "journalPreAllocSizeMB": "1",  # each sync snapshots the journal file: 1 MB copies, not 16 MB ones
        "flushInterval": "60000",  # checkpoints only where a workload waits for one
        "gcWaitTime": "600000",  # GC only when a workload forces it
    }
    if storage == "db":
        settings.update(
            ledgerStorageClass=DB_STORAGE, dbStorage_writeCacheMaxSizeMb="16", dbStorage_readAheadCacheMaxSizeMb="16"
        )
    settings.update(workload.settings(storage, disk))
    return settings


def _drop_registration(store: MetadataStore, bookie_id: str) -> None:
    """A killed bookie's ephemeral node would stay until its session expires (zkTimeout) and hold the next start
    that long: a dead process's node, deleted."""
    from kazoo.exceptions import NoNodeError

    for path in (store.path("available", bookie_id), store.path("available", "readonly", bookie_id)):
        try:
            store.zk.delete(path)
        except NoNodeError:
            pass


def _clear(directory: Path) -> None:
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)


def run_case(
    workload: Workload, storage: str, directory: Path, zk_address: str, progress: Callable[[str], None]
) -> Case:
    """Run ``workload`` on ``storage`` over a lossy disk, then check each of its crash points."""
    from bookie.client import BookKeeper

    case = Case(workload.name, storage, directory=directory)
    started = time.monotonic()
    _clear(directory)  # a kept directory of an earlier sweep
    disk, store_dir, snapshots = directory / "disk", directory / "store", directory / "snapshots"
    uri = f"zk+hierarchical://{zk_address}/crashpoints-{workload.name}-{storage}-{uuid.uuid4().hex[:6]}/ledgers"
    recording = Recording(seed=uuid.uuid4().hex[:8])
    with MetadataStore(parse_service_uri(uri)) as store:
        init_cluster(store)
        bookie = LocalBookie.create(1, directory / "bookie", uri, bookie_settings(workload, storage, disk))
        mount: LossyMount | None = None
        try:
            if not workload.fresh:  # the first start, stopped cleanly, everything synced
                mount = LossyMount(store_dir, disk)
                mount.mount()
                bookie.start()
                wait_registered(store, [bookie], START_TIMEOUT)
                bookie.stop()
                mount.unmount()
            mount = LossyMount(store_dir, disk, snapshots=snapshots)
            mount.mount()
            recording.events.append(("the bookie's start", time.monotonic()))
            bookie.start()
            wait_registered(store, [bookie], START_TIMEOUT)
            if not (workload.fresh or workload.count_start):
                recording.first = mount.sync_count()
            with BookKeeper(store=store) as bk:
                workload.script(Session(bk, bookie, mount, recording, store))
            recording.events.append(("kill -9", time.monotonic()))
            bookie.stop(kill=True)
            recording.syncs = mount.syncs()
        except Exception as exc:  # noqa: BLE001 - the workload failed: reported, its crash points still checked
            case.error = f"the workload failed: {type(exc).__name__}: {exc}".splitlines()[0]
            progress(f"{workload.name}/{storage}: {case.error}\n{tail(bookie.log_path, 5)}")
            bookie.stop(kill=True)
            if mount is not None and mount.process is not None and not recording.syncs:
                recording.syncs = mount.syncs()
        finally:
            bookie.stop(kill=True)
            if mount is not None and mount.process is not None and mount.process.poll() is None:
                mount.cut()  # nothing to lose: the bookie is dead, its disk already snapshotted after each sync
            elif mount is not None:
                mount.unmount()  # a mount whose process died: only the kernel's side is left to undo
            _drop_registration(store, bookie.bookie_id)
        # A sync that completed while the killed bookie's last request drained: a crash point after every ack.
        taken = len([p for p in snapshots.iterdir() if p.name.isdigit()]) if snapshots.exists() else 0
        for number in range(len(recording.syncs) + 1, taken):
            recording.syncs.append(Sync(number, "?", "(after the kill)", float("inf")))
        case.acknowledged = len([a for a in recording.acks if a.ledger_id not in recording.deleted])
        case.run_seconds = time.monotonic() - started
        if workload.fresh and (cookie := _cookie(store, bookie.bookie_id)) is not None:
            recording.cookie = [(float("-inf"), None), (cookie[1], cookie[0])]
        checked = time.monotonic()
        try:
            check_points(case, bookie, disk, snapshots, recording, store, progress)
        finally:
            bookie.stop(kill=True)
            _drop_registration(store, bookie.bookie_id)
        case.check_seconds = time.monotonic() - checked
    return case


def _cookie(store: MetadataStore, bookie_id: str) -> tuple[bytes, float] | None:
    """The bookie's cookie in ZooKeeper and when it was created, as a time.monotonic() of this machine."""
    from kazoo.exceptions import NoNodeError

    try:
        data, stat = store.zk.get(store.path("cookies", bookie_id))
    except NoNodeError:
        return None
    return data, stat.ctime / 1000 - (time.time() - time.monotonic())


def _set_cookie(store: MetadataStore, bookie_id: str, cookie: bytes | None) -> None:
    """ZooKeeper's cookie of the bookie as it was at a crash point (None: not written yet)."""
    from kazoo.exceptions import NoNodeError

    path = store.path("cookies", bookie_id)
    try:
        store.zk.delete(path)
    except NoNodeError:
        pass
    if cookie is not None:
        store.zk.create(path, cookie, makepath=True)


def check_points(
    case: Case,
    bookie: LocalBookie,
    disk: Path,
    snapshots: Path,
    recording: Recording,
    store: MetadataStore,
    progress: Callable[[str], None],
) -> None:
    from bookie.client import BookKeeper, ClientConfig

    syncs = recording.syncs
    with BookKeeper(store=store, config=ClientConfig(read_entry_timeout=5.0)) as bk:
        for number in range(recording.first, len(syncs) + 1):
            began = time.monotonic()
            before = syncs[number].at if number < len(syncs) else float("inf")
            expected = recording.expected(before)
            sync = syncs[number - 1] if number else None
            point = Point(number, sync, sum(n + 1 for n in expected.values()), phase=recording.phase(sync))
            _clear(disk)
            materialize(snapshots / str(number), disk)
            if recording.cookie:
                _set_cookie(store, bookie.bookie_id, recording.cookie_at(before))
            with open(bookie.log_path, "a") as log:
                log.write(f"==== crash point {number} ====\n")
            bookie.start()
            try:
                wait_registered(store, [bookie], START_TIMEOUT)
            except BKError as exc:
                point.refused = _reason(bookie, exc)
            else:
                for ledger_id, last in sorted(expected.items()):
                    point.read_back += _read_back(bk, recording, ledger_id, last, point.lost)
                for ledger_id, at in sorted(recording.fenced.items()):
                    if at < before and (status := _add_status(bk, bookie.bookie_id, ledger_id)) != EFENCED:
                        point.lost.append(f"ledger {ledger_id}: the fence is gone (a writer's add got status {status})")
            finally:
                bookie.stop(kill=True)
                _drop_registration(store, bookie.bookie_id)
            point.seconds = time.monotonic() - began
            case.points.append(point)
            if point.failed:
                progress(f"{case.workload}/{case.storage}: {point.describe()}")
    progress(f"{case.workload}/{case.storage}: {len(case.points)} crash points, {len(case.failures)} failed")


def _reason(bookie: LocalBookie, exc: Exception) -> str:
    """Why the bookie did not start: the last error line its log has since this crash point's start."""
    lines = bookie.log_path.read_text(errors="replace").split("==== crash point")[-1].splitlines()[1:]
    errors = [line for line in lines if "error" in line.lower() or "refus" in line.lower()]
    return (errors[-1] if errors else str(exc).splitlines()[0]).strip()[:400]


def _read_back(bk, recording: Recording, ledger_id: int, last: int, lost: list[str]) -> int:
    """Read entries 0..last of a ledger from the bookie; returns how many came back exact, noting the others. A read
    that fails otherwise than "no such entry/ledger" (a timeout on a busy machine) is tried again before it counts."""
    seed, size = recording.seed, recording.sizes[ledger_id]
    entries: dict[int, bytes] = {}
    errors: dict[int, str] = {}
    try:
        handle = _retried(lambda: bk.open_ledger(ledger_id, PASSWORD, recovery=False))
    except BKError as exc:
        lost.append(f"ledger {ledger_id}: 0..{last} unreadable, the open failed: {type(exc).__name__}: {exc}")
        return 0
    try:
        entries = {e.entry_id: e.payload for e in handle.read(0, last)}
    except BKError:
        pass
    if len(entries) <= last:  # which ones: entry by entry
        for entry_id in range(last + 1):
            if entry_id in entries:
                continue
            try:
                entries[entry_id] = _retried(lambda e=entry_id: handle.read(e, e)[0].payload)
            except (NoSuchLedger, NoSuchEntry):
                pass
            except BKError as exc:  # the bookie does not answer: the rest is not read either
                errors.update(dict.fromkeys(range(entry_id, last + 1), f"{type(exc).__name__}: {exc}"))
                break
    good = [e for e in range(last + 1) if entries.get(e) == payload(seed, ledger_id, e, size)]
    if len(good) <= last:
        bad = sorted(set(range(last + 1)) - set(good))
        missing = [e for e in bad if e not in entries and e not in errors]
        wrong = [e for e in bad if e in entries]
        failed = [e for e in bad if e in errors and e not in entries]
        parts = [f"{_ranges(missing)} missing"] if missing else []
        parts += [f"{_ranges(wrong)} with other bytes"] if wrong else []
        parts += [f"{_ranges(failed)} unreadable ({errors[failed[0]]})"] if failed else []
        lost.append(f"ledger {ledger_id}: {len(bad)} of entries 0..{last} lost ({'; '.join(parts)})")
    return len(good)


def _add_status(bk, bookie_id: str, ledger_id: int) -> int:
    """The status of an add to a ledger, as its writer would send it: EFENCED for a fenced ledger."""
    import asyncio

    from bookie.client.bookie_client import EntryToken
    from bookie.codec.digest import Digester, DigestType, master_key
    from bookie.codec.entry import frame_entry
    from bookie.codec.records import pack_record

    async def add() -> int:
        answered: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Target:
            def added(self, token, index, status, bookie) -> None:
                if not answered.done():
                    answered.set_result(status)

        entry_id = 1 << 20  # beyond any entry of the workloads
        framed = frame_entry(Digester(DigestType.CRC32), ledger_id, entry_id, -1, 0, b"after the fence")
        client = bk.core.bookie(bookie_id)
        client.add(ledger_id, master_key(PASSWORD), False, pack_record(framed), Target(), EntryToken(entry_id), 0)
        return await asyncio.wait_for(answered, 10.0)

    return bk.run(add())


def _retried(read: Callable[[], _T], attempts: int = 3) -> _T:
    for attempt in range(attempts):
        try:
            return read()
        except (NoSuchLedger, NoSuchEntry):
            raise
        except BKError:
            if attempt == attempts - 1:
                raise
            time.sleep(1.0)
    raise AssertionError("unreachable")


def _ranges(ids: list[int]) -> str:
    """[1, 2, 3, 7] -> "1..3, 7"."""
    out: list[str] = []
    for i in ids:
        if out and out[-1].split("..")[-1] == str(i - 1):
            out[-1] = f"{out[-1].split('..')[0]}..{i}"
        else:
            out.append(str(i))
    return ", ".join(out) or "none"


def sweep(
    workloads: list[Workload],
    storages: tuple[str, ...] = STORAGES,
    directory: Path | None = None,
    progress: Callable[[str], None] = print,
    zk_address: str | None = None,
    jobs: int = 3,
    only: set[tuple[str, str]] | None = None,
) -> SweepResult:
    """Every crash point of each workload on each storage (those it applies to). ``directory`` keeps each case's
    disk, snapshots and bookie log (a temporary directory, removed, when None). ``zk_address``: a running
    ZooKeeper to use (else one is started here and stopped at the end). ``jobs`` cases run at once. ``only``: these
    (workload, storage) cases, not every pair."""
    import tempfile

    from bookie.local.process import free_port, stop_process_group
    from bookie.local.zookeeper import EmbeddedZooKeeper

    began = time.monotonic()
    keep = directory is not None
    root = Path(directory) if keep else Path(tempfile.mkdtemp(prefix="bkctl-crashpoints-"))
    result = SweepResult()
    zk_pid = None
    try:
        if zk_address is None:
            zk = EmbeddedZooKeeper(root / "zookeeper", free_port())
            zk_pid = zk.start()
            zk_address = zk.address
        todo = [
            (w, s) for w in workloads for s in storages if s in w.storages and (only is None or (w.name, s) in only)
        ]
        with ThreadPoolExecutor(jobs) as pool:  # cases are independent: their own bookie, disk and cluster root
            futures = [pool.submit(run_case, w, s, root / f"{w.name}-{s}", zk_address, progress) for w, s in todo]
            result.cases = [f.result() for f in futures]
    finally:
        if zk_pid is not None:
            stop_process_group(zk_pid, kill=True)
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    result.seconds = time.monotonic() - began
    return result

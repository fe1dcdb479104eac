"""The view of a bookie's storage that ``bkctl bookie usage`` explains (bookie/storage/usage.py makes it, from a running
bookie of ours or from a bookie's directories; admin/usage/ explains it), and its form on the wire: our admin
service's ``StorageUsageResponse`` (proto/bookie_admin.proto). Pure data, so that the admin client can hand it over
without knowing the storage."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bookie._proto import bookie_admin_pb2 as pb

KINDS = ("journal", "entryLogs", "index", "other")  # bytes on a bookie's disks, by what holds them


@dataclass
class LogView:
    """One entry log."""

    log_id: int
    directory: str  # the ledger directory holding it
    size: int  # bytes of the file (a running bookie's current log: appended so far, its write buffer's too)
    ledgers: dict[int, int]  # ledgerId -> bytes of its entries in the log, every ledger the log holds (dead or not)
    active: bool = False  # the log being written (the current one): never compacted while it is
    modified: float = 0.0  # the file's mtime, epoch seconds
    stalled: str = ""  # why its last compaction failed or made no progress (empty: it did not)


@dataclass
class DirView:
    """One directory of the bookie and the filesystem under it."""

    path: str
    kind: str  # "journal", "ledger" or "index"
    bytes: dict[str, int]  # of KINDS: what the files under it hold
    disk_size: int
    disk_free: int
    writable: bool = True  # under diskUsageThreshold (a running bookie's disk checker; offline: assumed)


@dataclass
class GcView:
    """The bookie's garbage collection settings and state (offline: its configuration's, nothing running)."""

    minor_threshold: float
    major_threshold: float
    minor_interval_s: float
    major_interval_s: float
    gc_wait_ms: int
    overreplicated_wait_ms: int
    suspended: list[str] = field(default_factory=list)  # "major", "minor"
    last_compaction: dict[str, float] = field(default_factory=dict)  # kind -> epoch seconds
    next_run: float | None = None  # epoch seconds of the next scheduled run (None: not running)


@dataclass(frozen=True)
class EntryRange:
    """Entries ``first..last`` of one ledger, all in entry log ``log_id``."""

    first: int
    last: int
    log_id: int


@dataclass
class StorageView:
    """One bookie's storage as it states it."""

    bookie_id: str | None  # None: read offline with no cookie naming it
    storage: str  # "interleaved" or "db"
    source: str  # "admin" (a running bookie of ours) or "offline"
    dirs: list[DirView]
    logs: list[LogView]  # every entry log, the active one included
    local_ledgers: dict[int, int]  # ledgerId -> entries its index holds (-1: present, count unknown)
    gc: GcView
    read_only: bool = False
    ledger_ranges: list[EntryRange] = field(default_factory=list)  # where the ledger asked about is (--ledger L)


def to_message(view: StorageView) -> pb.StorageUsageResponse:
    message = pb.StorageUsageResponse(
        storage=view.storage,
        source=view.source,
        dirs=[
            pb.StorageDirView(
                path=d.path, kind=d.kind, bytes=d.bytes, diskSize=d.disk_size, diskFree=d.disk_free, writable=d.writable
            )
            for d in view.dirs
        ],
        logs=[
            pb.EntryLogView(
                logId=log.log_id,
                directory=log.directory,
                size=log.size,
                ledgers=log.ledgers,
                active=log.active,
                modified=log.modified,
                stalled=log.stalled,
            )
            for log in view.logs
        ],
        localLedgers=view.local_ledgers,
        gc=pb.GcSettings(
            minorThreshold=view.gc.minor_threshold,
            majorThreshold=view.gc.major_threshold,
            minorIntervalS=view.gc.minor_interval_s,
            majorIntervalS=view.gc.major_interval_s,
            gcWaitMs=view.gc.gc_wait_ms,
            overreplicatedWaitMs=view.gc.overreplicated_wait_ms,
            suspended=view.gc.suspended,
            lastCompaction=view.gc.last_compaction,
        ),
        readOnly=view.read_only,
        ledgerRanges=[pb.EntryRange(firstEntry=r.first, lastEntry=r.last, logId=r.log_id) for r in view.ledger_ranges],
    )
    if view.bookie_id is not None:
        message.bookieId = view.bookie_id
    if view.gc.next_run is not None:
        message.gc.nextRun = view.gc.next_run
    return message


def from_message(message: Any) -> StorageView:  # a StorageUsageResponse (generated code is not typed)
    gc = message.gc
    return StorageView(
        bookie_id=message.bookieId if message.HasField("bookieId") else None,
        storage=message.storage,
        source=message.source,
        dirs=[DirView(d.path, d.kind, dict(d.bytes), d.diskSize, d.diskFree, d.writable) for d in message.dirs],
        logs=[
            LogView(log.logId, log.directory, log.size, dict(log.ledgers), log.active, log.modified, log.stalled)
            for log in message.logs
        ],
        local_ledgers=dict(message.localLedgers),
        gc=GcView(
            gc.minorThreshold,
            gc.majorThreshold,
            gc.minorIntervalS,
            gc.majorIntervalS,
            gc.gcWaitMs,
            gc.overreplicatedWaitMs,
            list(gc.suspended),
            dict(gc.lastCompaction),
            gc.nextRun if gc.HasField("nextRun") else None,
        ),
        read_only=message.readOnly,
        ledger_ranges=[EntryRange(r.firstEntry, r.lastEntry, r.logId) for r in message.ledgerRanges],
    )

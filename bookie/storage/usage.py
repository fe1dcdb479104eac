"""What a bookie's disks hold, as ``bkctl bookie usage`` explains it: the facts one bookie can state about its own
storage, without the metadata store. The explanation (expected bytes from the ledgers' metadata, owners, reasons,
what compaction would reclaim) is admin/usage/, over a :class:`StorageView` from either source:

- a running bookie of ours, through its admin service (bookie/server/admin.py);
- a bookie's directories read offline, ours or a Java bookie's, running or not, never written.

Only entry-log headers, ledgers maps and indexes are read, never entry data: a log without a ledgers map (the current
one, or one a crash left unsealed) is scanned record header by record header.
"""

from __future__ import annotations

from dataclasses import dataclass, field

KINDS = ("journal", "entryLogs", "index", "other")  # bytes on a bookie's disks, by what holds them


@dataclass
class LogView:
    """One entry log."""

    log_id: int
    directory: str  # the ledger directory holding it
    size: int  # bytes of the file
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

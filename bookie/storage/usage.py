"""What a bookie's disks hold, as ``bkctl bookie usage`` explains it: the facts one bookie can state about its own
storage, without the metadata store. The explanation (expected bytes from the ledgers' metadata, owners, reasons,
what compaction would reclaim) is admin/usage/, over a :class:`StorageView` (bookie/codec/storage_view.py,
importable from here) from either source:

- a running bookie of ours, through its admin service (bookie/server/admin.py);
- a bookie's directories read offline, ours or a Java bookie's, running or not, never written.

Only entry-log headers, ledgers maps and indexes are read, never entry data: a log without a ledgers map (the current
one, or one a crash left unsealed) is scanned.
"""

from __future__ import annotations

import array
import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from bookie.codec.storage_view import KINDS, DirView, EntryRange, GcView, LogView, StorageView
from bookie.errors import BKError, CorruptData
from bookie.meta.cookies import Cookie, read_local_cookie
from bookie.storage.db.indexes import LOCATION_KEY, LONG, MAX_ENTRY
from bookie.storage.db.kv import LEDGERS, LOCATIONS, KeyValueStorage, has_database
from bookie.storage.db.storage import DbLedgerStorage
from bookie.storage.dirs import disk_space
from bookie.storage.entry_log import list_log_ids, log_path, split_location
from bookie.storage.gc import MAJOR, MINOR, GcConfig, log_metadata
from bookie.storage.index import HEADER_SIZE, index_path, ledger_id_of

if TYPE_CHECKING:
    from bookie.storage.dirs import LedgerDirs
    from bookie.storage.gc_group import GarbageCollectors
    from bookie.storage.ledger_storage import LedgerStorage


class BookieConfig(Protocol):
    """What is read of a bookie's configuration (bookie/server/config.py's BookieConfig)."""

    @property
    def journal_dirs(self) -> tuple[Path, ...]: ...

    @property
    def ledger_dirs(self) -> tuple[Path, ...]: ...

    @property
    def index_dirs(self) -> tuple[Path, ...]: ...

    @property
    def all_dirs(self) -> list[Path]: ...

    @property
    def db_storage(self) -> bool: ...

    def gc(self) -> GcConfig: ...


class RunningBookie(Protocol):
    """What is read of a running bookie of ours (bookie/server/bookie.py's BookieServer)."""

    bookie_id: str
    config: BookieConfig
    storage: LedgerStorage | None
    collectors: GarbageCollectors | None
    ledger_dirs: LedgerDirs
    index_dirs: LedgerDirs

    @property
    def read_only(self) -> bool: ...


# Counting each ledger's entries reads its whole index (8 bytes an entry); past this many entries in a bookie's
# indexes (slots of its index files; RocksDB's estimate of its locations) the counts are left out (-1).
COUNT_LIMIT = 2_000_000
GC_KINDS = (MAJOR, MINOR)
__all__ = [
    "KINDS",
    "DirView",
    "EntryRange",
    "GcView",
    "LogView",
    "StorageView",
    "entry_ranges",
    "ledger_locations",
    "ledger_locations_of_bookie",
    "view_of_bookie",
    "view_of_dirs",
]


def entry_ranges(locations: Iterable[tuple[int, int]]) -> list[EntryRange]:
    """``(entryId, logId)`` pairs, ascending by entry id, as runs of consecutive entries in one log."""
    ranges: list[EntryRange] = []
    for entry_id, log_id in locations:
        last = ranges[-1] if ranges else None
        if last is not None and last.log_id == log_id and last.last == entry_id - 1:
            ranges[-1] = EntryRange(last.first, entry_id, log_id)
        else:
            ranges.append(EntryRange(entry_id, entry_id, log_id))
    return ranges


def _log_view(path: Path, log_id: int, active: bool, stalled: str = "") -> tuple[LogView, bool] | None:
    """A log's size, mtime and ledgers map (scanned when it has none), and whether it is sealed (has its map); None
    when it went meanwhile or cannot even be stat'ed. A log that cannot be read (EIO, permissions, damage) is listed
    with its size, no ledgers and ``stalled`` saying why, as sealed: it is never taken for the current log."""
    directory = str(path.parents[1])
    try:
        st = path.stat()
    except OSError:  # FileNotFoundError: deleted by garbage collection while we looked
        return None
    try:
        meta = log_metadata(path, log_id)
    except FileNotFoundError:
        return None
    except (OSError, CorruptData) as exc:
        return LogView(log_id, directory, st.st_size, {}, active, st.st_mtime, f"unreadable: {exc}"), True
    return LogView(log_id, directory, st.st_size, meta.ledgers, active, st.st_mtime, stalled), meta.sealed


def _kind_of(relative: Path) -> str:
    """Which of KINDS a file under a directory's ``current/`` is."""
    name = relative.name
    if len(relative.parts) == 1:
        if name.endswith(".txn"):
            return "journal"
        if name.endswith(".log"):
            return "entryLogs"
        return "other"
    top = relative.parts[0]
    if name.endswith((".idx", ".idx.rloc")) or top.startswith(("ledgers", "locations")):
        return "index"
    return "other"


def _dir_view(path: Path, kind: str, writable: bool = True) -> DirView:
    """Bytes of every file under ``path`` by KINDS (file sizes, from the directory entries only) and its disk."""
    sizes = dict.fromkeys(KINDS, 0)
    current = path / "current"
    for parent, _, names in os.walk(path):
        for name in names:
            file = Path(parent, name)
            try:
                size = file.lstat().st_size
            except FileNotFoundError:
                continue
            under = file.relative_to(current) if file.is_relative_to(current) else None
            sizes[_kind_of(under) if under is not None else "other"] += size
    try:
        space = disk_space(path)
        total, free = space.total, space.usable
    except OSError:  # missing: a directory named in the configuration that does not exist
        total = free = 0
    return DirView(str(path), kind, sizes, total, free, writable)


def _dir_views(
    journal_dirs: Iterable[Path],
    ledger_dirs: Iterable[Path],
    index_dirs: Iterable[Path],
    writable: Callable[[Path], bool] = lambda _: True,
) -> list[DirView]:
    """Each directory once (a ledger directory that also holds the index or the journal is a ``ledger`` one)."""
    kinds: dict[Path, str] = {}
    for kind, dirs in (("ledger", ledger_dirs), ("index", index_dirs), ("journal", journal_dirs)):
        for directory in dirs:
            kinds.setdefault(Path(directory), kind)
    return [_dir_view(d, kind, writable(d)) for d, kind in kinds.items()]


def _gc_view(config: GcConfig) -> GcView:
    return GcView(
        config.minor_threshold,
        config.major_threshold,
        config.minor_interval_s,
        config.major_interval_s,
        config.gc_wait_ms,
        config.overreplicated_wait_ms,
    )


# ---- offline: a bookie's directories, ours or a Java bookie's, running or not ----


def view_of_dirs(config: BookieConfig) -> StorageView:
    """The storage in a bookie's directories (its configuration's), read without writing, creating or locking
    anything in them: a running bookie, ours or Java's, may be writing them meanwhile. Logs are numbered across
    all ledger directories (interleaved) or in each (DbLedgerStorage); the current one is told from the files
    (:func:`_mark_current`)."""
    storage = _storage_on_disk(config)
    logs: list[LogView] = []
    if storage == "db":
        for ledger_dir in config.ledger_dirs:
            logs += _logs_in([ledger_dir])
        local = _db_local_ledgers(config.index_dirs)
    else:
        logs = _logs_in(config.ledger_dirs)
        local = _index_file_ledgers(config.index_dirs)
    cookie = next(filter(None, (_cookie(d) for d in config.all_dirs)), None)
    return StorageView(
        bookie_id=cookie.bookie_id if cookie is not None else None,
        storage=storage,
        source="offline",
        dirs=_dir_views(config.journal_dirs, config.ledger_dirs, config.index_dirs),
        logs=logs,
        local_ledgers=local,
        gc=_gc_view(config.gc()),
    )


def ledger_locations(config: BookieConfig, ledger_id: int) -> list[EntryRange]:
    """Where a ledger's entries are in a bookie's directories, from its index (offline, read-only)."""
    if _storage_on_disk(config) == "db":
        index_dir = config.index_dirs[ledger_id % len(config.index_dirs)]
        with _read_only_db(index_dir, LOCATIONS) as db:
            if db is None:
                return []
            begin, end = LOCATION_KEY.pack(ledger_id, 0), LOCATION_KEY.pack(ledger_id, MAX_ENTRY)
            pairs = [(LOCATION_KEY.unpack(k)[1], split_location(LONG.unpack(v)[0])[0]) for k, v in db.items(begin, end)]
        return entry_ranges(pairs)
    return _index_file_locations(config.index_dirs, ledger_id)


def _index_file_locations(index_dirs: Iterable[Path], ledger_id: int) -> list[EntryRange]:
    """Where a ledger's entries are, from its index file (InterleavedLedgerStorage) as of the last checkpoint, read
    apart from the ledger cache and its lock, which every add takes."""
    for index_dir in index_dirs:
        path = index_path(index_dir, ledger_id)
        try:
            slots = _index_slots(path)
        except FileNotFoundError:
            continue
        return entry_ranges((e, split_location(loc)[0]) for e, loc in enumerate(slots) if loc)
    return []


def _storage_on_disk(config: BookieConfig) -> str:
    """``db`` when an index directory holds DbLedgerStorage's databases, ``interleaved`` when it holds index files,
    else what the configuration's ledgerStorageClass says."""
    for index_dir in config.index_dirs:
        current = Path(index_dir) / "current"
        if (current / LEDGERS / "CURRENT").exists() or (current / LOCATIONS / "CURRENT").exists():
            return "db"
        if next(current.glob("*/*/*.idx"), None) is not None if current.is_dir() else False:
            return "interleaved"
    return "db" if config.db_storage else "interleaved"


def _logs_in(ledger_dirs: Iterable[Path]) -> list[LogView]:
    """The entry logs of one id space (log ids unique across these directories)."""
    paths = {log_id: log_path(d, log_id) for d in reversed(list(ledger_dirs)) for log_id in list_log_ids(d)}
    read = [found for log_id, path in sorted(paths.items()) if (found := _log_view(path, log_id, False))]
    unsealed = []  # the unsealed logs after the last sealed one, the highest id first
    for view, sealed in reversed(read):
        if sealed:
            break
        unsealed.append(view)
    _mark_current(unsealed)
    return [view for view, _ in read]


def _mark_current(unsealed: list[LogView]) -> None:
    """The current log among the unsealed logs after the last sealed one (highest id first), and the logs after it.

    BookKeeper creates the next log in advance (entryLogPreAllocationEnabled) and keeps a new log's header in its
    write buffer: two empty files (0 bytes) are the current log and the next; one, the next after the highest log
    written. Our bookie writes a log's header when it creates it, and creates none in advance: a log without entries
    written after the highest one holding entries is the current log of a bookie restarted since (the stop left the
    one before unsealed), else the highest holding entries is current."""
    empty = [view for view in unsealed if view.size == 0]
    written = [view for view in unsealed if view.size > 0]
    current: LogView | None
    if len(empty) >= 2 or (empty and not written):
        current = empty[-1]
    elif empty:
        current = written[0]
    else:
        holding = [view for view in written if view.ledgers]
        current = holding[0] if holding else None
        newer = [view for view in written if not view.ledgers and (current is None or view.modified > current.modified)]
        if newer:
            current = max(newer, key=lambda view: (view.modified, view.log_id))
    for view in unsealed:
        view.active = current is not None and view.log_id >= current.log_id


def _cookie(directory: Path) -> Cookie | None:
    try:
        return read_local_cookie(directory)
    except (OSError, BKError):  # unreadable or not a cookie: the view is still worth having
        return None


def _index_slots(path: Path) -> array.array[int]:
    """Every location slot of an index file (0: no entry), read in one go."""
    with open(path, "rb") as f:
        f.seek(HEADER_SIZE)
        data = f.read()
    slots = array.array("q", data[: len(data) - len(data) % 8])
    if sys.byteorder == "little":
        slots.byteswap()  # big-endian on disk
    return slots


def _index_file_ledgers(index_dirs: Iterable[Path]) -> dict[int, int]:
    files: dict[int, Path] = {}
    for index_dir in index_dirs:
        current = Path(index_dir) / "current"
        for path in current.glob("*/*/*.idx") if current.is_dir() else ():
            ledger_id = ledger_id_of(path)
            if ledger_id is not None:
                files.setdefault(ledger_id, path)
    sizes = {lid: _size(path) for lid, path in files.items()}
    if sum(max(0, size - HEADER_SIZE) for size in sizes.values()) // 8 > COUNT_LIMIT:
        return dict.fromkeys(sizes, -1)
    counts = {}
    for ledger_id, path in files.items():
        try:
            slots = _index_slots(path)
        except FileNotFoundError:  # deleted by garbage collection while we looked
            continue
        counts[ledger_id] = len(slots) - slots.count(0)
    return counts


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _db_local_ledgers(index_dirs: Iterable[Path]) -> dict[int, int]:
    local: dict[int, int] = {}
    counts: dict[int, int] = {}
    countable = True
    for index_dir in index_dirs:
        with _read_only_db(index_dir, LEDGERS) as db:
            if db is not None:
                local.update((LONG.unpack_from(key)[0], -1) for key, _ in db.items() if len(key) >= 8)
        with _read_only_db(index_dir, LOCATIONS) as db:
            if db is None or not countable:
                continue
            if db.count() > COUNT_LIMIT:
                countable = False
                continue
            for key, _ in db.items():
                ledger_id = LOCATION_KEY.unpack(key)[0]
                counts[ledger_id] = counts.get(ledger_id, 0) + 1
    local = {lid: n for lid, n in local.items() if lid >= 0}  # negative keys: the storage state flags
    if countable:
        local = {lid: counts.get(lid, 0) for lid in local}
    return local


# RocksDB's files a read-only open reads and never writes: linked from a directory of our own, where rocksdict
# leaves its rocksdict-config.json (it writes one into any database directory it opens, read-only too) and RocksDB
# anything else; the small files that name others (CURRENT, MANIFEST, OPTIONS) are copied, so that no write,
# ours or a library's, can ever reach the bookie's through a link
_LINKED = (".sst", ".log", ".blob")
_COPIED = ("CURRENT", "IDENTITY", "MANIFEST-", "OPTIONS-")
OPEN_TRIES = 3  # a running bookie's RocksDB may delete a file between our listing and our open


@contextlib.contextmanager
def _read_only_db(index_dir: Path, kind: str) -> Iterator[KeyValueStorage | None]:
    """A DbLedgerStorage database opened without writing, creating or locking anything in its directory, while a
    bookie may be writing it (None: there is none)."""
    source = Path(index_dir) / "current" / kind
    if not has_database(index_dir, kind):
        yield None
        return
    for attempt in range(OPEN_TRIES):
        with tempfile.TemporaryDirectory(prefix="bkctl-usage-") as temp:
            target = Path(temp) / "current" / kind
            target.mkdir(parents=True)
            try:
                for entry in os.scandir(source):
                    if entry.name.endswith(_LINKED):
                        os.symlink(entry.path, target / entry.name)
                    elif entry.name.startswith(_COPIED):
                        shutil.copyfile(entry.path, target / entry.name)
                db = KeyValueStorage(Path(temp), kind, read_only=True)
            except (OSError, BKError):
                if attempt + 1 == OPEN_TRIES:
                    raise
                continue
            try:
                yield db
            finally:
                db.close()
            return


# ---- a running bookie of ours ----


def view_of_bookie(bookie: RunningBookie) -> StorageView:
    """The storage of a running bookie of ours, as it states it (its entry loggers, collectors, disk checker). Runs
    on a thread of its own: it reads ledgers maps and indexes; locks of the write path are taken only to copy the
    current log's id and ledger sizes and list the logs. Only the current log is active."""
    storage, collectors = bookie.storage, bookie.collectors
    assert storage is not None and collectors is not None, "the bookie's storage is not open yet"
    logs: list[LogView] = []
    for collector in collectors.collectors:
        logger = collector.storage.entry_logger
        stalled = dict(collector.state.stalled)
        with logger.lock:  # the current log among the logs listed: a roll cannot come between
            current_id, current = logger.current_id, dict(logger.ledger_sizes)
            position = logger.position
            log_ids = logger.log_ids()
        for log_id in log_ids:
            try:
                path = logger.log_path(log_id)
            except FileNotFoundError:
                continue
            if log_id == current_id:
                try:
                    modified = path.stat().st_mtime
                except FileNotFoundError:
                    continue
                # its size: what was appended to it, the write buffer's bytes too, as its ledger sizes count them
                logs.append(LogView(log_id, str(path.parents[1]), position, current, True, modified))
            elif found := _log_view(path, log_id, False, stalled.get(log_id, "")):  # a compaction's new log too
                logs.append(found[0])
    config = bookie.config
    dirs = [(bookie.ledger_dirs, config.ledger_dirs), (bookie.index_dirs, config.index_dirs)]

    def writable(directory: Path) -> bool:
        return not any(directory in paths and manager.is_full(directory) for manager, paths in dirs)

    db = isinstance(storage, DbLedgerStorage)
    return StorageView(
        bookie_id=bookie.bookie_id,
        storage="db" if db else "interleaved",
        source="admin",
        dirs=_dir_views(config.journal_dirs, config.ledger_dirs, config.index_dirs, writable),
        logs=logs,
        local_ledgers=_running_local_ledgers(storage, config.index_dirs, db),
        gc=_running_gc_view(collectors),
        read_only=bookie.read_only,
    )


def ledger_locations_of_bookie(bookie: RunningBookie, ledger_id: int) -> list[EntryRange]:
    """Where a running bookie of ours has a ledger's entries, from its index (DbLedgerStorage: entries still in its
    write caches are in no entry log yet, and left out; interleaved: its index file as of the last checkpoint)."""
    storage = bookie.storage
    assert storage is not None, "the bookie's storage is not open yet"
    if isinstance(storage, DbLedgerStorage):
        single = storage.storage_of(ledger_id)
        return entry_ranges((e, split_location(loc)[0]) for e, loc in single.locations.entries(ledger_id))
    return _index_file_locations(bookie.config.index_dirs, ledger_id)


def _running_local_ledgers(storage: LedgerStorage, index_dirs: Iterable[Path], db: bool) -> dict[int, int]:
    """DbLedgerStorage: from its indexes and write caches (RocksDB reads take no lock of the bookie's). Interleaved:
    from the index files as of the last checkpoint, read apart from the ledger cache, whose lock every add takes
    (-1: a ledger created since, with no index file yet)."""
    ids = storage.ledger_ids()
    if not db:
        on_disk = _index_file_ledgers(index_dirs)
        return {ledger_id: on_disk.get(ledger_id, -1) for ledger_id in ids}
    assert isinstance(storage, DbLedgerStorage)
    if sum(single.locations.db.count() for single in storage.dirs) > COUNT_LIMIT:
        return dict.fromkeys(ids, -1)
    counts = {}
    for ledger_id in ids:
        try:
            counts[ledger_id] = len(storage.entry_ids(ledger_id))
        except BKError:  # deleted by garbage collection while we looked
            continue
    return counts


def _running_gc_view(collectors: GarbageCollectors) -> GcView:
    """Settings, suspension, last compactions and the next scheduled run: each collector runs ``gcWaitTime`` after
    its last run ended (or after it started), the earliest of them."""
    view = _gc_view(collectors.config)
    state = collectors.state
    view.suspended = sorted(state.suspended)
    view.last_compaction = {kind: state.last_compaction[kind] for kind in GC_KINDS}
    wait = collectors.config.gc_wait_ms / 1000
    if wait > 0:
        ends = []
        for collector in collectors.collectors:
            run = collector.state.last_run
            ends.append(run.started + run.seconds if run else min(collector.state.last_compaction.values()))
        view.next_run = min(ends) + wait
    return view

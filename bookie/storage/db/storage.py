"""DbLedgerStorage: entries in entry logs (the same format as InterleavedLedgerStorage's, bookie/storage/entry_log.py),
indexed in RocksDB (indexes.py), behind a write cache and a read-ahead cache (caches.py). As BookKeeper 4.17.4's
``DbLedgerStorage`` (``bookkeeper-server/src/main/java/org/apache/bookkeeper/bookie/storage/ldb/``): one
:class:`SingleDirectoryStorage` per ledger directory, with its own entry logger, indexes (in the index directory of
the same rank) and caches; a ledger lives in directory ``ledgerId mod N``.

An add: into the write cache, then journaled, acknowledged once the journal record is durable. A checkpoint (every
flushInterval, or at once when a write cache fills up): take the journal's position, swap the write caches, write
the full one into the entry log sorted by ledger and entry id, fsync it, write the locations (a synced RocksDB
batch), the changed ledgers (fence, master key, explicit LAC: synced), then lastMark. A crash before lastMark leaves
the journal to replay into the write cache again.

A read: the write caches, the read-ahead cache, else the locations index and the entry log; a read from the entry
log also reads the entries after it in the log (dbStorage_readAheadCacheBatchSize of them, while of the same ledger)
into the read-ahead cache, which makes a ledger read in order one disk read per batch.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bookie._proto.db_ledger_storage_pb2 import LedgerData
from bookie.codec.records import PREFIX, size_prefix
from bookie.errors import CorruptData, NoSuchEntry, NoSuchLedger, TooManyRequests
from bookie.storage.config import StorageConfig
from bookie.storage.db.caches import ReadCache, WriteCache
from bookie.storage.db.indexes import EntryLocationIndex, LedgerMetadataIndex
from bookie.storage.db.kv import MB, RocksDbConfig
from bookie.storage.entry_log import EntryLogger, location
from bookie.storage.gc import Compactable
from bookie.storage.ledger_header import LedgerHeader
from bookie.storage.ledger_storage import AddBatch, LedgerStorage
from bookie.storage.stats import StorageStats

log = logging.getLogger(__name__)
FLUSH_CHUNK = 1 << 20  # bytes appended to the entry log at once by a checkpoint


@dataclass(frozen=True)
class DbConfig:
    """BookKeeper's ``dbStorage_*`` keys (bytes here; the keys are in MB), for all ledger directories together."""

    write_cache_size: int = 64 * MB
    read_cache_size: int = 64 * MB
    read_ahead_batch_size: int = 100
    read_ahead_batch_bytes: int = -1  # -1: only the read cache's half bounds a batch
    max_throttle_ms: int = 10_000  # dbStorage_maxThrottleTimeMs: how long an add waits for write-cache space
    rocksdb: RocksDbConfig = field(default_factory=RocksDbConfig)


class SingleDirectoryStorage:
    """One ledger directory's entry logs, indexes and caches (BookKeeper's SingleDirectoryDbLedgerStorage)."""

    def __init__(
        self,
        ledger_dir: Path,
        index_dir: Path,
        config: StorageConfig,
        db: DbConfig,
        shares: int,
        on_full: Callable[[], None],
    ):
        self.ledger_dir, self.index_dir = Path(ledger_dir), Path(index_dir)
        self.entry_logger = EntryLogger(self.ledger_dir, config.entry_log_size_limit)
        self.locations = EntryLocationIndex(self.index_dir, db.rocksdb)
        try:
            self.ledgers = LedgerMetadataIndex(self.index_dir, db.rocksdb)
        except BaseException:
            self.locations.close()
            raise
        half = db.write_cache_size // shares // 2  # two caches, swapped by each checkpoint
        self.write_cache, self.flushing = WriteCache(half), WriteCache(half)
        read_cache = db.read_cache_size // shares
        self.read_cache = ReadCache(read_cache)
        self.read_ahead_count = db.read_ahead_batch_size
        self.read_ahead_bytes = read_cache // 2  # BookKeeper's bound: half the read cache
        if db.read_ahead_batch_bytes > 0:
            self.read_ahead_bytes = min(self.read_ahead_bytes, db.read_ahead_batch_bytes)
        self.max_throttle = db.max_throttle_ms / 1000
        self.on_full = on_full
        self.cache_lock = threading.Condition()  # the write caches; notified when a swap makes room
        self.flush_lock = threading.Lock()  # one flush at a time (BookKeeper's flushMutex)
        self.write_cache_hits = self.write_cache_misses = 0

    # ---- writes ----
    def put(self, entries: list[tuple[int, int, bytes]], wait: bool = True) -> bool:
        """Put ``(ledgerId, entryId, entry)`` into the write cache. When it is full: ask for a checkpoint and wait
        for room up to dbStorage_maxThrottleTimeMs (False when there was none), or flush now (``wait`` False: in
        replay, before the checkpoints run)."""
        size = sum(len(e) for _, _, e in entries)
        deadline = time.monotonic() + self.max_throttle
        asked = False
        with self.cache_lock:
            while not self.write_cache.fits(size):
                if not wait:
                    self.cache_lock.release()
                    try:
                        self.flush()
                    finally:
                        self.cache_lock.acquire()
                    continue
                left = deadline - time.monotonic()
                if left <= 0:
                    log.error(
                        "%s: write cache still full after %.1f s: adds refused", self.ledger_dir, self.max_throttle
                    )
                    return False
                if not asked:
                    log.info("%s: write cache is full, asking for a checkpoint", self.ledger_dir)
                    asked = True
                self.on_full()
                self.cache_lock.wait(min(left, 0.05))
            cache = self.write_cache
            for ledger_id, entry_id, entry in entries:
                cache.put(ledger_id, entry_id, entry)
        return True

    def flush(self) -> None:
        """Write the write cache into the entry log and its locations into the index, and the changed ledgers:
        all durable on return (the storage half of a checkpoint). A flush that failed left its entries in the
        flushing half: they go first (swapping them back into the write cache would leave them behind while the
        checkpoint's lastMark moved past them)."""
        with self.flush_lock:
            if self.flushing.count:
                self._flush_half()
            with self.cache_lock:
                self.write_cache, self.flushing = self.flushing, self.write_cache
                self.cache_lock.notify_all()
            self._flush_half()

    def _flush_half(self) -> None:
        """Write the flushing half of the write cache out (under the flush lock)."""
        flushing = self.flushing
        locations: list[tuple[int, int, int]] = []
        logger = self.entry_logger
        chunk: list[bytes] = []
        chunk_ids: list[tuple[int, int, int]] = []  # (ledgerId, entryId, offset in chunk)
        sizes: defaultdict[int, int] = defaultdict(int)
        chunk_size = 0

        def append() -> None:
            nonlocal chunk_size
            with logger.lock:
                base = logger.append(b"".join(chunk), sizes)
                log_id = logger.current_id
            locations.extend((lid, eid, location(log_id, base + at + PREFIX)) for lid, eid, at in chunk_ids)
            chunk.clear()
            chunk_ids.clear()
            sizes.clear()
            chunk_size = 0

        for ledger_id, entry_id, entry in flushing.sorted_entries():
            chunk_ids.append((ledger_id, entry_id, chunk_size))
            chunk.append(size_prefix(entry))
            chunk.append(entry)
            sizes[ledger_id] += PREFIX + len(entry)
            chunk_size += PREFIX + len(entry)
            if chunk_size >= FLUSH_CHUNK:
                append()
        if chunk:
            append()
        logger.flush()  # the entries are on disk before any location points at them
        if locations:
            self.locations.write(locations)
        self.ledgers.flush()
        with self.cache_lock:
            flushing.clear()
        self.locations.remove_deleted()
        self.ledgers.remove_deleted()

    # ---- reads ----
    def caches(self) -> tuple[WriteCache, WriteCache]:
        with self.cache_lock:
            return self.write_cache, self.flushing

    def read(self, ledger_id: int, entry_id: int) -> bytes:
        for cache in self.caches():
            entry = cache.get(ledger_id, entry_id)
            if entry is not None:
                self.write_cache_hits += 1
                return entry
        self.write_cache_misses += 1
        entry = self.read_cache.get(ledger_id, entry_id)
        if entry is not None:
            return entry
        loc = self.locations.location(ledger_id, entry_id)
        if not loc:
            raise NoSuchEntry(f"ledger {ledger_id} entry {entry_id} is not on this bookie")
        try:
            entry = self.entry_logger.read(loc, ledger_id, entry_id)
        except CorruptData:
            moved = self.locations.location(ledger_id, entry_id)
            if moved == loc:
                raise
            loc = moved  # compaction moved it while we read
            entry = self.entry_logger.read(loc, ledger_id, entry_id)
        self._read_ahead(ledger_id, loc + len(entry) + PREFIX, len(entry))
        return entry

    def _read_ahead(self, ledger_id: int, following: int, size: int) -> None:
        """The entries after one read from the entry log, into the read cache (about as many bytes as
        dbStorage_readAheadCacheBatchSize entries of this one's size, within the batch's byte bound)."""
        if self.read_ahead_count <= 0 or self.read_ahead_bytes <= 0:
            return
        wanted = min(self.read_ahead_bytes, max(64 << 10, 2 * self.read_ahead_count * (size + PREFIX)))
        for entry_id, entry in self.entry_logger.read_following(following, ledger_id, self.read_ahead_count, wanted):
            self.read_cache.put(ledger_id, entry_id, entry)

    def last_entry(self, ledger_id: int) -> int:
        """The highest entry id stored (caches or index); -1 when none."""
        write, flushing = self.caches()
        return max(write.last_entry(ledger_id), flushing.last_entry(ledger_id), self.locations.last_entry(ledger_id))

    def entry_ids(self, ledger_id: int) -> list[int]:
        ids = {entry_id for entry_id, _ in self.locations.entries(ledger_id)}
        for cache in self.caches():
            ids.update(cache.ledgers.get(ledger_id, {}))
        return sorted(ids)

    # ---- ledgers ----
    def ledger_ids(self) -> list[int]:
        return self.ledgers.ledger_ids()

    def delete_ledger(self, ledger_id: int) -> None:
        """Forget the ledger: its cached entries now, its index records at the next checkpoint (GC then reclaims
        its entry-log space)."""
        with self.cache_lock:
            self.write_cache.delete_ledger(ledger_id)
        self.locations.delete(ledger_id)
        self.ledgers.delete(ledger_id)

    # ---- compaction (bookie.storage.gc.Compactable) ----
    def entry_location(self, ledger_id: int, entry_id: int) -> int:
        if ledger_id in self.locations.deleted or self.ledgers.get(ledger_id) is None:
            return 0
        return self.locations.location(ledger_id, entry_id)

    def update_entry_locations(self, moved: list[tuple[int, int, int, int]]) -> None:
        """BookKeeper's updateEntriesLocations: after any flush in progress (which may write locations of the
        entries compacted), the new locations where the index still has the old ones, in one synced batch."""
        with self.flush_lock:
            pass
        self.locations.write(
            [(lid, eid, new) for lid, eid, old, new in moved if self.locations.location(lid, eid) == old]
        )

    def close(self) -> None:
        self.entry_logger.close()
        self.locations.close()
        self.ledgers.close()


class DbLedgerStorage(LedgerStorage):
    """The journal and the ledger directories' :class:`SingleDirectoryStorage`: ledger ``L`` in directory
    ``L mod N``, its header a ``LedgerData`` in that directory's ledgers index."""

    def __init__(self, config: StorageConfig, db: DbConfig | None = None, stats: StorageStats | None = None):
        super().__init__(config, stats)
        db = db or DbConfig()
        ledger_dirs, index_dirs = list(config.ledger_dirs), list(config.index_dirs)
        if len(index_dirs) != len(ledger_dirs):
            raise ValueError("ledger and index dirs size not matched")  # BookKeeper's words
        self.dirs: list[SingleDirectoryStorage] = []
        try:
            for ledger_dir, index_dir in zip(ledger_dirs, index_dirs, strict=True):
                self.dirs.append(
                    SingleDirectoryStorage(ledger_dir, index_dir, config, db, len(ledger_dirs), self._checkpoint_soon)
                )
        except BaseException:
            self._close()
            raise

    def storage_of(self, ledger_id: int) -> SingleDirectoryStorage:
        return self.dirs[ledger_id % len(self.dirs)]

    def _checkpoint_soon(self) -> None:
        self._checkpoint_asked.set()
        self._flush_due.set()

    # ---- JournalledStorage ----
    def _mark_dirs(self, writing: bool) -> list[Path]:
        return [d.ledger_dir for d in self.dirs]

    def _persist(self) -> None:
        for single in self.dirs:
            single.flush()

    def _writeback(self) -> None:
        """Nothing: entries reach the entry log only at checkpoints."""

    def _close(self) -> None:
        for single in self.dirs:
            single.close()

    # ---- ledger headers ----
    def _header(self, ledger_id: int) -> LedgerHeader | None:
        data = self.storage_of(ledger_id).ledgers.get(ledger_id)
        if data is None:
            return None
        explicit_lac = bytes(data.explicitLac) if data.HasField("explicitLac") else None
        return LedgerHeader(bytes(data.masterKey), bool(data.fenced), explicit_lac)

    def ledger_exists(self, ledger_id: int) -> bool:
        return self.storage_of(ledger_id).ledgers.get(ledger_id) is not None

    def _set_header(self, ledger_id: int, header: LedgerHeader) -> None:
        """A new LedgerData for the ledger (never one changed in place: a flush may be serialising the current
        one), keeping what else the current one holds (limbo)."""
        ledgers = self.storage_of(ledger_id).ledgers
        data = LedgerData()
        current = ledgers.get(ledger_id)
        if current is not None:
            data.CopyFrom(current)
        data.masterKey, data.fenced = header.master_key, header.fenced
        if header.explicit_lac is None:
            data.ClearField("explicitLac")
        else:
            data.explicitLac = header.explicit_lac
        ledgers.set(ledger_id, data)

    # ---- entries ----
    def _store(self, batch: AddBatch) -> dict[int, Exception]:
        dirs, records = len(self.dirs), batch.records
        by_dir: defaultdict[int, list[tuple[int, int, bytes]]] = defaultdict(list)
        for start, size, ledger_id, entry_id, _ in batch.entries:
            by_dir[ledger_id % dirs].append((ledger_id, entry_id, records[start + PREFIX : start + PREFIX + size]))
        rejected: dict[int, Exception] = {}
        for rank, entries in by_dir.items():
            if not self.dirs[rank].put(entries):
                error = TooManyRequests("write cache full: the checkpoint cannot keep up")
                rejected.update((ledger_id, error) for ledger_id, _, _ in entries)
        return rejected

    def _replay_entry(self, ledger_id: int, entry_id: int, entry: bytes) -> None:
        self.storage_of(ledger_id).put([(ledger_id, entry_id, entry)], wait=False)

    def _holding(self, ledger_id: int) -> SingleDirectoryStorage:
        """The directory of a ledger this bookie has; :class:`NoSuchLedger` when it has not."""
        single = self.storage_of(ledger_id)
        if single.ledgers.get(ledger_id) is None:
            raise NoSuchLedger(f"ledger {ledger_id} is not on this bookie", ledger_id=ledger_id)
        return single

    def read_entry(self, ledger_id: int, entry_id: int) -> bytes:
        single = self._holding(ledger_id)
        if entry_id == -1:
            entry_id = single.last_entry(ledger_id)
            if entry_id < 0:
                raise NoSuchEntry(f"ledger {ledger_id} has no entries on this bookie")
        return single.read(ledger_id, entry_id)

    def last_entry_id(self, ledger_id: int) -> int:
        return self._holding(ledger_id).last_entry(ledger_id)

    def entry_ids(self, ledger_id: int) -> list[int]:
        """The entries the caches and the index hold for the ledger (the entry logs are not read)."""
        return self._holding(ledger_id).entry_ids(ledger_id)

    def ledger_ids(self) -> list[int]:
        return sorted(lid for single in self.dirs for lid in single.ledger_ids())

    def gc_units(self) -> list[tuple[Compactable, str]]:
        """One collector per ledger directory, as each SingleDirectoryDbLedgerStorage has its own
        GarbageCollectorThread (a ledger and its entry logs live in one directory only)."""
        return [(single, str(single.ledger_dir)) for single in self.dirs]

    def _delete_ledger(self, ledger_id: int) -> None:
        self.storage_of(ledger_id).delete_ledger(ledger_id)

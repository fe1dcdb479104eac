"""InterleavedLedgerStorage (BookKeeper: bookie/InterleavedLedgerStorage.java): the entries of all ledgers
interleaved in entry logs (bookie/storage/entry_log.py), each ledger's locations and header in its index file
(bookie/storage/index.py) behind the ledger cache (bookie/storage/ledger_cache.py). It also serves
SortedLedgerStorage's files, which are the same.

An add, in this order (what makes it crash-safe): 1. append to the current entry log (buffered), 2. point the
ledger's index at it (ledger cache), 3. journal the record (bookie/storage/ledger_storage.py), 4. acknowledge once
the journal record is durable. A checkpoint flushes the entry logs, then the index pages and headers.

Directories, as InterleavedLedgerStorage spreads them: entry logs over the ledger directories and index files over
the index directories (bookie/storage/dirs.py).
"""

from __future__ import annotations

from pathlib import Path

from bookie.codec.records import PREFIX, pack_record
from bookie.errors import CorruptData, NoSuchEntry, NoSuchLedger
from bookie.storage.config import StorageConfig
from bookie.storage.dirs import LedgerDirs
from bookie.storage.entry_log import EntryLogger, location
from bookie.storage.gc import Compactable
from bookie.storage.index import IndexHeader, recover_relocations
from bookie.storage.ledger_cache import LedgerCache, LedgerIndex
from bookie.storage.ledger_header import LedgerHeader
from bookie.storage.ledger_storage import AddBatch, LedgerStorage
from bookie.storage.stats import StorageStats


class InterleavedLedgerStorage(LedgerStorage):
    """Entries in interleaved entry logs, each ledger's index in its index file.

    Args:
    config: where the files are, and the engine's settings.
    stats: where the engine records its metrics (the bookie's BookieStats).
    ledger_dirs, index_dirs: the directory managers, when the bookie checks their disks itself (its disk
        monitor); made from ``config`` otherwise. Index files share the ledger directories' manager when they
        share their directories.
    """

    def __init__(
        self,
        config: StorageConfig,
        stats: StorageStats | None = None,
        ledger_dirs: LedgerDirs | None = None,
        index_dirs: LedgerDirs | None = None,
    ):
        super().__init__(config, stats)
        self.ledger_dirs = ledger_dirs or LedgerDirs(config.ledger_dirs, config.disk)
        self.index_dirs = index_dirs or (
            self.ledger_dirs if config.index_dirs == config.ledger_dirs else LedgerDirs(config.index_dirs, config.disk)
        )
        self.entry_logger = EntryLogger(
            self.ledger_dirs, config.entry_log_size_limit, config.entry_log_flush_bytes, self._flush_due.set
        )
        recover_relocations(list(self.index_dirs.all))  # index files a crash left half moved
        self.cache = LedgerCache(self.index_dirs, config.page_limit, self.entry_logger.holds, config.open_file_limit)

    # ---- JournalledStorage ----
    def _mark_dirs(self, writing: bool) -> list[Path]:
        # as rollLog: into every writable ledger directory (with none, those a new log could still go to)
        return list((self.ledger_dirs.writable or self.ledger_dirs.all) if writing else self.ledger_dirs.all)

    def _persist(self) -> None:
        self.entry_logger.flush()
        self.cache.flush()

    def _writeback(self) -> None:
        self.entry_logger.flush()

    def _close(self) -> None:
        self.entry_logger.close()
        self.cache.close()

    # ---- ledger headers ----
    def _header(self, ledger_id: int) -> LedgerHeader | None:
        index = self.cache.get(ledger_id)
        return None if index is None else index.header

    def ledger_exists(self, ledger_id: int) -> bool:
        return self.cache.get(ledger_id) is not None

    def _set_header(self, ledger_id: int, header: LedgerHeader) -> None:
        cache = self.cache
        with cache.lock:
            index = cache.get(ledger_id) or cache.create(ledger_id, header.master_key)
            index.header = IndexHeader(header.master_key, header.fenced, header.explicit_lac)
            index.header_dirty = True

    def _index(self, ledger_id: int) -> LedgerIndex:
        index = self.cache.get(ledger_id)
        if index is None:
            raise NoSuchLedger(f"ledger {ledger_id} is not on this bookie", ledger_id=ledger_id)
        return index

    # ---- entries ----
    def _store(self, batch: AddBatch) -> dict[int, Exception]:
        cache, logger = self.cache, self.entry_logger
        indexes: dict[int, LedgerIndex] = {}
        gone: dict[int, Exception] = {}  # deleted by garbage collection since their header was read
        with cache.lock:
            for ledger_id in batch.sizes:
                index = cache.get(ledger_id)
                if index is None:
                    gone[ledger_id] = NoSuchLedger(f"ledger {ledger_id} was deleted", ledger_id=ledger_id)
                else:
                    indexes[ledger_id] = index
            with logger.lock:  # no roll (compaction appends too) between the append and reading its log id
                base = logger.append(batch.records, batch.sizes)
                log_id = logger.current_id
            for start, _, ledger_id, entry_id, _ in batch.entries:
                index = indexes.get(ledger_id)
                if index is not None:
                    cache.set_location(index, entry_id, location(log_id, base + start + PREFIX))
        return gone

    def _replay_entry(self, ledger_id: int, entry_id: int, entry: bytes) -> None:
        with self.cache.lock:
            offset = self.entry_logger.append(pack_record(entry), {ledger_id: PREFIX + len(entry)})
            where = location(self.entry_logger.current_id, offset + PREFIX)
            self.cache.set_location(self._index(ledger_id), entry_id, where)

    def read_entry(self, ledger_id: int, entry_id: int) -> bytes:
        index = self._index(ledger_id)
        if entry_id == -1:
            entry_id = index.last_entry
        loc = self.cache.get_location(index, entry_id)
        if not loc:
            raise NoSuchEntry(f"ledger {ledger_id} entry {entry_id} is not on this bookie")
        try:
            return self.entry_logger.read(loc, ledger_id, entry_id)
        except CorruptData:
            moved = self.cache.get_location(index, entry_id)
            if moved == loc:
                raise
            return self.entry_logger.read(moved, ledger_id, entry_id)  # compaction moved it while we read

    def last_entry_id(self, ledger_id: int) -> int:
        return self._index(ledger_id).last_entry

    def entry_ids(self, ledger_id: int) -> list[int]:
        return self.cache.entry_ids(self._index(ledger_id))

    def ledger_ids(self) -> list[int]:
        return self.cache.ledger_ids()

    def _delete_ledger(self, ledger_id: int) -> None:
        self.cache.delete(ledger_id)

    # ---- compaction (bookie.storage.gc.Compactable) ----
    def gc_units(self) -> list[tuple[Compactable, str]]:
        """One collector over all the ledger directories, as InterleavedLedgerStorage's."""
        return [(self, "")]

    def entry_location(self, ledger_id: int, entry_id: int) -> int:
        """Where the index says the entry is; 0 when the ledger or the entry is not here."""
        index = self.cache.get(ledger_id)
        return 0 if index is None else self.cache.get_location(index, entry_id)

    def update_entry_locations(self, moved: list[tuple[int, int, int, int]]) -> None:
        """Point the index at compacted copies, ``(ledgerId, entryId, old location, new location)`` each, where it
        still points at the old location; durable on return (a checkpoint), so the old log may go."""
        cache = self.cache
        with cache.lock:
            for ledger_id, entry_id, old, new in moved:
                index = cache.ledgers.get(ledger_id)
                if index is not None and cache.get_location(index, entry_id) == old:
                    cache.set_location(index, entry_id, new)
        self.checkpoint()

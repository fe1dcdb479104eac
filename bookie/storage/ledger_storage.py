"""Ledger storage: the facade the bookie server calls — adds, reads, fencing, master keys, LACs, list of entries —
and the checkpoint and restart (replay) logic that make it crash-safe.

An add (BookKeeper: bookie/InterleavedLedgerStorage.java, order matters): 1. append to the current entry log (buffered),
2. update the index in the ledger cache, 3. journal the record, 4. acknowledge once the journal record is durable.

Directories, as BookKeeper's InterleavedLedgerStorage and BookieImpl spread them: entry logs over the ledger
directories and index files over the index directories (bookie.storage.dirs), and one journal per journal directory,
each with its own group-commit thread; a ledger's records all go to journal ``signSafeMod(ledgerId, journals)``, so
replaying the journals one after the other keeps each ledger's order. Each journal has its own lastMark.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from pathlib import Path

from bookie.codec.records import PREFIX, Walked, entry_lac, pack_record, record_ledger_id, walk_add_batch_records
from bookie.errors import BadRequest, BookieIOError, CorruptData, LedgerFenced, NoSuchEntry, NoSuchLedger, Unauthorized
from bookie.storage import journal as jf
from bookie.storage.checkpoint import highest_mark, mark_file, write_last_marks
from bookie.storage.dirs import DiskThresholds, LedgerDirs, sign_safe_mod
from bookie.storage.entry_log import EntryLogger, location
from bookie.storage.group_commit import Callback, Journal, LogMark
from bookie.storage.index import recover_relocations
from bookie.storage.ledger_cache import LedgerCache, LedgerIndex
from bookie.storage.stats import StorageStats

log = logging.getLogger(__name__)
WRITEBACK_INTERVAL = 1.0  # seconds


@dataclass(frozen=True)
class AddKey:
    master_key: bytes
    recovery: bool = False
    deferred_sync: bool = False


@dataclass
class StorageConfig:
    """Where and how the storage engine keeps its files."""

    journal_dirs: tuple[Path, ...]
    ledger_dirs: tuple[Path, ...]
    index_dirs: tuple[Path, ...]  # the ledger directories again when index files live with the entry logs
    disk: DiskThresholds = field(default_factory=DiskThresholds)
    journal_sync_data: bool = True
    journal_max_group_wait_ms: float = 2.0
    journal_flush_when_queue_empty: bool = False
    journal_buffered_writes_threshold: int = 512 * 1024
    journal_max_size_mb: int = 2048
    journal_prealloc_mb: int = 16
    journal_max_backups: int = 5
    journal_skip_corruption: bool = False  # skipReplayJournalInvalidRecord
    entry_log_size_limit: int = 1 << 30
    entry_log_flush_bytes: int = 0
    flush_interval_ms: int = 10_000
    page_limit: int = 8192
    max_entry_size: int = 5 * 1024 * 1024

    @property
    def journal_dir(self) -> Path:
        """The first journal directory (the only one, in most set-ups)."""
        return self.journal_dirs[0]

    @property
    def ledger_dir(self) -> Path:
        """The first ledger directory."""
        return self.ledger_dirs[0]

    @property
    def index_dir(self) -> Path:
        """The first index directory."""
        return self.index_dirs[0]


def walk_add_batch(
    records: bytes, known: Container[int], refused: dict[int, Exception], limit: int
) -> tuple[list[Walked], list[tuple[int, int, Exception]], dict[int, int]]:
    """The records of a batch to store (bookie/codec/records.py; those of ``known`` ledgers, not ``refused``, at most
    ``limit`` bytes), ``(ledgerId, entryId, error)`` of those refused, and the bytes to store per ledger;
    :class:`BadRequest` when the batch does not parse."""
    entries: list[Walked] = []
    failures: list[tuple[int, int, Exception]] = []
    sizes: defaultdict[int, int] = defaultdict(int)
    for walked in walk_add_batch_records(records):
        _, size, ledger_id, entry_id, _ = walked
        if ledger_id in refused:
            failures.append((ledger_id, entry_id, refused[ledger_id]))
        elif ledger_id not in known:
            failures.append((ledger_id, entry_id, BadRequest(f"no master key for ledger {ledger_id}")))
        elif size > limit or entry_id < 0:
            failures.append((ledger_id, entry_id, BadRequest(f"entry of {size} bytes over the {limit}-byte limit")))
        else:
            entries.append(walked)
            sizes[ledger_id] += PREFIX + size
    return entries, failures, sizes


def records_of(records: bytes, walked: list[Walked]) -> bytes:
    """The ``walked`` records of a batch, joined."""
    return b"".join(records[start : start + PREFIX + size] for start, size, *_ in walked)


class JournalledStorage:
    """What every ledger storage of a bookie shares: the journal (adds are acknowledged once journaled), its replay
    from lastMark on start, and the sync thread that checkpoints every flushInterval. Subclasses say where entries
    and ledger state go: :meth:`_apply` (a replayed record), :meth:`_persist` (a checkpoint's writes),
    :meth:`_writeback` (between checkpoints), :meth:`_close`."""

    def __init__(self, config: StorageConfig, stats: StorageStats | None = None):
        self.config = config
        self.stats = stats
        self.journals = [
            Journal(
                directory,
                sync_data=config.journal_sync_data,
                max_group_wait_ms=config.journal_max_group_wait_ms,
                flush_when_queue_empty=config.journal_flush_when_queue_empty,
                buffered_writes_threshold=config.journal_buffered_writes_threshold,
                max_size_mb=config.journal_max_size_mb,
                prealloc_mb=config.journal_prealloc_mb,
                stats=stats.journal_stats(index) if stats is not None else None,
            )
            for index, directory in enumerate(config.journal_dirs)
        ]
        # Set by the entry logger every flushEntrylogBytes appended, and by shutdown: wakes the sync thread.
        self._flush_due = threading.Event()
        self._checkpoint_lock = threading.Lock()
        self._checkpoint_asked = threading.Event()  # a checkpoint now, not at the next flushInterval
        self._stop = threading.Event()
        self._sync_thread: threading.Thread | None = None
        self.on_lac_advanced: Callable[[int], None] | None = None

    def journal_for(self, ledger_id: int) -> Journal:
        """The journal of a ledger's records (BookieImpl.getJournal)."""
        return self.journals[sign_safe_mod(ledger_id, len(self.journals))]

    def force(self, ledger_id: int, callback: Callback) -> None:
        """FORCE_LEDGER: ``callback`` once everything the ledger's journal took before is durable."""
        self.journal_for(ledger_id).log(b"", callback)

    def _journal_batch(
        self,
        key_records: list[bytes],
        records: bytes,
        stored: list[Walked],
        whole: bool,
        callback: Callback,
        synced: bool,
    ) -> None:
        """Journal an add batch: its master key records, then the add records ``stored`` (slices of ``records``;
        ``whole``: they are all of it, journaled as it came), each ledger's to its own journal; ``callback`` once
        all are durable (with the first error, if one failed)."""
        if not key_records and not stored:
            callback(None)
            return
        if len(self.journals) == 1:
            body = records if whole else records_of(records, stored)
            count = len(key_records) + len(stored)
            self.journals[0].log(
                b"".join(key_records) + (body if stored else b""), callback, synced=synced, records=count
            )
            return
        parts: defaultdict[int, list[bytes]] = defaultdict(list)
        for record in key_records:
            parts[sign_safe_mod(record_ledger_id(record), len(self.journals))].append(record)
        for start, size, ledger_id, _, _ in stored:
            parts[sign_safe_mod(ledger_id, len(self.journals))].append(records[start : start + PREFIX + size])
        done = _AllDone(len(parts), callback)
        for index, chunks in parts.items():
            self.journals[index].log(b"".join(chunks), done, synced=synced, records=len(chunks))

    def _journal_ledger_record(
        self, ledger_id: int, key_records: list[bytes], record: bytes, callback: Callback
    ) -> None:
        """Journal a ledger's fence or explicit LAC ``record`` after the master key records it needed first;
        ``callback`` once durable."""
        self.journal_for(ledger_id).log(b"".join(key_records) + record, callback, records=len(key_records) + 1)

    # ---- lifecycle ----
    def start(self) -> int:
        """Replay the journal from lastMark, start the journal, checkpoint; return the records replayed."""
        replayed = self.replay()
        for journal in self.journals:
            journal.start()
        self.checkpoint()
        self._sync_thread = threading.Thread(target=self._sync_loop, name="sync", daemon=True)
        self._sync_thread.start()
        return replayed

    def shutdown(self) -> None:
        """Drain the journal, checkpoint everything, close the files."""
        self._stop.set()
        self._flush_due.set()
        if self._sync_thread is not None:
            self._sync_thread.join()
        for journal in self.journals:
            journal.stop()
        self.checkpoint()
        self._close()

    def _sync_loop(self) -> None:
        """Checkpoint every flushInterval; in between, write the entry logs back every second, so that a
        checkpoint never has tens of MB to fsync at once on the journal's disk (that stalled acknowledgements
        for 100-300 ms: p99 add latency 51 ms at 10k entries/s with 10 s checkpoints, 21 ms with 1 s ones). With
        flushEntrylogBytes set, the entry logs are also written back as soon as that many bytes were appended, which
        keeps each fsync small; a checkpoint still comes every flushInterval, however often that happens."""
        interval = self.config.flush_interval_ms / 1000.0
        step = min(interval, WRITEBACK_INTERVAL)
        next_checkpoint = time.monotonic() + interval
        while True:
            self._flush_due.wait(step)
            self._flush_due.clear()  # before flushing: bytes appended during the flush signal again
            if self._stop.is_set():
                return
            try:
                if time.monotonic() >= next_checkpoint or self._checkpoint_asked.is_set():
                    self._checkpoint_asked.clear()
                    self.checkpoint()
                    next_checkpoint = time.monotonic() + interval
                else:
                    self._writeback()
            except Exception:
                log.exception("checkpoint failed")

    # ---- checkpoint and replay ----
    def checkpoint(self) -> list[LogMark]:
        """Persist everything before each journal's current durable position, then record those as lastMarks."""
        with self._checkpoint_lock:
            marks = [journal.last_log_mark for journal in self.journals]
            self._persist()
            targets = self._mark_dirs(writing=True)
            for index, mark in enumerate(marks):
                if mark.journal_id and write_last_marks(targets, mark, mark_file(index, len(marks))):
                    self._clean_journals(self.config.journal_dirs[index], mark)
            return marks

    def _clean_journals(self, directory: Path, mark: LogMark) -> None:
        older = [j for j in jf.list_journal_ids(directory) if j < mark.journal_id]
        keep = self.config.journal_max_backups
        for journal_id in older[: max(0, len(older) - keep)]:
            jf.journal_path(directory, journal_id).unlink(missing_ok=True)

    def replay(self) -> int:
        """Re-apply each journal from its lastMark: master keys, fences, explicit LACs and entries."""
        count = 0
        lacs: dict[int, int] = {}
        skipped: list[jf.Skipped] = []
        for index, directory in enumerate(self.config.journal_dirs):
            name = mark_file(index, len(self.config.journal_dirs))
            mark = highest_mark(self._mark_dirs(writing=False), name) or LogMark(0, 0)
            replayed = self._replay_journal(directory, mark, lacs, skipped)
            if replayed:
                log.info("replayed %d journal records of %s from %s", replayed, directory, mark)
            count += replayed
        if skipped:
            size = sum(s.resume - s.offset for s in skipped)
            log.error("journal replay skipped %d corrupt records (%d bytes)", len(skipped), size)
            if self.stats is not None:
                self.stats.journal_corruption_skipped(len(skipped), size)
        self._replayed(lacs)
        return count

    def _replay_journal(self, directory: Path, mark: LogMark, lacs: dict[int, int], skipped: list[jf.Skipped]) -> int:
        count = 0
        for journal_id in jf.list_journal_ids(directory):
            if journal_id < mark.journal_id:
                continue
            start = mark.offset if journal_id == mark.journal_id else jf.HEADER_SIZE
            scan = jf.JournalScan(jf.journal_path(directory, journal_id), start, self.config.journal_skip_corruption)
            for record in scan:
                self._apply(record, lacs)
                count += 1
            if scan.torn_tail is not None:
                log.warning(
                    "%s: torn tail at offset %d (a crash cut the last write): replay ends there",
                    scan.path,
                    scan.torn_tail,
                )
            for skip in scan.skipped:
                log.error(
                    "%s: skipped corrupt journal record at offset %d (%s) and %d bytes up to offset %d, "
                    "as skipReplayJournalInvalidRecord asks: entries in them are lost on this bookie",
                    scan.path,
                    skip.offset,
                    skip.reason,
                    skip.resume - skip.offset,
                    skip.resume,
                )
            skipped += scan.skipped
        return count

    # ---- what a kind of storage does ----
    def _mark_dirs(self, writing: bool) -> list[Path]:
        """The ledger directories that hold the lastMark files (BookKeeper writes them into each; ``writing``:
        those a checkpoint writes to)."""
        raise NotImplementedError

    def _apply(self, record: jf.Record, lacs: dict[int, int]) -> None:
        """Re-apply one journal record; an entry's piggy-backed LAC goes into ``lacs``."""
        raise NotImplementedError

    def _replayed(self, lacs: dict[int, int]) -> None:
        """After replay: the LACs of the ledgers that had entries replayed."""
        raise NotImplementedError

    def _persist(self) -> None:
        """Make everything stored so far durable (the checkpoint's writes, before lastMark)."""
        raise NotImplementedError

    def _writeback(self) -> None:
        """Between checkpoints, every second or flushEntrylogBytes."""
        raise NotImplementedError

    def _close(self) -> None:
        raise NotImplementedError


class LedgerStorage(JournalledStorage):
    """InterleavedLedgerStorage: entries in interleaved entry logs, each ledger's index in its index file.

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
        self.cache = LedgerCache(self.index_dirs, config.page_limit, self.entry_logger.holds)

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

    def _replayed(self, lacs: dict[int, int]) -> None:
        # Only now may the disk be read: until replay repointed them, index entries written before the crash can
        # point at entry-log bytes that were still in the lost write buffer.
        for ledger_id, lac in lacs.items():
            state = self.ledger(ledger_id)  # _apply created it
            state.lac = max(lac, self._lac_on_disk(state))

    def _apply(self, record: jf.Record, lacs: dict[int, int]) -> None:
        if record.kind == "master_key":
            self.cache.create(record.ledger_id, record.data)
            return
        state = self.cache.get(record.ledger_id) or self.cache.create(record.ledger_id, b"")
        with self.cache.lock:
            if record.kind == "fence":
                state.header.fenced = True
                state.header_dirty = True
            elif record.kind == "explicit_lac":
                state.header.explicit_lac = record.data
                state.header_dirty = True
            else:
                data = record.data
                offset = self.entry_logger.append(pack_record(data), {record.ledger_id: PREFIX + len(data)})
                self.cache.set_location(state, record.entry_id, location(self.entry_logger.current_id, offset + PREFIX))
                lacs[record.ledger_id] = max(lacs.get(record.ledger_id, -1), entry_lac(data))

    # ---- adds ----
    def _ledger_for_add(self, ledger_id: int, key: AddKey, journal: list[bytes]) -> LedgerIndex:
        state = self.cache.get(ledger_id)
        if state is None:
            state = self.cache.create(ledger_id, key.master_key)
            journal.append(jf.master_key_record(ledger_id, key.master_key))
        elif state.master_key != key.master_key:
            if state.master_key:
                raise Unauthorized(f"ledger {ledger_id}: wrong master key")
            state.header.master_key = key.master_key  # a ledger first seen by a fence record in replay
            state.header_dirty = True
            journal.append(jf.master_key_record(ledger_id, key.master_key))
        if state.fenced and not key.recovery:
            raise LedgerFenced(f"ledger {ledger_id} is fenced")
        return state

    def add_batch(
        self, keys: dict[int, AddKey], records: bytes, callback: Callback
    ) -> tuple[int, list[tuple[int, int, Exception]]]:
        """Store a batch of add records (``int32 size | framed entry`` each) and journal it; ``callback`` runs once
        it is durable. Returns how many were stored, and ``(ledgerId, entryId, error)`` for each add refused."""
        started = time.perf_counter()
        journal: list[bytes] = []
        states: dict[int, LedgerIndex] = {}
        refused: dict[int, Exception] = {}
        for ledger_id, key in keys.items():
            try:
                states[ledger_id] = self._ledger_for_add(ledger_id, key, journal)
            except (Unauthorized, LedgerFenced, BookieIOError) as exc:  # BookieIOError: no disk for its index
                refused[ledger_id] = exc
        limit = self.config.max_entry_size
        entries, failures, sizes = walk_add_batch(records, states, refused, limit)
        if failures:
            records = records_of(records, entries)
            entries, _, sizes = walk_add_batch(records, states, {}, limit)
        if entries:
            cache, logger = self.cache, self.entry_logger
            with cache.lock:
                with logger.lock:  # no roll (compaction appends too) between the append and reading its log id
                    base = logger.append(records, sizes)
                    log_id = logger.current_id
                for start, _, ledger_id, entry_id, lac in entries:
                    state = states[ledger_id]
                    cache.set_location(state, entry_id, location(log_id, base + start + PREFIX))
                    if state.lac is None or lac > state.lac:
                        self._raise_lac(state, lac)
        self._journal_batch(journal, records, entries, True, callback, not deferred(keys))
        if self.stats is not None:
            recovery = sum(keys[e[2]].recovery for e in entries) if any(k.recovery for k in keys.values()) else 0
            self.stats.adds_stored(
                len(entries),
                len(failures),
                recovery,
                sum(sizes.values()) - PREFIX * len(entries),
                time.perf_counter() - started,
            )
        return len(entries), failures

    def _raise_lac(self, state: LedgerIndex, lac: int) -> None:
        if state.lac is None:
            state.lac = self._lac_on_disk(state)
        if lac > state.lac:
            state.lac = lac
            if self.on_lac_advanced is not None:
                self.on_lac_advanced(state.ledger_id)

    # ---- fencing and LAC ----
    def fence(self, ledger_id: int, master_key: bytes, callback: Callback) -> None:
        """Fence the ledger (creating it locally if unknown); ``callback`` runs once the fence record is durable."""
        journal: list[bytes] = []
        state = self._ledger_for_add(ledger_id, AddKey(master_key, recovery=True), journal)
        with self.cache.lock:
            state.header.fenced = True
            state.header_dirty = True
        self._journal_ledger_record(ledger_id, journal, jf.fence_record(ledger_id), callback)

    def write_explicit_lac(
        self, ledger_id: int, master_key: bytes, lac: int, buffer: bytes, callback: Callback
    ) -> None:
        journal: list[bytes] = []
        state = self._ledger_for_add(ledger_id, AddKey(master_key, recovery=True), journal)
        with self.cache.lock:
            state.header.explicit_lac = buffer
            state.header_dirty = True
            self._raise_lac(state, lac)
        self._journal_ledger_record(ledger_id, journal, jf.explicit_lac_record(ledger_id, buffer), callback)

    def _lac_on_disk(self, state: LedgerIndex) -> int:
        """After a restart: the piggy-backed LAC of the last entry stored."""
        if state.last_entry < 0:
            return -1
        try:
            entry = self.read_entry(state.ledger_id, state.last_entry)
        except NoSuchEntry:
            return -1
        except CorruptData as exc:  # e.g. an entry never acknowledged whose data a power loss took
            log.error("ledger %d: cannot read its last entry for the LAC: %s", state.ledger_id, exc)
            return -1
        return entry_lac(entry)

    def ledger(self, ledger_id: int) -> LedgerIndex:
        state = self.cache.get(ledger_id)
        if state is None:
            raise NoSuchLedger(f"ledger {ledger_id} is not on this bookie", ledger_id=ledger_id)
        return state

    def master_key(self, ledger_id: int) -> bytes | None:
        """The ledger's master key; None: no such ledger, or no key known yet."""
        state = self.cache.get(ledger_id)
        return (state.master_key or None) if state is not None else None

    def lac(self, ledger_id: int) -> int:
        state = self.ledger(ledger_id)
        if state.lac is None:
            state.lac = self._lac_on_disk(state)
        return state.lac

    def explicit_lac(self, ledger_id: int) -> bytes | None:
        return self.ledger(ledger_id).header.explicit_lac

    def is_fenced(self, ledger_id: int) -> bool:
        return self.ledger(ledger_id).fenced

    # ---- reads ----
    def read_entry(self, ledger_id: int, entry_id: int) -> bytes:
        """The framed entry; ``entry_id`` -1 = the highest entry stored."""
        state = self.ledger(ledger_id)
        if entry_id == -1:
            entry_id = state.last_entry
        loc = self.cache.get_location(state, entry_id)
        if not loc:
            raise NoSuchEntry(f"ledger {ledger_id} entry {entry_id} is not on this bookie")
        try:
            return self.entry_logger.read(loc, ledger_id, entry_id)
        except CorruptData:
            moved = self.cache.get_location(state, entry_id)
            if moved == loc:
                raise
            return self.entry_logger.read(moved, ledger_id, entry_id)  # compaction moved it while we read

    def last_entry_id(self, ledger_id: int) -> int:
        return self.ledger(ledger_id).last_entry

    def entry_ids(self, ledger_id: int) -> list[int]:
        """The entries the index holds for the ledger (the entry logs are not read)."""
        return self.cache.entry_ids(self.ledger(ledger_id))

    def ledger_ids(self) -> list[int]:
        return self.cache.ledger_ids()

    def delete_ledger(self, ledger_id: int) -> None:
        """Forget the ledger's index (garbage collection reclaims its entry-log space)."""
        self.cache.delete(ledger_id)

    # ---- compaction (bookie.storage.gc.Compactable) ----
    def entry_location(self, ledger_id: int, entry_id: int) -> int:
        """Where the index says the entry is; 0 when the ledger or the entry is not here."""
        state = self.cache.get(ledger_id)
        return 0 if state is None else self.cache.get_location(state, entry_id)

    def update_entry_locations(self, moved: list[tuple[int, int, int, int]]) -> None:
        """Point the index at compacted copies, ``(ledgerId, entryId, old location, new location)`` each, where it
        still points at the old location; durable on return (a checkpoint), so the old log may go."""
        cache = self.cache
        with cache.lock:
            for ledger_id, entry_id, old, new in moved:
                state = cache.ledgers.get(ledger_id)
                if state is not None and cache.get_location(state, entry_id) == old:
                    cache.set_location(state, entry_id, new)
        self.checkpoint()


def deferred(keys: dict[int, AddKey]) -> bool:
    """A batch of DEFERRED_SYNC adds only: acknowledged once written, not synced."""
    return all(k.deferred_sync for k in keys.values())


class _AllDone:
    """A journal callback that calls ``callback`` once it was called ``n`` times, with the first error."""

    def __init__(self, n: int, callback: Callback):
        self._left, self._callback = n, callback
        self._error: BaseException | None = None
        self._lock = threading.Lock()

    def __call__(self, error: BaseException | None) -> None:
        with self._lock:
            self._left -= 1
            self._error = self._error or error
            if self._left:
                return
        self._callback(self._error)

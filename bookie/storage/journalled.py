"""The journalled half of every ledger storage: adds are acknowledged once their journal record is durable; a
checkpoint every flushInterval makes what the engine stored durable and then records each journal's position as its
lastMark; a start replays every journal from its lastMark.

Directories, as BookKeeper's BookieImpl spreads them: one journal per journal directory, each with its own
group-commit thread; a ledger's records all go to journal ``signSafeMod(ledgerId, journals)``, so replaying the
journals one after the other keeps each ledger's order. Each journal has its own lastMark.
"""

from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod
from collections import defaultdict
from pathlib import Path

from bookie.codec.records import PREFIX, Walked, record_ledger_id
from bookie.storage import journal as jf
from bookie.storage.checkpoint import highest_mark, mark_file, write_last_marks
from bookie.storage.config import StorageConfig
from bookie.storage.dirs import sign_safe_mod
from bookie.storage.disk_errors import DiskErrors
from bookie.storage.group_commit import Callback, Journal, LogMark
from bookie.storage.stats import StorageStats

log = logging.getLogger(__name__)
WRITEBACK_INTERVAL = 1.0  # seconds


def records_of(records: bytes, walked: list[Walked]) -> bytes:
    """The ``walked`` records of a batch, joined."""
    return b"".join(records[start : start + PREFIX + size] for start, size, *_ in walked)


class JournalledStorage(ABC):
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
        self.disk_errors = DiskErrors(config.read_errors_to_fail)  # the ledger disks: failed reads, checkpoints
        # Set by the entry logger every flushEntrylogBytes appended, and by shutdown: wakes the sync thread.
        self._flush_due = threading.Event()
        self._checkpoint_lock = threading.Lock()
        self._checkpoint_asked = threading.Event()  # a checkpoint now, not at the next flushInterval
        self._stop = threading.Event()
        self._sync_thread: threading.Thread | None = None

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
        try:
            self.checkpoint()
        except OSError as exc:  # a failed disk: the journal, kept from lastMark on, replays it all at the next start
            log.error("the last checkpoint failed (%s): the next start replays the journal instead", exc)
        try:
            self._close()
        except OSError as exc:
            log.error("closing the storage's files: %s", exc)

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
            except OSError as exc:  # the ledger disks: what is not written stays in the journal, which is kept
                self.disk_errors.fail(f"a checkpoint could not write to them ({exc})")
                return
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
        if mark.journal_id and not jf.holds_position(directory, mark.journal_id, mark.offset):
            log.warning(
                "%s: lastMark %s points past what journal %x holds (the disk lost synced writes, the journal was "
                "replaced, or journalSyncData=false): replay starts after it, from whatever the journal still has",
                directory,
                mark,
                mark.journal_id,
            )
        for journal_id in jf.list_journal_ids(directory):
            if journal_id < mark.journal_id:
                continue
            start = mark.offset if journal_id == mark.journal_id else jf.HEADER_SIZE
            scan = jf.JournalScan(jf.journal_path(directory, journal_id), start, self.config.journal_skip_corruption)
            for record in scan:
                self._apply(record, lacs)
                count += 1
            if scan.blank:
                log.warning("%s: nothing but zeros (a crash while it was created): no records", scan.path)
            if scan.unfinished is not None:
                log.warning(
                    "%s: the last write, from offset %d, did not reach the disk whole (a crash cut it): its %d "
                    "records were never acknowledged, and are not replayed",
                    scan.path,
                    *scan.unfinished,
                )
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
    @abstractmethod
    def _mark_dirs(self, writing: bool) -> list[Path]:
        """The ledger directories that hold the lastMark files (BookKeeper writes them into each; ``writing``:
        those a checkpoint writes to)."""

    @abstractmethod
    def _apply(self, record: jf.Record, lacs: dict[int, int]) -> None:
        """Re-apply one journal record; an entry's piggy-backed LAC goes into ``lacs``."""

    @abstractmethod
    def _replayed(self, lacs: dict[int, int]) -> None:
        """After replay: the LACs of the ledgers that had entries replayed."""

    @abstractmethod
    def _persist(self) -> None:
        """Make everything stored so far durable (the checkpoint's writes, before lastMark)."""

    @abstractmethod
    def _writeback(self) -> None:
        """Between checkpoints, every second or flushEntrylogBytes."""

    @abstractmethod
    def _close(self) -> None:
        """Close the engine's files."""


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

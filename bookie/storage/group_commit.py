"""The journal thread: group commit (BookKeeper: bookie/Journal.java).

Callers enqueue records with a callback. The thread takes everything pending, waiting at most
``journalMaxGroupWaitMSec`` after the oldest record or until ``journalBufferedWritesThreshold`` bytes are
pending (or, with ``journalFlushWhenQueueEmpty``, only until the queue is empty), writes the group with one call,
fsyncs (``journalSyncData``), advances the in-memory lastLogMark, and only then runs the callbacks of the group —
which is when adds are acknowledged.

With ``stats`` (bookie.storage.stats.JournalStats), the thread records BookKeeper's journal metrics: how long records
waited in the queue and until acknowledged, each group's write and fsync, why a group was closed.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from bookie.storage.journal import JournalFile, list_journal_ids
from bookie.storage.stats import JournalStats

log = logging.getLogger(__name__)
Callback = Callable[[BaseException | None], None]


class LogMark(NamedTuple):
    journal_id: int
    offset: int


class _Pending(NamedTuple):
    data: bytes  # empty: FORCE_LEDGER, only an fsync
    callback: Callback | None
    enqueued: float
    synced: bool  # False: DEFERRED_SYNC, acknowledged once written
    records: int  # journal records in data


class Journal:
    def __init__(
        self,
        directory: Path,
        sync_data: bool = True,
        max_group_wait_ms: float = 2.0,
        buffered_writes_threshold: int = 512 * 1024,
        max_size_mb: int = 2048,
        prealloc_mb: int = 16,
        flush_when_queue_empty: bool = False,
        stats: JournalStats | None = None,
    ):
        self.directory = Path(directory)
        self.sync_data = sync_data
        self.max_wait = max_group_wait_ms / 1000.0
        self.threshold = buffered_writes_threshold
        self.flush_when_queue_empty = flush_when_queue_empty
        self.max_size = max_size_mb * 1024 * 1024
        self.prealloc = prealloc_mb * 1024 * 1024
        self.stats = stats
        self._queue: queue.SimpleQueue[_Pending | None] = queue.SimpleQueue()
        self._file: JournalFile | None = None
        self._mark = LogMark(0, 0)
        self._mark_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        # called once, on the journal thread, when a write or fsync fails (the bookie turns read-only)
        self.on_failure: Callable[[BaseException], None] | None = None
        # records queued and taken: each written by one thread only, so neither loses an update
        self._queued = self._taken = 0

    @property
    def last_log_mark(self) -> LogMark:
        """Everything before this position is durable in the journal."""
        with self._mark_lock:
            return self._mark

    def _new_file(self) -> None:
        started = time.perf_counter()
        existing = list_journal_ids(self.directory)
        journal_id = max(int(time.time() * 1000), (existing[-1] + 1) if existing else 0)
        if self._file is not None:
            self._file.close()
        self._file = JournalFile(self.directory, journal_id, self.prealloc)
        with self._mark_lock:
            self._mark = LogMark(journal_id, self._file.position)
        if self.stats is not None:
            self.stats.creation.event(time.perf_counter() - started)
        log.info("journal %s opened", self._file.path)

    def start(self) -> None:
        self._new_file()
        self._thread = threading.Thread(target=self._run, name="journal", daemon=True)
        self._thread.start()

    def queue_depth(self) -> int:
        """Records waiting for the journal thread (a FORCE_LEDGER counts as one, as in BookKeeper's queue)."""
        return self._queued - self._taken

    def log(self, data: bytes, callback: Callback | None = None, synced: bool = True, records: int = 1) -> None:
        """Enqueue ``records`` records (each ``int32 length | body``); ``callback(None)`` runs once they are
        durable, ``callback(error)`` if the journal failed. Empty ``data``: wait for what is queued (FORCE_LEDGER)."""
        if self._failure is not None:
            if callback:
                callback(self._failure)
            return
        item = _Pending(data, callback, time.monotonic(), synced, records if data else 1)
        self._queued += item.records
        self._queue.put(item)

    def stop(self) -> None:
        """Flush what is queued, then stop the thread."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        if self._file is not None:
            self._file.close()
            self._file = None

    def _take(self, item: _Pending) -> None:
        self._taken += item.records
        if self.stats is not None:
            self.stats.queue_latency.event(time.monotonic() - item.enqueued, True, item.records)

    def _run(self) -> None:
        stopping = False
        while not stopping:
            first = self._queue.get()
            if first is None:
                return
            began = time.perf_counter()
            self._take(first)
            group = [first]
            size = len(first.data)
            deadline = first.enqueued + self.max_wait
            # why the group ends: BookKeeper's JOURNAL_NUM_FLUSH_*, as the name of its counter in JournalStats
            closed_by: str | None = "flush_max_outstanding_bytes"
            while size < self.threshold:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    if self.flush_when_queue_empty:
                        closed_by = "flush_empty_queue"
                        break
                    closed_by = "flush_max_wait"
                    wait = deadline - time.monotonic()
                    if wait <= 0:
                        break
                    try:
                        item = self._queue.get(timeout=wait)
                    except queue.Empty:
                        break
                if item is None:
                    stopping, closed_by = True, None
                    break
                self._take(item)
                group.append(item)
                size += len(item.data)
                closed_by = "flush_max_outstanding_bytes"
            if self.stats is not None and closed_by:
                getattr(self.stats, closed_by).inc()
            self._commit(group, size, began)

    def _commit(self, group: list[_Pending], size: int, began: float) -> None:
        error = None
        stats = self.stats
        records = sum(p.records for p in group if p.data)
        try:
            journal = self._file
            assert journal is not None, "the journal thread runs between start() and stop(), which open and close it"
            data = b"".join(p.data for p in group)
            written = time.perf_counter()
            position = journal.append(data) if data else journal.position  # FORCE_LEDGER: only the fsync
            if stats is not None:
                stats.flush.event(time.perf_counter() - written)
                stats.batch_entries.values(records, 1)
                stats.batch_bytes.values(size, 1)
                stats.write_bytes.value += size - 4 * records
                stats.force_write_queue.value += 1
            self._acknowledge([p for p in group if not p.synced], None)
            if stats is not None:
                stats.force_write_queue.value -= 1
            if self.sync_data:
                syncing = time.perf_counter()
                try:
                    journal.sync()
                except BaseException:
                    if stats is not None:
                        stats.sync.event(time.perf_counter() - syncing, False)
                    raise
                if stats is not None:
                    stats.sync.event(time.perf_counter() - syncing)
                    stats.grouping.values(records, 1)
            with self._mark_lock:
                self._mark = LogMark(journal.id, position)
            if position >= self.max_size:
                self._new_file()
        except BaseException as exc:  # noqa: BLE001 - a failed journal fails every add from now on; _fail logs it
            self._fail(exc, sum(p.records for p in group if p.synced))
            error = exc
        self._acknowledge([p for p in group if p.synced or error], error)
        if stats is not None:
            stats.process_time.event(time.perf_counter() - began)

    def _fail(self, exc: BaseException, unacknowledged: int) -> None:
        """The journal takes nothing more: after a failed write or fsync what reached its disk is unknown (a failed
        fsync may have dropped the dirty pages it could not write), so no later fsync can vouch for them."""
        where = self._file.path if self._file is not None else self.directory
        if isinstance(exc, OSError):
            log.error(
                "journal %s failed: %s; %d records of this group were not acknowledged, and no add is taken until "
                "the bookie restarts",
                where,
                exc,
                unacknowledged,
            )
        else:
            log.exception("journal %s failed", where)
        first = self._failure is None
        self._failure = exc
        if first and self.on_failure is not None:
            self.on_failure(exc)

    def _acknowledge(self, items: list[_Pending], error: BaseException | None) -> None:
        """Run the callbacks; count each record once (a DEFERRED_SYNC one when written, even if its fsync fails)."""
        now = time.monotonic()
        for p in items:
            if p.callback:
                p.callback(error)
            if self.stats is not None and (p.synced or error is None):
                stats = self.stats.add_entry if p.data else self.stats.force_ledger
                stats.event(now - p.enqueued, error is None, p.records)

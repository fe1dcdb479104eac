"""The journal thread: group commit (spec/bookie-storage.md).

Callers enqueue records with a callback. The thread takes everything pending, waiting at most
``journalMaxGroupWaitMSec`` after the oldest record or until ``journalBufferedWritesThreshold`` bytes are
pending (or, with ``journalFlushWhenQueueEmpty``, only until the queue is empty), writes the group with one call,
fsyncs (``journalSyncData``), advances the in-memory lastLogMark, and only then runs the callbacks of the group —
which is when adds are acknowledged.
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

log = logging.getLogger(__name__)
Callback = Callable[[BaseException | None], None]


class LogMark(NamedTuple):
    journal_id: int
    offset: int


class _Pending(NamedTuple):
    data: bytes
    callback: Callback | None
    enqueued: float
    synced: bool  # False: DEFERRED_SYNC, acknowledged once written


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
        stats=None,
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

    @property
    def last_log_mark(self) -> LogMark:
        """Everything before this position is durable in the journal."""
        with self._mark_lock:
            return self._mark

    def _new_file(self) -> None:
        existing = list_journal_ids(self.directory)
        journal_id = max(int(time.time() * 1000), (existing[-1] + 1) if existing else 0)
        if self._file is not None:
            self._file.close()
        self._file = JournalFile(self.directory, journal_id, self.prealloc)
        with self._mark_lock:
            self._mark = LogMark(journal_id, self._file.position)
        log.info("journal %s opened", self._file.path)

    def start(self) -> None:
        self._new_file()
        self._thread = threading.Thread(target=self._run, name="journal", daemon=True)
        self._thread.start()

    def queue_depth(self) -> int:
        return self._queue.qsize()

    def log(self, data: bytes, callback: Callback | None = None, synced: bool = True) -> None:
        """Enqueue records (each ``int32 length | body``); ``callback(None)`` runs once they are durable,
        ``callback(error)`` if the journal failed."""
        if self._failure is not None:
            if callback:
                callback(self._failure)
            return
        self._queue.put(_Pending(data, callback, time.monotonic(), synced))

    def stop(self) -> None:
        """Flush what is queued, then stop the thread."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        if self._file is not None:
            self._file.close()
            self._file = None

    def _run(self) -> None:
        stopping = False
        while not stopping:
            first = self._queue.get()
            if first is None:
                return
            group = [first]
            size = len(first.data)
            deadline = first.enqueued + self.max_wait
            while size < self.threshold:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    if self.flush_when_queue_empty:
                        break
                    wait = deadline - time.monotonic()
                    if wait <= 0:
                        break
                    try:
                        item = self._queue.get(timeout=wait)
                    except queue.Empty:
                        break
                if item is None:
                    stopping = True
                    break
                group.append(item)
                size += len(item.data)
            self._commit(group, size)

    def _commit(self, group: list[_Pending], size: int) -> None:
        error = None
        try:
            journal = self._file
            data = b"".join(p.data for p in group)
            position = journal.append(data) if data else journal.position  # FORCE_LEDGER: only the fsync
            for p in group:
                if not p.synced and p.callback:
                    p.callback(None)
            started = time.perf_counter()
            if self.sync_data:
                journal.sync()
            if self.stats:
                self.stats.journal_sync(time.perf_counter() - started, len(group), size)
            with self._mark_lock:
                self._mark = LogMark(journal.id, position)
            if position >= self.max_size:
                self._new_file()
        except BaseException as exc:  # a failed journal fails every add from now on
            log.exception("journal write failed")
            error = self._failure = exc
        for p in group:
            if p.callback and (p.synced or error):
                p.callback(error)

"""I/O errors on a bookie's ledger disks. A read error answers its read with EIO and is counted; they are logged a line
at most every ``LOG_EVERY`` seconds (a failing disk fails every read: one line per read would bury the log); and
``limit`` of them within ``window`` seconds declare the disks failed (BookKeeper's ``LedgerDirsListener.diskFailed``,
on which a bookie shuts down, so that its ledgers are re-replicated from their other copies). A checkpoint that
cannot write declares them failed at once (:meth:`fail`, BookKeeper's ``fatalError``)."""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable

log = logging.getLogger(__name__)
LOG_EVERY = 10.0


class DiskErrors:
    def __init__(self, limit: int, window: float = 60.0, clock: Callable[[], float] = time.monotonic):
        self.limit, self.window, self.clock = limit, window, clock
        self.total = 0
        self.failed: str | None = None  # why the disks were declared failed
        self.on_failed: Callable[[str], None] | None = None  # called once, on the thread that recorded the last error
        self._recent: deque[float] = deque()
        self._logged_at = float("-inf")
        self._unlogged = 0
        self._lock = threading.Lock()

    def record(self, exc: OSError, what: str) -> None:
        """An I/O error reading ``what`` (e.g. "ledger 7 entry 3")."""
        now = self.clock()
        declare = None
        with self._lock:
            self.total += 1
            self._recent.append(now)
            while self._recent[0] <= now - self.window:
                self._recent.popleft()
            if now - self._logged_at >= LOG_EVERY:
                more = f" ({self._unlogged} more since the last such line)" if self._unlogged else ""
                log.error("I/O error reading %s: %s%s", what, exc, more)
                self._logged_at, self._unlogged = now, 0
            else:
                self._unlogged += 1
            if self.limit and self.failed is None and len(self._recent) >= self.limit:
                declare = self.failed = (
                    f"{len(self._recent)} I/O errors reading its disks in {self.window:g} s (the last: {what}: {exc})"
                )
        if declare is not None and self.on_failed is not None:
            self.on_failed(declare)

    def fail(self, reason: str) -> None:
        """The disks failed at once (a write the bookie cannot do without: BookKeeper's SyncThread fatalError)."""
        with self._lock:
            first, self.failed = self.failed is None, self.failed or reason
        if first and self.on_failed is not None:
            self.on_failed(reason)

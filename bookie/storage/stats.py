"""What the storage engine records its metrics into, as it sees them: the bookie hands it ``BookieStats`` and its
``JournalStats`` (bookie/server/metrics.py), whose metrics follow BookKeeper's stats API (``OpStatsLogger``,
``Counter`` in apache/bookkeeper's ``bookkeeper-stats``). Storage depends on these shapes, never on the server.
"""

from __future__ import annotations

from typing import Protocol


class OpStatsLogger(Protocol):
    def event(self, seconds: float, success: bool = True, n: int = 1) -> None:
        """``n`` events that took ``seconds`` each."""

    def values(self, total: int, n: int, success: bool = True) -> None:
        """``n`` values adding up to ``total``."""


class Counter(Protocol):
    value: int

    def inc(self, n: int = 1) -> None: ...


class JournalStats(Protocol):
    """Recorded by the journal thread (group_commit.py)."""

    @property
    def add_entry(self) -> OpStatsLogger: ...  # enqueued -> acknowledged, per record
    @property
    def force_ledger(self) -> OpStatsLogger: ...
    @property
    def sync(self) -> OpStatsLogger: ...  # the fsync of a group
    @property
    def creation(self) -> OpStatsLogger: ...  # a new journal file
    @property
    def flush(self) -> OpStatsLogger: ...  # the write of a group, before its fsync
    @property
    def process_time(self) -> OpStatsLogger: ...  # first dequeue -> group done
    @property
    def queue_latency(self) -> OpStatsLogger: ...  # enqueued -> dequeued, per record
    @property
    def grouping(self) -> OpStatsLogger: ...  # records per fsync
    @property
    def batch_entries(self) -> OpStatsLogger: ...  # records per write
    @property
    def batch_bytes(self) -> OpStatsLogger: ...
    @property
    def force_write_queue(self) -> Counter: ...
    @property
    def flush_max_wait(self) -> Counter: ...  # why a group was closed: these three
    @property
    def flush_max_outstanding_bytes(self) -> Counter: ...
    @property
    def flush_empty_queue(self) -> Counter: ...
    @property
    def write_bytes(self) -> Counter: ...


class StorageStats(Protocol):
    """Recorded by ledger storage."""

    def journal_stats(self, index: int) -> JournalStats:
        """The metrics of journal ``index`` (one per journal directory)."""

    def adds_stored(self, added: int, failed: int, recovery: int, size: int, seconds: float) -> None: ...

    def journal_corruption_skipped(self, records: int, size: int) -> None: ...

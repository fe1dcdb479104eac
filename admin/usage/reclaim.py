"""What a GC run would reclaim, by bookie/storage/gc.py's rules (``_update_logs`` then ``_compact_logs``):

1. The run forgets the ledgers the metadata no longer has (its ledger GC comes first), so a log's live ledgers are
   those the bookie's index has and the metadata still has. A replica the bookie no longer owns stays live until
   ``gcOverreplicatedLedgerWaitTime`` has passed: counted live here.
2. A sealed log left with no live ledger is deleted outright, whatever the kind and threshold, compaction disabled
   or not.
3. Compaction takes the sealed logs by usage, emptiest first (usage: live bytes over the bytes of all the ledgers
   its ledgers map lists), and stops at the first whose usage is not under the threshold. Each one's live entries
   are copied into a new log (a header, the copies, a ledgers map), and the old log deleted: it reclaims the old
   log's size less the new one's. A log whose compaction failed last time (stalled) is counted as failing again:
   the GC tries it and goes on with the others, and usage names it under a stalled-log reason.

The active log is never compacted or deleted: it is not sealed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from bookie.storage.entry_log import HEADER_SIZE, MAP_BATCH, MAP_BATCH_HEADER, MAP_ENTRY

LogKey = tuple[str, int]  # (ledger directory, log id): a log's identity on a bookie


@dataclass(frozen=True)
class GcLog:
    """A log as a GC run sees it."""

    log_id: int
    size: int  # bytes of the file
    total: int  # bytes of every ledger its ledgers map lists
    live: int  # bytes of its live ledgers (point 1 above)
    live_ledgers: int  # how many
    active: bool = False
    stalled: bool = False
    directory: str = ""  # DbLedgerStorage numbers the logs of each ledger directory apart

    @property
    def key(self) -> LogKey:
        return self.directory, self.log_id

    @property
    def usage(self) -> float:
        return self.live / self.total if self.total else 0.0


@dataclass
class Reclaim:
    """What a run would do at ``threshold``: logs deleted (no live ledger) and compacted, bytes reclaimed and
    copied."""

    threshold: float
    deleted: list[LogKey] = field(default_factory=list)
    compacted: list[LogKey] = field(default_factory=list)
    reclaimed: int = 0
    copied: int = 0

    def doc(self) -> dict:
        return {
            "threshold": self.threshold,
            "reclaimableBytes": self.reclaimed,
            "copiedBytes": self.copied,
            "logsDeleted": [{"logId": log_id, "directory": d} for d, log_id in self.deleted],
            "logsCompacted": [{"logId": log_id, "directory": d} for d, log_id in self.compacted],
        }


def new_log_size(copied: int, ledgers: int) -> int:
    """The size of a compaction's new log: its header, the copies and its ledgers map (batches of ``MAP_BATCH``)."""
    batches = -(-ledgers // MAP_BATCH)
    return HEADER_SIZE + copied + batches * MAP_BATCH_HEADER.size + ledgers * MAP_ENTRY.size


def reclaimable(logs: Iterable[GcLog], threshold: float, compact: bool = True) -> Reclaim:
    """What a run would reclaim at ``threshold``; ``compact=False``: a run with no compaction (disabled), which
    only deletes the logs left with nothing live."""
    result = Reclaim(threshold)
    sealed = [log for log in logs if not log.active]
    for log in sealed:
        if log.live_ledgers == 0:
            result.deleted.append(log.key)
            result.reclaimed += log.size
    if not compact:
        return result
    for log in sorted((log for log in sealed if log.live_ledgers), key=lambda log: log.usage):
        if log.usage >= threshold:
            break
        if log.stalled:
            continue
        result.compacted.append(log.key)
        result.reclaimed += max(0, log.size - new_log_size(log.live, log.live_ledgers))
        result.copied += log.live
    return result

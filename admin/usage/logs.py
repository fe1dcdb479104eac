"""Each entry log of a bookie: its ledgers with their states, live and dead bytes, and how a GC run sees it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from admin.usage.ledgers import LIVE, LedgerFacts
from admin.usage.reclaim import GcLog, LogKey
from bookie.meta.ledger_metadata import LedgerMetadata
from bookie.storage.usage import StorageView


@dataclass
class LogUsage:
    log_id: int
    directory: str
    size: int
    ledgers: list[tuple[LedgerFacts, int]]  # every ledger it holds, with its bytes in it, largest first
    age_s: float
    active: bool
    stalled: str
    gc: GcLog  # as a GC run sees it

    @property
    def key(self) -> LogKey:
        return self.directory, self.log_id

    @property
    def live(self) -> int:
        """Bytes of the ledgers the bookie owns by the metadata and has in its index."""
        return sum(size for ledger, size in self.ledgers if ledger.state in LIVE)

    @property
    def dead(self) -> int:
        return self.size - self.live


def gc_logs(view: StorageView, metadata: Mapping[int, LedgerMetadata]) -> dict[LogKey, GcLog]:
    """Each log as the next GC run sees it (admin/usage/reclaim.py): live ledgers are in the index and the
    metadata."""
    result = {}
    for log in view.logs:
        live = {lid: size for lid, size in log.ledgers.items() if lid in view.local_ledgers and lid in metadata}
        result[log.directory, log.log_id] = GcLog(
            log.log_id,
            log.size,
            sum(log.ledgers.values()),
            sum(live.values()),
            len(live),
            active=log.active,
            stalled=bool(log.stalled),
            directory=log.directory,
        )
    return result

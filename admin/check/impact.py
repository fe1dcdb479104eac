"""check-impact: if these bookies went away now, which ledgers would drop below AQ or WQ, or lose an entry?

Bookies already gone (not registered) count as gone too: losing "one more" is what operators ask about. This works
from metadata and the write-set rule, for open and closed ledgers alike, without asking any bookie.
"""

from __future__ import annotations

from dataclasses import dataclass

from admin.check import categories as cat
from bookie.meta.ledger_metadata import LedgerMetadata


@dataclass
class Impact:
    ledger_id: int
    category: str
    segment: int
    lost_bookies: list[str]  # of that segment's ensemble

    def doc(self) -> dict:
        return {
            "ledgerId": self.ledger_id,
            "category": self.category,
            "segment": self.segment,
            "bookies": self.lost_bookies,
        }


def ledger_impact(ledger_id: int, md: LedgerMetadata, gone: set[str]) -> Impact | None:
    """The worst segment of the ledger once ``gone`` are gone (entries that exist, by the metadata)."""
    worst = None
    for i, segment in enumerate(md.segments):
        first = segment.first_entry_id
        unbounded = not md.is_closed and i == len(md.segments) - 1  # an open ledger's last segment: no end yet
        end = None if unbounded else md.segment_end(i, md.last_entry_id)
        if end is not None and end < first:
            continue  # a segment without entries
        lost = [index for index, b in enumerate(segment.bookies) if b in gone]
        if not lost:
            continue
        entries = md.ensemble_size if end is None else min(md.ensemble_size, end - first + 1)
        most = max(
            sum(1 for w in range(md.write_quorum_size) if (first + k + w) % md.ensemble_size in lost)
            for k in range(entries)
        )
        category = cat.replica_category(md.write_quorum_size, md.ack_quorum_size, most)
        if category and (worst is None or most > worst[0]):
            worst = (most, Impact(ledger_id, category, first, [segment.bookies[i] for i in lost]))
    return worst[1] if worst else None


UNSAFE = frozenset({cat.NO_REPLICA, cat.LESS_THAN_AQ})

"""The replicas check of one ledger: what each bookie of each segment must hold by the write-set rule, against
what it says it holds (GET_LIST_OF_ENTRIES_OF_LEDGER, from its index alone)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from admin.check.categories import replica_category
from bookie.codec.availability import AvailabilityOfEntries
from bookie.codec.write_set import entries_of_bookie
from bookie.meta.ledger_metadata import LedgerMetadata


@dataclass
class ReplicaFinding:
    category: str
    segment: int  # first entry id of the worst segment
    bookies: list[str]  # bookies missing entries
    missing_entries: dict[str, list[int]] = field(default_factory=dict)  # bookie -> entries it lacks


def segment_ranges(md: LedgerMetadata) -> list[tuple[int, int, tuple[str, ...]]]:
    """``(first, last, ensemble)`` of every segment holding entries (last = lastEntryId for the final one)."""
    out = []
    for i, segment in enumerate(md.segments):
        last = md.segment_end(i, md.last_entry_id)
        if last >= segment.first_entry_id:
            out.append((segment.first_entry_id, last, segment.bookies))
    return out


def analyse(md: LedgerMetadata, held: dict[str, AvailabilityOfEntries]) -> ReplicaFinding | None:
    """The ledger's worst replica shortfall, or None when every bookie holds what it must.

    ``held`` maps each bookie of the ensembles to what it holds; a bookie without data (ENOLEDGER, or gone from
    the cluster) maps to an empty availability.
    """
    worst = None
    for first, last, bookies in segment_ranges(md):
        missing_copies: Counter[int] = Counter()
        missing_by_bookie: dict[str, list[int]] = {}
        for index, bookie_id in enumerate(bookies):
            available = held[bookie_id]
            expected = entries_of_bookie(index, first, last, md.ensemble_size, md.write_quorum_size)
            lacking = available.unavailable(expected)
            if lacking:
                missing_by_bookie[bookie_id] = lacking
                missing_copies.update(lacking)
        if not missing_copies:
            continue
        most = max(missing_copies.values())
        category = replica_category(md.write_quorum_size, md.ack_quorum_size, most)
        assert category is not None  # most >= 1: an entry lacks a copy
        if worst is None or most > worst[0]:
            worst = (most, ReplicaFinding(category, first, sorted(missing_by_bookie), missing_by_bookie))
    return worst[1] if worst else None

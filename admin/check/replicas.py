"""The replicas check of one ledger: what each bookie of each segment must hold by the write-set rule, against
what it says it holds (GET_LIST_OF_ENTRIES_OF_LEDGER, from its index alone)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from admin.check.categories import replica_category
from bookie.codec.availability import AvailabilityOfEntries
from bookie.codec.write_set import entries_of_bookie, write_set
from bookie.meta.ledger_metadata import LedgerMetadata


@dataclass
class ReplicaFinding:
    category: str
    segment: int  # first entry id of the worst segment
    bookies: list[str]  # bookies missing entries
    missing_entries: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # bookie -> runs it lacks
    missing_counts: dict[str, int] = field(default_factory=dict)  # bookie -> how many entries it lacks


def format_runs(runs: Iterable[tuple[int, int]], limit: int | None = None) -> str:
    """``0-4, 9, 12-20``; past ``limit`` runs, ``... and N more runs``."""
    runs = list(runs)
    shown = runs if limit is None else runs[:limit]
    text = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in shown)
    return text + (f" and {len(runs) - len(shown)} more runs" if len(shown) < len(runs) else "")


def missing_runs(expected: Iterable[int], lacking: list[int]) -> list[tuple[int, int]]:
    """``lacking``, a subsequence of ``expected``, as ``(first, last)`` runs of consecutive items of ``expected``.

    Runs follow what the bookie must hold, not every id: with E 3 and WQ 2 a wiped bookie lacks 0, 1, 3, 4, 6, ...,
    one run ``(0, last)`` of its share instead of a pair per stripe, so a lost ledger is one run per segment.
    """
    runs: list[tuple[int, int]] = []
    at, start, previous = 0, None, None
    for entry in expected:
        if at < len(lacking) and lacking[at] == entry:
            at += 1
            start = entry if start is None else start
            previous = entry
        elif start is not None:
            runs.append((start, previous))  # type: ignore[arg-type]
            start = None
    if start is not None:
        runs.append((start, previous))  # type: ignore[arg-type]
    return runs


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
        missing_by_bookie: dict[str, list[tuple[int, int]]] = {}
        counts: dict[str, int] = {}
        for index, bookie_id in enumerate(bookies):
            available = held[bookie_id]
            share = (index, first, last, md.ensemble_size, md.write_quorum_size)
            lacking = available.unavailable(entries_of_bookie(*share))
            if lacking:
                missing_by_bookie[bookie_id] = missing_runs(entries_of_bookie(*share), lacking)
                counts[bookie_id] = len(lacking)
                missing_copies.update(lacking)
        if not missing_copies:
            continue
        most = max(missing_copies.values())
        category = replica_category(md.write_quorum_size, md.ack_quorum_size, most)
        assert category is not None  # most >= 1: an entry lacks a copy
        if worst is None or most > worst[0]:
            worst = (most, ReplicaFinding(category, first, sorted(missing_by_bookie), missing_by_bookie, counts))
    return worst[1] if worst else None


def _holds_range(available: AvailabilityOfEntries, first: int, last: int) -> bool:
    """Whether one run of ``available`` covers ``[first, last]``: every entry, without looking at each."""
    return any(g.period == 0 and g.first <= first and last < g.first + g.size for g in available.groups)


def lost_entries(md: LedgerMetadata, held: dict[str, AvailabilityOfEntries]) -> list[tuple[int, int]]:
    """``(first, last)`` runs of the entries no bookie of their write set holds: lost, ascending. ``held`` as for
    :func:`analyse`. Only segments where at least WQ bookies lack something are looked at entry by entry (with
    fewer, every entry keeps a copy), and a bookie holding one run over the whole segment is not."""
    runs: list[tuple[int, int]] = []
    for first, last, bookies in segment_ranges(md):
        lacking: dict[int, set[int]] = {}
        for index, bookie_id in enumerate(bookies):
            available = held[bookie_id]
            if _holds_range(available, first, last):
                continue
            share = entries_of_bookie(index, first, last, md.ensemble_size, md.write_quorum_size)
            if missing := available.unavailable(share):
                lacking[index] = set(missing)
        if len(lacking) < md.write_quorum_size:
            continue
        lost = [
            entry
            for entry in range(first, last + 1)
            if all(entry in lacking.get(i, ()) for i in write_set(entry, md.ensemble_size, md.write_quorum_size))
        ]
        runs += missing_runs(range(first, last + 1), lost)
    return runs

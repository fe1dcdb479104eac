"""check-impact: if these bookies went away now, what would it cost, level by level, and may the maintenance go on?

The levels, most severe first (after LogDevice's safety checker, which tells a maintenance's costs apart):

- ``data-loss``: an entry with no replica left outside the gone bookies.
- ``read-unavailable``: an open (or in-recovery) ledger that cannot be recovered: fencing must reach, in every
  write set of its last ensemble, all but fewer than AQ bookies (BookKeeper's quorum coverage,
  ``RoundRobinDistributionSchedule.RRQuorumCoverageSet.checkCovered``); when AQ or more of one write set are gone,
  an entry only they acknowledged may exist, so a reader that must fence and close it (``ledger recover``, a new
  owner taking over a dead writer's stream) cannot until one comes back, and its entries past the LAC cannot be
  read. A closed ledger's entry needs one replica for a plain read: it is unreadable only when lost.
- ``write-unavailable``: an open ledger with fewer writable bookies left than its ensemble size: neither an ensemble
  change nor a ledger that replaces it (as Pulsar rolls its ledgers) can get a full ensemble. Read-only bookies are
  not writable.
- ``below-ack-quorum``: an entry with fewer than AQ replicas left (but one at least).
- ``under-replicated``: an entry with fewer than WQ replicas left (but AQ at least).

A ledger counts once in each level it reaches; of the three replica levels, only in its worst. Bookies already gone
(not registered) count as gone too: losing "one more" is what operators ask about. Read-only bookies still serve
reads and fencing. This works from metadata, the write-set rule and the registrations, for open and closed ledgers
alike, without asking any bookie; an open ledger's last ensemble counts as holding every write set, written or not.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from admin.check import categories as cat

if TYPE_CHECKING:  # imported by bkctl's command module for its choices: kept light for `bkctl --help`
    from bookie.meta.ledger_metadata import LedgerMetadata

DATA_LOSS = "data-loss"
READ_UNAVAILABLE = "read-unavailable"
WRITE_UNAVAILABLE = "write-unavailable"
BELOW_ACK_QUORUM = "below-ack-quorum"
UNDER_REPLICATED = "under-replicated"
LEVELS = (DATA_LOSS, READ_UNAVAILABLE, WRITE_UNAVAILABLE, BELOW_ACK_QUORUM, UNDER_REPLICATED)  # most severe first

_REPLICA_LEVEL = {cat.NO_REPLICA: DATA_LOSS, cat.LESS_THAN_AQ: BELOW_ACK_QUORUM, cat.LESS_THAN_WQ: UNDER_REPLICATED}

# What each maintenance may cost. A restart brings the bookies back with their data within minutes: entries left
# below AQ meanwhile are still readable and come back to WQ with them. A decommission takes them for good, and the
# entries left with fewer than AQ replicas stay one failure away from loss until re-replicated.
PROFILES = {
    "restart": frozenset({BELOW_ACK_QUORUM, UNDER_REPLICATED}),
    "decommission": frozenset({UNDER_REPLICATED}),
}
DEFAULT_PROFILE = "decommission"
EXAMPLES = 5  # ledger ids shown per level


@dataclass
class Impact:
    """What losing the bookies costs one ledger."""

    ledger_id: int
    is_open: bool
    levels: list[str]  # most severe first
    category: str | None  # the replica level under Apache BookKeeper's gauge name, None when no replica is lost
    segment: int  # the first entry of the worst segment (of the last one when no replica is lost)
    lost_bookies: list[str]  # of that segment's ensemble: gone, or (write-unavailable) not writable

    def doc(self) -> dict:
        return {
            "ledgerId": self.ledger_id,
            "state": "open" if self.is_open else "closed",
            "levels": self.levels,
            "category": self.category,
            "segment": self.segment,
            "bookies": self.lost_bookies,
        }


def _most_lost(md: LedgerMetadata, first: int, end: int | None, lost: set[int]) -> int:
    """The most members of one write set among ensemble indexes ``lost``, over the entries ``first..end``
    (``end`` None: every write set, as for an open ledger's last segment)."""
    entries = md.ensemble_size if end is None else min(md.ensemble_size, end - first + 1)
    return max(
        sum(1 for w in range(md.write_quorum_size) if (first + k + w) % md.ensemble_size in lost)
        for k in range(entries)
    )


def ledger_impact(ledger_id: int, md: LedgerMetadata, gone: set[str], writable_left: set[str]) -> Impact | None:
    """The levels ``ledger_id`` reaches once ``gone`` are gone and only ``writable_left`` take writes."""
    worst: tuple[int, int, list[str]] | None = None  # (most replicas lost, segment, its gone bookies)
    for i, segment in enumerate(md.segments):
        first = segment.first_entry_id
        unbounded = not md.is_closed and i == len(md.segments) - 1  # an open ledger's last segment: no end yet
        end = None if unbounded else md.segment_end(i, md.last_entry_id)
        if end is not None and end < first:
            continue  # a segment without entries
        lost = {index for index, b in enumerate(segment.bookies) if b in gone}
        if not lost:
            continue
        most = _most_lost(md, first, end, lost)
        if worst is None or most > worst[0]:
            worst = (most, first, [segment.bookies[j] for j in sorted(lost)])
    category = cat.replica_category(md.write_quorum_size, md.ack_quorum_size, worst[0]) if worst else None
    levels = [_REPLICA_LEVEL[category]] if category else []
    last = md.segments[-1]
    if not md.is_closed:
        lost_last = {index for index, b in enumerate(last.bookies) if b in gone}
        if lost_last and _most_lost(md, last.first_entry_id, None, lost_last) >= md.ack_quorum_size:
            levels.append(READ_UNAVAILABLE)
        if len(writable_left) < md.ensemble_size:
            levels.append(WRITE_UNAVAILABLE)
    if not levels:
        return None
    levels.sort(key=LEVELS.index)
    if worst is not None:
        first, bookies = worst[1], worst[2]
    else:  # only write-unavailable: its last ensemble's bookies that take no writes
        first, bookies = last.first_entry_id, [b for b in last.bookies if b not in writable_left]
    return Impact(ledger_id, not md.is_closed, levels, category, first, bookies)


@dataclass
class Gate:
    """Which levels a maintenance may cost: a profile's, and those allowed on top of it."""

    profile: str = DEFAULT_PROFILE
    extra: frozenset[str] = frozenset()

    @property
    def allowed(self) -> frozenset[str]:
        return PROFILES[self.profile] | self.extra


@dataclass
class Report:
    """Every affected ledger, counted per level, and the gate's verdict."""

    bookies: list[str]
    already_gone: list[str]
    read_only: list[str]
    writable_left: int
    largest_open_ensemble: int
    gate: Gate
    impacts: list[Impact]
    by_level: dict[str, list[int]] = field(init=False)  # the ids of the ledgers that reach each level

    def __post_init__(self) -> None:
        self.by_level = {level: [i.ledger_id for i in self.impacts if level in i.levels] for level in LEVELS}

    @property
    def failed_levels(self) -> list[str]:
        return [level for level in LEVELS if level not in self.gate.allowed and self.by_level[level]]

    @property
    def safe(self) -> bool:
        return not self.failed_levels

    def verdict(self) -> str:
        """One line: safe or not for the gate, and what the maintenance costs."""

        def costs(levels: Iterable[str]) -> str:
            parts = []
            for level in levels:
                ids = self.by_level[level]
                if ids:
                    parts.append(f"{level.replace('-', ' ')} in {len(ids)} ledger{'s' if len(ids) != 1 else ''}")
            return ", ".join(parts)

        name = self.gate.profile + "".join(f" +{level}" for level in sorted(self.gate.extra))
        if not self.safe:
            return f"UNSAFE for {name}: {costs(self.failed_levels)}"
        allowed = costs(LEVELS)
        return f"safe for {name}: " + (f"costs {allowed}, which it allows" if allowed else "no ledger is affected")

    def doc(self) -> dict:
        return {
            "bookies": self.bookies,
            "alreadyGone": self.already_gone,
            "readOnly": self.read_only,
            "writableBookiesLeft": self.writable_left,
            "largestOpenEnsemble": self.largest_open_ensemble,
            "for": self.gate.profile,
            "allowed": [level for level in LEVELS if level in self.gate.allowed],
            "safe": self.safe,
            "failedLevels": self.failed_levels,
            "verdict": self.verdict(),
            "levels": {
                level: {"ledgers": len(ids), "allowed": level in self.gate.allowed, "examples": ids[:EXAMPLES]}
                for level, ids in self.by_level.items()
            },
            "ledgers": [i.doc() for i in self.impacts],
        }


def assess(
    ledgers: Iterable[tuple[int, LedgerMetadata]],
    bookies: Iterable[str],
    writable: set[str],
    read_only: set[str],
    gate: Gate,
) -> tuple[Report, set[str]]:
    """The report of losing ``bookies``, given the registered writable and read-only bookies; and every bookie the
    ledgers name (for the caller to tell a typo from a bookie that is gone)."""
    asked = list(dict.fromkeys(bookies))
    registered = writable | read_only
    writable_left = writable - set(asked)
    impacts, already_gone, named, largest_open_ensemble = [], set(), set(), 0
    for ledger_id, md in ledgers:
        ensemble = {b for s in md.segments for b in s.bookies}
        named |= ensemble
        already_gone |= ensemble - registered
        if not md.is_closed:
            largest_open_ensemble = max(largest_open_ensemble, md.ensemble_size)
        impact = ledger_impact(ledger_id, md, set(asked) | (ensemble - registered), writable_left)
        if impact is not None:
            impacts.append(impact)
    report = Report(
        asked, sorted(already_gone), sorted(read_only), len(writable_left), largest_open_ensemble, gate, impacts
    )
    return report, named

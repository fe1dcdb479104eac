"""The rebalance planner: which replicas to move so that every bookie stores about the same share of its capacity.

A pure function of the bookies (capacity, stored bytes, rack) and the movable replicas (ledger, segment, position,
bookie, bytes, the segment's ensemble and write quorum), as BP-23 sketches and Kafka Cruise Control's disk goal does:

- a bookie's utilisation is its stored bytes over its capacity; the cluster's, all stored bytes over all capacity.
  The spread is (max - min utilisation) as a percentage of the cluster's: 10 means the fullest and the emptiest
  bookie differ by a tenth of the mean, whatever the disks' size (a few MB on terabyte disks still balance);
- greedy, from the fullest bookie to the emptiest: the largest replica that fits the gap (what the source holds
  above the mean, what the target lacks below it), else the smallest one that still narrows the pair; until the
  spread is within the target, no move helps, or ``max_moves``. Few, well-fitting moves: few bytes moved;
- the unit that moves is a ledger's replica on a bookie: every segment of the ledger whose ensemble names the
  source goes to the same target. A bookie's garbage collection frees a ledger only once no segment names it, so
  moving one segment of several would free nothing there (admin/rebalance/inputs.py measures stored bytes so);
- never two replicas of a segment on one bookie, never a placement verdict that drops (admin/check/placement.py, with
  the racks the check uses); a replica the plan moved may move again (a bookie that took too much gives back), which
  changes the target of its one move;
- the bookies given both give and take replicas: the caller leaves read-only ones out;
- deterministic: ties are broken by bookie id, then ledger id.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace

from admin.check.placement import FAIL, MEETS_SOFT, MEETS_STRICT, segment_verdict
from bookie.meta.registration import DEFAULT_RACK

RANK = {FAIL: 0, MEETS_SOFT: 1, MEETS_STRICT: 2}
NOT_OWNED = "not-owned"  # a refusal: the target holds dead entries of the ledger
DEFAULT_TARGET = 10.0  # percent of the cluster's utilisation

# Why the target is not reached (Plan.reason's first word, the JSON's ``reason.kind``)
REACHED, MAX_MOVES, PLACEMENT, NO_MOVABLE, TOO_LARGE = "reached", "max-moves", "placement", "no-movable", "too-large"


@dataclass(frozen=True)
class BookieLoad:
    bookie_id: str
    capacity: int  # bytes of its ledger directories' disks
    stored: int  # bytes it stores (inputs.py: the live bytes of its entry logs)


@dataclass(frozen=True)
class Replica:
    """The replica of one segment of a ledger on a bookie: the entries of its write set there."""

    ledger_id: int
    first_entry_id: int  # names the segment
    position: int  # the bookie's index in the ensemble
    bookie_id: str
    bytes: int  # what the copy writes to the target
    ensemble: tuple[str, ...]
    write_quorum: int
    freed: int | None = None  # what the source stops storing, when not ``bytes`` (it holds more of the ledger)


@dataclass(frozen=True)
class PlannedMove:
    ledger_id: int
    first_entry_id: int
    source: str
    target: str
    bytes: int


@dataclass
class Plan:
    moves: list[PlannedMove]
    before: dict[str, int]  # stored bytes per bookie, now
    after: dict[str, int]  # and predicted once the moves are done
    capacity: dict[str, int]
    target: float
    reason: str  # REACHED, or why not (one of the constants above)
    detail: str = ""  # the reason in words
    spreads: tuple[float, float] = (0.0, 0.0)  # before, after

    @property
    def within_target(self) -> bool:
        return self.reason == REACHED

    @property
    def bytes(self) -> int:
        return sum(m.bytes for m in self.moves)


def spread(stored: Mapping[str, int], capacity: Mapping[str, int]) -> float:
    """(max - min utilisation) in percent of the cluster's utilisation; 0 for a cluster that stores nothing."""
    total, room = sum(stored.values()), sum(capacity[b] for b in stored)
    if not stored or total <= 0 or room <= 0:
        return 0.0
    mean = total / room
    utilisation = [stored[b] / capacity[b] for b in stored]
    return 100.0 * (max(utilisation) - min(utilisation)) / mean


@dataclass
class _Unit:
    """Every replica of a ledger on one bookie: they move together."""

    ledger_id: int
    source: str  # where it is in the plan so far
    replicas: list[Replica] = field(default_factory=list)
    origin: str | None = None  # where the metadata has it, once the plan moved it (a move again retargets that move)

    @property
    def bytes(self) -> int:
        return sum(r.bytes for r in self.replicas)

    @property
    def freed(self) -> int:
        return sum(r.bytes if r.freed is None else r.freed for r in self.replicas)


class _State:
    def __init__(
        self,
        bookies: list[BookieLoad],
        replicas: Iterable[Replica],
        racks: Mapping[str, str],
        not_owned: Collection[tuple[str, int]],
    ):
        self.not_owned = set(not_owned)
        self.moves: dict[tuple[int, int, str], PlannedMove] = {}  # by ledger, segment, the bookie it leaves
        self.capacity = {b.bookie_id: max(b.capacity, 1) for b in bookies}
        self.stored = {b.bookie_id: b.stored for b in bookies}
        self.rack_of: defaultdict[str, str] = defaultdict(lambda: DEFAULT_RACK, racks)
        self.racks = len(set(racks.values())) or 1
        self.ensembles: dict[tuple[int, int], list[str]] = {}
        self.write_quorum: dict[int, int] = {}
        units: dict[tuple[int, str], _Unit] = {}
        for r in sorted(replicas, key=lambda r: (r.ledger_id, r.first_entry_id, r.bookie_id)):
            if r.bookie_id not in self.stored:
                continue
            self.ensembles.setdefault((r.ledger_id, r.first_entry_id), list(r.ensemble))
            self.write_quorum[r.ledger_id] = r.write_quorum
            units.setdefault((r.ledger_id, r.bookie_id), _Unit(r.ledger_id, r.bookie_id)).replicas.append(r)
        self.units: dict[str, list[_Unit]] = defaultdict(list)  # by source, largest first
        for unit in units.values():
            if unit.freed > 0:
                self.units[unit.source].append(unit)
        for source_units in self.units.values():
            source_units.sort(key=lambda u: (-u.freed, u.ledger_id))

    def utilisation(self, bookie: str) -> float:
        return self.stored[bookie] / self.capacity[bookie]

    def mean(self) -> float:
        return sum(self.stored.values()) / sum(self.capacity.values())

    def spread(self) -> float:
        return spread(self.stored, self.capacity)

    def refusal(self, unit: _Unit, target: str) -> str | None:
        """Why ``unit`` may not go to ``target`` (PLACEMENT, NOT_OWNED), or None when it may."""
        if (target, unit.ledger_id) in self.not_owned or target == unit.origin:
            return NOT_OWNED  # dead entries of the ledger wait there; or back where it is
        wq = self.write_quorum[unit.ledger_id]
        for r in unit.replicas:
            ensemble = self.ensembles[unit.ledger_id, r.first_entry_id]
            if target in ensemble:
                return PLACEMENT  # two replicas of the segment on one bookie
            moved = tuple(target if i == r.position else b for i, b in enumerate(ensemble))
            now = segment_verdict(tuple(ensemble), wq, self.rack_of, self.racks)
            if RANK[segment_verdict(moved, wq, self.rack_of, self.racks)] < RANK[now]:
                return PLACEMENT
        return None

    def apply(self, unit: _Unit, target: str) -> None:
        """Move the unit in the plan; a unit the plan moved already keeps its one move, to the new target."""
        self.units[unit.source].remove(unit)
        self.stored[unit.source] -= unit.freed
        self.stored[target] += unit.bytes
        origin = unit.origin or unit.source
        for r in unit.replicas:
            self.ensembles[unit.ledger_id, r.first_entry_id][r.position] = target
            self.moves[unit.ledger_id, r.first_entry_id, origin] = PlannedMove(
                unit.ledger_id, r.first_entry_id, origin, target, r.bytes
            )
        moved = [replace(r, bookie_id=target, freed=None) for r in unit.replicas]
        self.units[target].append(_Unit(unit.ledger_id, target, moved, origin))
        self.units[target].sort(key=lambda u: (-u.freed, u.ledger_id))


def _choose(state: _State, source: str, target: str, refused: dict[str, int] | None, room: int) -> _Unit | None:
    """The largest unit of ``source`` that fits the gap to ``target``, else the smallest that narrows the pair
    (the arithmetic first, the placement check only for the candidates)."""
    mean = state.mean()
    over = state.stored[source] - mean * state.capacity[source]
    under = mean * state.capacity[target] - state.stored[target]
    narrowing: list[tuple[float, int, _Unit]] = []
    for unit in state.units[source]:  # largest first
        if unit.origin is None and len(unit.replicas) > room:
            continue
        if unit.freed <= over and unit.bytes <= under:
            if _allowed(state, unit, target, refused):
                return unit
            continue
        after_source = (state.stored[source] - unit.freed) / state.capacity[source]
        after_target = (state.stored[target] + unit.bytes) / state.capacity[target]
        if max(after_source, after_target) < state.utilisation(source) and (
            min(after_source, after_target) > state.utilisation(target)
        ):
            narrowing.append((abs(after_source - after_target), unit.freed, unit))
        elif refused is not None:
            refused[TOO_LARGE] += 1
    narrowing.sort(key=lambda c: (c[0], c[1], c[2].ledger_id))
    return next((unit for _, _, unit in narrowing if _allowed(state, unit, target, refused)), None)


def _allowed(state: _State, unit: _Unit, target: str, refused: dict[str, int] | None) -> bool:
    refusal = state.refusal(unit, target)
    if refused is not None and refusal == PLACEMENT:
        refused[PLACEMENT] += 1
    return refusal is None


def plan(
    bookies: list[BookieLoad],
    replicas: Iterable[Replica],
    racks: Mapping[str, str],
    target: float = DEFAULT_TARGET,
    max_moves: int | None = None,
    not_owned: Collection[tuple[str, int]] = (),
) -> Plan:
    """Moves that bring the bookies' spread within ``target`` percent (see the module's docstring). ``racks``: every
    registered bookie's rack, as the placement check takes them; replicas of bookies not in ``bookies`` stay.
    ``not_owned``: (bookie, ledger) where the bookie holds entries of a ledger that no longer names it (an
    interrupted copy's): no replica of the ledger goes there, or those entries would count again, twice, for as
    long as the ledger lives."""
    state = _State(bookies, replicas, racks, not_owned)
    before = dict(state.stored)
    spread_before = state.spread()
    reason, detail = REACHED, ""
    # every move narrows a pair of bookies, so the sum of squared utilisations falls: no plan cycles; a bound anyway
    for _ in range(4 * sum(map(len, state.units.values())) + 16):
        if state.spread() <= target:
            break
        moves = len(state.moves)
        if max_moves is not None and moves >= max_moves:
            reason, detail = MAX_MOVES, f"--max-moves {max_moves} reached"
            break
        room = max_moves - moves if max_moves is not None else len(state.ensembles)
        refused: dict[str, int] = {PLACEMENT: 0, TOO_LARGE: 0}  # of the fullest bookie's replicas
        chosen = None
        by_fullest = sorted(state.stored, key=lambda b: (-state.utilisation(b), b))
        by_emptiest = sorted(state.stored, key=lambda b: (state.utilisation(b), b))
        for source in by_fullest:
            for destination in by_emptiest:
                if state.utilisation(destination) >= state.utilisation(source):
                    break
                unit = _choose(state, source, destination, refused if source == by_fullest[0] else None, room)
                if unit is not None:
                    chosen = (unit, destination)
                    break
            if chosen:
                break
        if chosen is None:
            if max_moves is not None and any(len(u.replicas) > room for units in state.units.values() for u in units):
                reason, detail = MAX_MOVES, f"--max-moves {max_moves} reached"  # a ledger's segments move together
            else:
                reason, detail = _why_not(state, by_fullest[0], refused)
            break
        state.apply(*chosen)
    else:
        reason, detail = TOO_LARGE, "no move narrows the spread further"
    return Plan(
        list(state.moves.values()),
        before,
        dict(state.stored),
        dict(state.capacity),
        target,
        reason,
        detail,
        (spread_before, state.spread()),
    )


def _why_not(state: _State, fullest: str, refused: dict[str, int]) -> tuple[str, str]:
    """Why the fullest bookie can give nothing more."""
    if not state.units[fullest]:
        return NO_MOVABLE, f"no movable replica left on {fullest}, the fullest bookie"
    if not refused[TOO_LARGE]:
        return PLACEMENT, (
            f"every replica left on {fullest}, the fullest bookie, would put two replicas of a segment on one bookie "
            "or weaken its placement on the bookies below it"
        )
    return TOO_LARGE, f"the replicas left on {fullest}, the fullest bookie, are too large to narrow the spread further"

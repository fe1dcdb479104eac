"""The placement repair planner: the fewest replica moves that make a segment adhere to the rack-aware policy.

BookKeeper's BP-54 (``RackawareEnsemblePlacementPolicyImpl.replaceToAdherePlacementPolicy``) keeps every member that
still fits and returns the candidate with the fewest changed positions, found greedily from each start index; it
can miss a repair that exists. This planner searches instead: for k = 1, 2, ... changed positions, every set of k
positions, and for those the racks of writable bookies (not already in the ensemble) to put there, until every
write quorum passes :func:`~admin.check.placement.segment_verdict` as ``cluster check`` applies it. So a repair is
found whenever one exists, and it changes no more positions than needed. Among the repairs of k positions it
prefers one that meets the policy strictly, then the one moving the fewest bytes; the bookie taken on a rack is the
one holding the fewest bytes (``load``, raised as moves are planned, so repairs spread over a rack's bookies).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

from admin.check.placement import DEFAULT_MIN_RACKS, FAIL, segment_verdict


@dataclass(frozen=True)
class SegmentRepair:
    """``changes``: ensemble position -> the bookie to take it; empty with ``reason`` when no repair exists (or
    none is needed: ``verdict`` is then the segment's own)."""

    changes: dict[int, str] = field(default_factory=dict)
    verdict: str = FAIL
    reason: str | None = None


def _windows(size: int, write_quorum: int) -> list[tuple[int, ...]]:
    return [tuple((start + w) % size for w in range(write_quorum)) for start in range(size)]


def _assign(
    racks: list[str | None], positions: Sequence[int], windows_of: list[list[tuple[int, ...]]], need: int, free: Counter
) -> list[str] | None:
    """Racks for ``positions`` (None in ``racks``) such that every write quorum spans ``need`` racks, taking a
    rack's bookie from ``free``; backtracking, a write quorum checked as soon as all its members are decided."""
    if not positions:
        return []
    position, rest = positions[0], positions[1:]
    for rack in sorted(free, key=lambda r: (-free[r], r)):  # the racks with most bookies left first
        if not free[rack]:
            continue
        racks[position] = rack
        ok = True
        for window in windows_of[position]:
            members = [racks[i] for i in window]
            if None not in members and len(set(members)) < need:
                ok = False
                break
        if ok:
            free[rack] -= 1
            tail = _assign(racks, rest, windows_of, need, free)
            free[rack] += 1
            if tail is not None:
                return [rack, *tail]
        racks[position] = None
    return None


def plan_segment(
    ensemble: Sequence[str],
    write_quorum: int,
    rack_of: Mapping[str, str],
    cluster_racks: int,
    candidates: Mapping[str, str],
    min_racks: int = DEFAULT_MIN_RACKS,
    cost: Callable[[int], int] = lambda position: 0,
    load: dict[str, int] | None = None,
) -> SegmentRepair:
    """The repair of one segment's ``ensemble``.

    ``rack_of``: every member's rack (as the check sees it); ``cluster_racks``: how many racks the cluster has (the
    check's cap on what a write quorum needs); ``candidates``: writable bookie -> rack, the possible targets;
    ``cost(position)``: the bytes moving that position costs; ``load``: bytes per bookie, raised by what the repair
    puts on its targets.
    """
    size = len(ensemble)
    current = segment_verdict(tuple(ensemble), write_quorum, rack_of, cluster_racks, min_racks)
    if current != FAIL:
        return SegmentRepair({}, current)
    need = min(min_racks, cluster_racks)
    strict = min(write_quorum, cluster_racks)
    pool = {b: r for b, r in candidates.items() if b not in ensemble}
    free = Counter(pool.values())
    spanned = set(free) | {rack_of[b] for b in ensemble}
    if len(spanned) < need:
        return SegmentRepair(
            reason=f"its bookies and the other writable ones span {len(spanned)} rack(s); a write quorum needs {need}"
        )
    windows = _windows(size, write_quorum)
    windows_of = [[w for w in windows if i in w] for i in range(size)]
    for k in range(1, size + 1):
        found: list[tuple[int, tuple[int, ...], list[str]]] = []
        for target in (strict, need):
            for positions in combinations(range(size), k):
                if any(
                    not set(w) & set(positions) and len({rack_of[ensemble[i]] for i in w}) < target for w in windows
                ):
                    continue  # a write quorum of kept members only fails
                racks: list[str | None] = [None if i in positions else rack_of[b] for i, b in enumerate(ensemble)]
                assigned = _assign(racks, positions, windows_of, target, free)
                if assigned is not None:
                    found.append((sum(cost(i) for i in positions), positions, assigned))
            if found:
                break
        if found:
            _, positions, assigned = min(found, key=lambda f: (f[0], f[1]))
            return _pick(
                ensemble, write_quorum, rack_of, cluster_racks, min_racks, pool, positions, assigned, cost, load
            )
    return SegmentRepair(
        reason=f"no choice among the {len(pool)} other writable bookies ({len(free)} rack(s)) makes every write "
        f"quorum of {write_quorum} span {need} racks"
    )


def _pick(
    ensemble, write_quorum, rack_of, cluster_racks, min_racks, pool, positions, racks, cost, load
) -> SegmentRepair:
    """The bookies for the racks chosen: on each rack, the one holding the fewest bytes (then by id)."""
    load = load if load is not None else {}
    taken: set[str] = set()
    changes: dict[int, str] = {}
    for position, rack in zip(positions, racks, strict=True):
        bookie = min((b for b, r in pool.items() if r == rack and b not in taken), key=lambda b: (load.get(b, 0), b))
        taken.add(bookie)
        changes[position] = bookie
        load[bookie] = load.get(bookie, 0) + cost(position)
    after = [changes.get(i, b) for i, b in enumerate(ensemble)]
    verdict = segment_verdict(
        tuple(after), write_quorum, {**pool, **{b: rack_of[b] for b in ensemble}}, cluster_racks, min_racks
    )
    return SegmentRepair(changes, verdict)

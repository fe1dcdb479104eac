"""Rack-aware ensemble placement (BookKeeper: client/RackawareEnsemblePlacementPolicyImpl.java): spread an ensemble over
as many racks as possible; bookies that publish no rack share the default rack."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Mapping, Set

from bookie.errors import NotEnoughBookies
from bookie.meta.registration import RegisteredBookie


def _by_rack(bookies: list[RegisteredBookie], rng: random.Random) -> list[list[str]]:
    racks: dict[str, list[str]] = defaultdict(list)
    for bookie in bookies:
        racks[bookie.rack].append(bookie.bookie_id)
    groups = list(racks.values())
    for group in groups:
        rng.shuffle(group)
    rng.shuffle(groups)
    return groups


def choose_ensemble(
    writable: list[RegisteredBookie], size: int, exclude: Set[str] = frozenset(), rng: random.Random | None = None
) -> list[str]:
    """``size`` writable bookies, taking one rack after another so that consecutive members (and so every write
    quorum) span as many racks as there are."""
    rng = rng or random.Random()
    candidates = [b for b in writable if b.bookie_id not in exclude]
    if len(candidates) < size:
        raise NotEnoughBookies(
            f"not enough writable bookies: need {size}, {len(candidates)} available"
            + (f" (excluding {len(exclude)})" if exclude else "")
        )
    groups = _by_rack(candidates, rng)
    ensemble: list[str] = []
    while len(ensemble) < size:
        for group in groups:
            if group and len(ensemble) < size:
                ensemble.append(group.pop())
    return ensemble


def replacement(
    writable: list[RegisteredBookie],
    ensemble: list[str],
    index: int,
    exclude: Set[str] = frozenset(),
    rng: random.Random | None = None,
    load: Mapping[str, int] | None = None,
) -> str:
    """A bookie to take ensemble position ``index``: not in the ensemble or ``exclude``, preferably on a rack that
    the rest of the ensemble does not use; among those, at random, or with ``load`` (bytes per bookie) the least
    loaded."""
    racks = {b.bookie_id: b.rack for b in writable}
    others = {racks.get(b) for i, b in enumerate(ensemble) if i != index}
    candidates = [b for b in writable if b.bookie_id not in ensemble and b.bookie_id not in exclude]
    if not candidates:
        raise NotEnoughBookies(f"no writable bookie left to replace {ensemble[index]}")
    fresh = [b for b in candidates if b.rack not in others] or candidates
    if load is not None:
        return min(fresh, key=lambda b: (load.get(b.bookie_id, 0), b.bookie_id)).bookie_id
    return (rng or random.Random()).choice(fresh).bookie_id

"""The placement check: does every write quorum of a segment span enough racks (rack-aware policy)?

Per write quorum (WQ consecutive ensemble positions, cyclically) count its distinct racks:
- FAIL when fewer than ``min_racks`` (minNumRacksPerWriteQuorum, 2), capped by the racks the cluster has: a policy
  cannot ask for more racks than exist, so a one-rack cluster is not reported;
- MEETS_SOFT when at least that many, but fewer than min(WQ, racks in the cluster);
- MEETS_STRICT otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping

FAIL, MEETS_SOFT, MEETS_STRICT = "FAIL", "MEETS_SOFT", "MEETS_STRICT"
DEFAULT_MIN_RACKS = 2


def segment_verdict(
    bookies: tuple[str, ...],
    write_quorum: int,
    rack_of: Mapping[str, str],
    cluster_racks: int,
    min_racks: int = DEFAULT_MIN_RACKS,
) -> str:
    needed = min(min_racks, cluster_racks)
    strict = min(write_quorum, cluster_racks)
    verdict = MEETS_STRICT
    size = len(bookies)
    for start in range(size):
        racks = {rack_of[bookies[(start + w) % size]] for w in range(write_quorum)}
        if len(racks) < needed:
            return FAIL
        if len(racks) < strict:
            verdict = MEETS_SOFT
    return verdict

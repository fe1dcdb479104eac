"""The placement repair planner: a repair whenever one exists, with the fewest changed positions."""

from itertools import combinations, permutations

from hypothesis import given, settings
from hypothesis import strategies as st

from admin.check.placement import FAIL, MEETS_STRICT, segment_verdict
from admin.check.repair import plan_segment


def test_one_replica_moves_to_the_other_rack():
    racks = {"a1": "/a", "a2": "/a", "a3": "/a", "b1": "/b", "b2": "/b"}
    repair = plan_segment(["a1", "b1", "a2", "a3"], 2, racks, 2, racks)
    assert repair.changes == {3: "b2"} and repair.verdict == MEETS_STRICT
    # three write quorums of two in a cycle of three cannot all span two racks
    assert plan_segment(["a1", "a2", "a3"], 2, racks, 2, racks).changes == {}


def test_an_adhering_segment_is_left_alone():
    racks = {"a1": "/a", "b1": "/b", "a2": "/a"}
    assert plan_segment(["a1", "b1"], 2, racks, 2, racks).changes == {}


def test_cheapest_position_moves_and_the_emptiest_bookie_takes_it():
    racks = {"a1": "/a", "a2": "/a", "b1": "/b", "b2": "/b"}
    load = {"b1": 100, "b2": 5}
    repair = plan_segment(["a1", "a2"], 2, racks, 2, racks, cost=lambda i: [50, 10][i], load=load)
    assert repair.changes == {1: "b2"}
    assert load["b2"] == 15


def test_one_rack_cannot_be_repaired_and_says_why():
    racks = {"a1": "/a", "a2": "/a", "a3": "/a"}
    # the check caps what it asks by the racks the cluster has: with two racks known, one of them empty of writers
    repair = plan_segment(["a1", "a2"], 2, racks, 2, racks)
    assert repair.changes == {} and "span 1 rack(s)" in repair.reason


def test_not_enough_bookies_on_the_other_rack():
    """E 5 WQ 2 on two racks with a single bookie on the second: one bookie breaks two write quorums of five."""
    racks = {f"a{i}": "/a" for i in range(6)} | {"b0": "/b"}
    repair = plan_segment([f"a{i}" for i in range(5)], 2, racks, 2, racks)
    assert repair.changes == {} and "no choice among" in repair.reason


def _brute_force_fewest(ensemble, wq, racks, cluster_racks, candidates):
    """The fewest positions any replacement from ``candidates`` (no member twice) must change, None if none."""
    pool = [b for b in candidates if b not in ensemble]
    for k in range(len(ensemble) + 1):
        for positions in combinations(range(len(ensemble)), k):
            for targets in permutations(pool, k):
                after = list(ensemble)
                for p, t in zip(positions, targets, strict=True):
                    after[p] = t
                if segment_verdict(tuple(after), wq, racks, cluster_racks) != FAIL:
                    return k
    return None


@st.composite
def clusters(draw):
    rack_count = draw(st.integers(1, 3))
    sizes = draw(st.lists(st.integers(1, 3), min_size=rack_count, max_size=rack_count).filter(lambda s: sum(s) >= 2))
    racks = {f"r{r}b{i}": f"/r{r}" for r, n in enumerate(sizes) for i in range(n)}
    bookies = sorted(racks)
    size = draw(st.integers(2, min(5, len(bookies))))
    ensemble = draw(st.permutations(bookies).map(lambda p: p[:size]))
    wq = draw(st.integers(2, size))
    writable = draw(st.lists(st.sampled_from(bookies), unique=True, min_size=1, max_size=len(bookies)))
    return ensemble, wq, racks, {b: racks[b] for b in writable}


@settings(max_examples=300, deadline=None)
@given(clusters())
def test_a_repair_is_found_whenever_one_exists_and_changes_no_more_than_needed(cluster):
    ensemble, wq, racks, candidates = cluster
    cluster_racks = len(set(racks.values()))
    repair = plan_segment(ensemble, wq, racks, cluster_racks, candidates)
    fewest = _brute_force_fewest(ensemble, wq, racks, cluster_racks, candidates)
    if fewest is None:
        assert repair.changes == {} and repair.reason
        return
    assert len(repair.changes) == fewest
    after = [repair.changes.get(i, b) for i, b in enumerate(ensemble)]
    assert len(set(after)) == len(after)
    assert all(t in candidates and t not in ensemble for t in repair.changes.values())
    assert segment_verdict(tuple(after), wq, racks, cluster_racks) == repair.verdict != FAIL

import random

import pytest

from bookie.client.placement import choose_ensemble, replacement
from bookie.client.reader import covered
from bookie.errors import NotEnoughBookies
from bookie.meta.registration import WRITABLE, BookieServiceInfo, RegisteredBookie


def bookie(name: str, rack: str | None) -> RegisteredBookie:
    info = BookieServiceInfo.for_bookie("h", 1, **({"rack": rack} if rack else {}))
    return RegisteredBookie(name, WRITABLE, info)


def test_ensemble_spans_racks_round_robin():
    bookies = [bookie(f"a{i}", "/a") for i in range(3)] + [bookie(f"b{i}", "/b") for i in range(3)]
    for seed in range(20):
        ensemble = choose_ensemble(bookies, 4, rng=random.Random(seed))
        racks = [b[0] for b in ensemble]
        assert len(set(ensemble)) == 4
        assert all(racks[i] != racks[i + 1] for i in range(3))  # every write quorum of 2 spans both racks


def test_bookies_without_rack_share_the_default_rack():
    ensemble = choose_ensemble([bookie("x", None), bookie("y", None), bookie("r", "/r")], 2, rng=random.Random(1))
    assert "r" in ensemble


def test_not_enough_bookies():
    with pytest.raises(NotEnoughBookies, match="need 3, 2 available"):
        choose_ensemble([bookie("a", None), bookie("b", None)], 3)


def test_replacement_prefers_a_fresh_rack_and_skips_the_excluded():
    bookies = [bookie("a1", "/a"), bookie("a2", "/a"), bookie("b1", "/b"), bookie("c1", "/c")]
    assert replacement(bookies, ["a1", "b1"], 1, exclude={"b1"}, rng=random.Random(0)) == "c1"
    with pytest.raises(NotEnoughBookies):
        replacement(bookies[:2], ["a1", "a2"], 0)


@pytest.mark.parametrize(
    "answered,expected",
    [({0, 1, 2}, True), ({0, 1}, True), ({0}, False), (set(), False)],
)
def test_coverage_rule_e3_wq2_aq2(answered, expected):
    # every window of 2 consecutive bookies must have fewer than 2 unknown
    assert covered(3, 2, 2, answered) is expected

"""The fault suite's schedules (tests/faults/nemesis.py): the same seed gives the same schedule, and a schedule keeps
the cluster writable."""

import pytest
from faults.nemesis import BOOKIE_FAULTS, KINDS, MAX_BOOKIES_DOWN, generate
from faults.suite import SHORT_SECONDS, SHORT_SEEDS


@pytest.mark.parametrize("seed", [1, 2, 3, 12345])
def test_a_seed_gives_one_schedule(seed):
    schedule = generate(seed, SHORT_SECONDS, 5, 2)
    assert schedule == generate(seed, SHORT_SECONDS, 5, 2)
    assert generate(seed + 1, SHORT_SECONDS, 5, 2) != schedule


@pytest.mark.parametrize("seed", SHORT_SEEDS)
def test_the_short_profile_injects_every_kind(seed):
    assert {f.kind for f in generate(seed, SHORT_SECONDS, 5, 2)} == set(KINDS)


@pytest.mark.parametrize("seed", range(50))
def test_never_more_bookies_out_than_the_ensembles_can_spare(seed):
    schedule = generate(seed, 300, 5, 2)
    for fault in schedule:
        out = [f for f in schedule if f.kind in BOOKIE_FAULTS and f.at <= fault.at < f.at + f.duration]
        assert len(out) <= MAX_BOOKIES_DOWN
        assert len({f.target for f in out}) == len(out)  # one fault at a time on a bookie
        zk_down = [f for f in schedule if f.kind == "zk-crash" and f.at <= fault.at < f.at + f.duration]
        assert len(zk_down) <= 1
        if fault.kind == "rereplicate":
            assert not zk_down

"""The nemesis's schedules (tests/faults/nemesis.py): what a seed gives, checked without a cluster."""

from faults.nemesis import MAX_BOOKIES_DOWN, POWER_KINDS, POWER_PROFILE, generate
from faults.suite import POWER_SEEDS, SHORT_SECONDS


def out_at(faults, at: float) -> list:
    return [f for f in faults if f.kind in (*POWER_KINDS, "bookie-crash", "bookie-pause") and f.at <= at < f.end]


def test_a_rack_cut_is_alone_and_other_cuts_leave_three_bookies_up():
    for seed in range(300):
        faults = generate(seed, 60, 5, 2, POWER_PROFILE)
        for fault in faults:
            active = out_at(faults, fault.at)
            down = {b for f in active for b in f.bookies(5)}
            if any(f.kind == "power-cut-all" for f in active):
                assert len(active) == 1, (seed, fault)
            else:
                assert len(down) <= MAX_BOOKIES_DOWN, (seed, fault)


def test_the_short_power_seeds_cover_every_kind_and_tear():
    schedules = [generate(seed, SHORT_SECONDS, 5, 2, POWER_PROFILE) for seed in POWER_SEEDS]
    assert {f.kind for faults in schedules for f in faults} == set(POWER_PROFILE)
    assert {f.tear for faults in schedules for f in faults} == {None, 512, 4096}

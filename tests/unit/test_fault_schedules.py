"""The nemesis's schedules (tests/faults/nemesis.py): what a seed gives, checked without a cluster."""

from faults.lossyfs.model import Sync
from faults.nemesis import (
    MAX_BOOKIES_DOWN,
    POWER_KINDS,
    POWER_PROFILE,
    checkpoint_sync,
    generate,
    log_removal_sync,
)
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


def test_a_timed_cut_tells_a_log_removal_from_a_lastmark_write():
    def sync(number, op, path):
        return Sync(number, op, path, 0.0)

    lastmark = [sync(1, "fsync", "/ledgers-1/current/.lastMark.x1.tmp")]
    assert not log_removal_sync(lastmark, sync(2, "fsyncdir", "/ledgers-1/current"))
    interleaved = [*lastmark, sync(2, "fdatasync", "/journal/current/1a.txn")]
    assert not log_removal_sync(interleaved, sync(3, "fsyncdir", "/ledgers-1/current"))
    assert log_removal_sync(interleaved, sync(3, "fsyncdir", "/ledgers-0/current"))
    assert not log_removal_sync([], sync(1, "fsyncdir", "/journal/current"))
    assert checkpoint_sync([], sync(1, "fsync", "/ledgers-0/current/0/5/5.idx"))
    assert checkpoint_sync([], sync(1, "fdatasync", "/ledgers-0/current/locations/000012.log"))
    assert not checkpoint_sync([], sync(1, "fsync", "/ledgers-0/current/3.log"))

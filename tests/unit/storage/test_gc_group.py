"""A bookie's garbage collectors as one (DbLedgerStorage's, one per ledger directory): a forced run asked of all of
them is reported done only once each has finished its own, whatever more runs another has made meanwhile."""

from bookie.storage.gc import MAJOR, GarbageCollector, GcConfig
from bookie.storage.gc_group import GarbageCollectors


def test_a_forced_run_is_done_when_every_collector_has_done_it(open_storage):
    storage = open_storage()  # empty: runs only count; each collector runs by hand, on this thread
    collectors = [GarbageCollector(storage, GcConfig(), where=f"dir{i}") for i in range(3)]
    group = GarbageCollectors(collectors)
    assert group.state.last_run is None  # until every collector has run once
    for collector in collectors:
        collector.run()
    assert group.state.last_run is not None and group.state.last_run.run_id == 3
    started, run_id = group.trigger(force_major=True)
    assert (started, run_id, group.forcing) == (True, 6, True)  # each collector's run 2
    collectors[0].run((True, False))  # one collector does its forced run, then two scheduled ones; the others not yet
    collectors[0].run()
    collectors[0].run()
    state = group.state
    assert state.runs == 6 and state.last_run is not None and state.last_run.run_id < run_id
    for collector in collectors[1:]:
        collector.run((True, False))
    state = group.state
    assert state.last_run is not None and state.last_run.run_id >= run_id
    assert (state.counters[MAJOR], state.last_run.kind, state.last_run.error) == (3, MAJOR, "")


def test_suspended_only_when_every_collector_is(open_storage):
    storage = open_storage()
    collectors = [GarbageCollector(storage, GcConfig()) for _ in range(2)]
    group = GarbageCollectors(collectors)
    group.suspend([MAJOR], True)
    assert group.state.suspended == {MAJOR}
    collectors[1].suspend([MAJOR], False)  # as DbLedgerStorage.isMajorGcSuspended: allMatch
    assert group.state.suspended == set()

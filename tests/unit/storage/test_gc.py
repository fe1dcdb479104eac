"""Garbage collection and compaction in one process, on real files: which logs each kind takes, what it keeps, what
a restart at each step of a compaction leaves, the logs it cannot get through (stalled), targeted compaction of
chosen logs, and the space figures behind the bookie's gauges."""

import errno
import logging
import threading

import pytest

from bookie.errors import InvalidArgument, NotFound, ServiceUnavailable, Unsafe
from bookie.storage.entry_log import HEADER_SIZE, iter_records, list_log_ids, log_path
from bookie.storage.gc import MAJOR, MINOR, NO_PROGRESS_RUNS, TARGETED, GarbageCollector, GcConfig, Throttle
from bookie.storage.gc_group import GarbageCollectors
from bookie.storage.interleaved import InterleavedLedgerStorage

from support.storage import add, crash, records
from support.storage import stored_entry as entry
from support.waiting import wait_for

RECORD = len(records(1, 0, 1))
PER_LOG = 10


@pytest.fixture
def storage(open_storage):
    # Each entry log holds exactly PER_LOG records, so a test decides what each log contains.
    return open_storage(entry_log_size_limit=HEADER_SIZE + PER_LOG * RECORD)


def collector(storage, deleted: set[int], **config) -> GarbageCollector:
    return GarbageCollector(storage, GcConfig(**config), lambda ids: set(ids) - deleted)


def fill_log(storage, counts: dict[int, int], next_entry: dict[int, int]) -> None:
    """One whole entry log: ``counts[ledger]`` entries of each ledger, in order."""
    for ledger_id, count in counts.items():
        first = next_entry.get(ledger_id, 0)
        assert add(storage, ledger_id, first, count) == []
        next_entry[ledger_id] = first + count


def log_bytes(storage) -> int:
    return sum(log_path(storage.config.ledger_dir, i).stat().st_size for i in list_log_ids(storage.config.ledger_dir))


def assert_reads(storage, ledger_id, count):
    assert [entry(storage, ledger_id, e).entry_id for e in range(count)] == list(range(count))


@pytest.fixture
def half_and_tenth(storage):
    """Log 0: ledger 1 (kept) 5 entries, ledger 2 (deleted) 5 — 50% live once 2 is gone. Log 1: ledger 3 (kept) 1
    entry, ledger 4 (deleted) 9 — 10% live. Log 2 is the current log."""
    next_entry = {}
    fill_log(storage, {1: 5, 2: 5}, next_entry)
    fill_log(storage, {3: 1, 4: 9}, next_entry)
    fill_log(storage, {5: 1}, next_entry)
    assert list_log_ids(storage.config.ledger_dir) == [0, 1, 2]
    return storage


def test_ledger_gc_forgets_deleted_ledgers_and_deletes_logs_left_empty(storage):
    next_entry = {}
    fill_log(storage, {1: 10}, next_entry)  # log 0: only the ledger to delete
    fill_log(storage, {1: 5, 2: 5}, next_entry)  # log 1: half of it
    fill_log(storage, {2: 1}, next_entry)
    size = log_path(storage.config.ledger_dir, 0).stat().st_size
    gc = collector(storage, {1})
    run = gc.run()
    assert (run.ledgers_deleted, run.logs_deleted, run.kind) == (1, 1, "")
    assert storage.ledger_ids() == [2] and list_log_ids(storage.config.ledger_dir) == [1, 2]
    assert run.bytes_reclaimed == size
    assert [round(m.usage, 2) for m in gc.usage()] == [0.5]
    assert_reads(storage, 2, 6)


def test_minor_takes_the_log_at_10_percent_and_leaves_the_one_at_50(half_and_tenth):
    storage = half_and_tenth
    gc = collector(storage, {2, 4})
    run = gc.run((False, True))
    assert (run.kind, run.logs_compacted, run.entries_copied) == (MINOR, 1, 1)
    assert list_log_ids(storage.config.ledger_dir)[:1] == [0] and 1 not in list_log_ids(storage.config.ledger_dir)
    assert_reads(storage, 1, 5)
    assert_reads(storage, 3, 1)
    assert gc.state.counters == {MAJOR: 0, MINOR: 1}


def test_major_takes_both_emptiest_first(half_and_tenth):
    storage = half_and_tenth
    sizes = sum(log_path(storage.config.ledger_dir, i).stat().st_size for i in (0, 1))
    storage.entry_logger.flush()  # the current log's buffered entry written: the sizes below are whole
    before = log_bytes(storage)
    gc = collector(storage, {2, 4})
    run = gc.run((True, False))
    assert (run.kind, run.logs_compacted, run.entries_copied, run.bytes_copied) == (MAJOR, 2, 6, 6 * RECORD)
    logs = list_log_ids(storage.config.ledger_dir)
    assert not {0, 1} & set(logs)
    new = [log_path(storage.config.ledger_dir, i).stat().st_size for i in logs if i > 2]  # the copies' own logs
    assert len(new) == 2 and run.bytes_reclaimed == sizes - sum(new)
    assert log_bytes(storage) == before - run.bytes_reclaimed
    assert_reads(storage, 1, 5)
    assert_reads(storage, 3, 1)
    assert_reads(storage, 5, 1)
    # what the bookie logs of the run: one readable line
    assert str(run) == (
        f"gc run 1 (forced, major compaction): 2 ledgers deleted, 0 entry logs deleted, 2 entry logs "
        f"compacted (6 entries, {6 * RECORD / 2**20:.1f} MiB copied), "
        f"{run.bytes_reclaimed / 2**20:.1f} MiB reclaimed in {run.seconds:.2f} s"
    )


def test_suspended_kinds_wait_until_resumed(half_and_tenth):
    gc = collector(half_and_tenth, {2, 4})
    gc.suspend([MAJOR, MINOR], True)
    assert gc.run((True, True)).kind == ""
    gc.suspend([MINOR], False)
    assert (gc.run((True, True)).kind, gc.state.counters[MAJOR]) == (MINOR, 0)
    gc.suspend([MAJOR], False)
    assert gc.run((True, False)).logs_compacted == 1


@pytest.mark.parametrize("changes", [{"minor_threshold": 0}, {"minor_interval_s": -1}])
def test_a_threshold_or_interval_at_or_below_zero_disables_the_kind(half_and_tenth, changes):
    gc = collector(half_and_tenth, {2, 4}, **changes)
    assert not gc.config.enabled(MINOR)
    assert gc.run((False, True)).kind == ""
    assert 1 in list_log_ids(half_and_tenth.config.ledger_dir)


def test_scheduled_runs_follow_the_intervals(half_and_tenth):
    gc = collector(half_and_tenth, {2, 4}, minor_interval_s=3600, major_interval_s=86400)
    assert gc.run().kind == ""  # neither interval has passed since start-up
    gc.state.last_compaction[MINOR] -= 3600
    assert gc.run().kind == MINOR
    gc.state.last_compaction[MAJOR] -= 86400
    assert gc.run().kind == MAJOR


class OverReplicated:
    """What the bookie gives its collector to forget the ledgers it no longer owns: here, those of ``elsewhere``;
    ``fail`` makes a look fail as with ZooKeeper unreachable. Remembers what each look was given."""

    def __init__(self, elsewhere: set[int]):
        self.elsewhere, self.looks, self.fail = elsewhere, [], False

    def __call__(self, local, forget):
        seen, gone = [], []
        self.looks.append(seen)
        if self.fail:
            raise ServiceUnavailable("ZooKeeper unreachable")
        for ledger_id in local:
            seen.append(ledger_id)
            if ledger_id in self.elsewhere:
                forget(ledger_id)
                gone.append(ledger_id)
        return gone


def over_replicated_collector(storage, elsewhere: set[int], **config) -> tuple[GarbageCollector, OverReplicated]:
    remove = OverReplicated(elsewhere)
    return GarbageCollector(storage, GcConfig(**config), set, over_replicated=remove), remove


def test_over_replicated_ledgers_go_once_the_wait_has_passed(storage):
    next_entry = {}
    fill_log(storage, {1: 10}, next_entry)  # log 0: ledger 1 only, which the bookie no longer owns
    fill_log(storage, {1: 5, 2: 5}, next_entry)
    fill_log(storage, {2: 1}, next_entry)
    gc, remove = over_replicated_collector(storage, {1}, overreplicated_wait_ms=60_000)
    assert gc.run().ledgers_deleted == 0 and remove.looks == []  # not a minute since start-up
    gc.last_overreplicated_check -= 61
    run = gc.run()
    assert (run.ledgers_deleted, run.logs_deleted) == (1, 1) and remove.looks == [[1, 2]]
    assert storage.ledger_ids() == [2] and 0 not in list_log_ids(storage.config.ledger_dir)
    assert gc.state.ledgers_deleted == 1 and gc.state.active_ledgers == 1
    assert [round(m.usage, 2) for m in gc.usage()] == [0.5]
    assert_reads(storage, 2, 6)
    assert gc.run().ledgers_deleted == 0 and len(remove.looks) == 1  # the next look is a minute away again


def test_over_replicated_ledgers_stay_when_the_wait_is_zero_or_less(storage):
    fill_log(storage, {1: 10}, {})
    fill_log(storage, {2: 1}, {})
    for wait in (0, -1):
        gc, remove = over_replicated_collector(storage, {1}, overreplicated_wait_ms=wait)
        gc.last_overreplicated_check -= 10 * 86400
        assert gc.run().ledgers_deleted == 0 and remove.looks == []
    assert storage.ledger_ids() == [1, 2]


def test_a_look_for_over_replicated_ledgers_ends_when_the_collector_stops(storage):
    fill_log(storage, {1: 5, 2: 5}, {})
    fill_log(storage, {3: 1}, {})
    gc, remove = over_replicated_collector(storage, {1, 2, 3}, overreplicated_wait_ms=1000)
    gc.last_overreplicated_check -= 2
    forget = storage.delete_ledger

    def stopping(ledger_id):  # the bookie is asked to stop while its collector forgets ledger 1
        forget(ledger_id)
        gc.stop()

    storage.delete_ledger = stopping
    gc.run()
    assert remove.looks == [[1]] and storage.ledger_ids() == [2, 3]


def test_a_failed_look_for_over_replicated_ledgers_is_made_again_at_the_next_run(storage):
    fill_log(storage, {1: 10}, {})
    fill_log(storage, {2: 1}, {})
    gc, remove = over_replicated_collector(storage, {1}, overreplicated_wait_ms=1000)
    gc.last_overreplicated_check -= 2
    remove.fail = True
    assert gc.run().error == "ZooKeeper unreachable" and storage.ledger_ids() == [1, 2]
    remove.fail = False
    assert gc.run().ledgers_deleted == 1 and len(remove.looks) == 2
    assert storage.ledger_ids() == [2]


def test_compaction_rate_throttles_the_copy(storage):
    fill_log(storage, {7: 10}, {})
    fill_log(storage, {8: 10}, {})
    fill_log(storage, {9: 10}, {})
    fill_log(storage, {10: 10}, {})
    fill_log(storage, {11: 1}, {})
    run = collector(storage, set(), compaction_rate=20, major_threshold=1.01).run((True, False))
    assert run.entries_copied == 40 and run.seconds >= 32 / 20  # a pause every 32 entries keeps it at 20/s


def test_restart_after_the_repointed_index_was_checkpointed_but_before_the_old_log_went(half_and_tenth, config):
    storage = half_and_tenth
    gc = collector(storage, {2, 4})
    gc.run()  # ledger GC and log metadata
    # copy, flush, repoint, checkpoint ... then the process dies before deleting the log
    done = gc._compact(gc.logs[1], Throttle(0, threading.Event()))
    assert done is not None and done.entries == 1
    crash(storage)
    reopened = InterleavedLedgerStorage(config)
    reopened.start()
    try:
        assert_reads(reopened, 3, 1)
        assert_reads(reopened, 1, 5)
        again = collector(reopened, {2, 4}).run((True, False))  # a later run finishes the job
        assert 1 not in list_log_ids(config.ledger_dir) and again.logs_compacted == 2
        assert_reads(reopened, 3, 1)
    finally:
        reopened.shutdown()


def test_restart_after_the_copy_before_the_index_moved(half_and_tenth, config):
    storage = half_and_tenth
    gc = collector(storage, {2, 4})
    gc.run()
    # The copy step alone: the live entry copied into a log of its own, sealed; the index still on log 1.
    record = next(r for _, lid, _, r in iter_records(log_path(config.ledger_dir, 1)) if lid == 3)
    copies = storage.entry_logger.new_log()
    copies.append(bytes(record), {3: len(record)})
    storage.entry_logger.seal_new(copies)
    crash(storage)
    reopened = InterleavedLedgerStorage(config)
    reopened.start()
    try:
        assert_reads(reopened, 3, 1)
        run = collector(reopened, {2, 4}).run((True, False))
        assert not run.error and not {0, 1} & set(list_log_ids(config.ledger_dir))
        assert_reads(reopened, 3, 1)
        assert_reads(reopened, 1, 5)
    finally:
        reopened.shutdown()


def test_a_forced_run_is_asked_for_once_and_reported_by_its_id(half_and_tenth):
    gc = collector(half_and_tenth, {2, 4}, gc_wait_ms=3_600_000, compaction_rate=20)
    gc.start()
    try:
        assert gc.trigger(True, False) == (True, 1)
        assert gc.trigger(False, True) == (False, 1)  # pending or running: that run will do
        wait_for(lambda: gc.state.last_run is not None and not gc.state.running, "the forced run", 10)
        run = gc.state.last_run
        assert (run.run_id, run.forced, run.kind, run.logs_compacted) == (1, True, MAJOR, 2)
        assert gc.trigger() == (True, 2)
    finally:
        gc.stop()


class FakeClock:
    """``time.monotonic`` and a stop event whose ``wait`` only moves the clock."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def wait(self, seconds: float) -> bool:
        self.now += seconds
        return False

    def is_set(self) -> bool:
        return False


def test_compaction_throttle_keeps_its_rate_and_bursts_a_second_at_most_after_a_stall(monkeypatch):
    """As Guava's RateLimiter in BookKeeper's compactor: after a 60 s stall (a slow disk, a paused process) the copy
    goes on at its rate after at most one second's worth of entries, not at full speed for 60 s of them."""
    import bookie.storage.gc as gc

    clock = FakeClock()
    monkeypatch.setattr(gc, "time", clock)
    throttle = Throttle(320, clock)  # type: ignore[arg-type]

    def copy(entries: int) -> float:
        began = clock.now
        for _ in range(entries):
            assert throttle.take()
        return clock.now - began

    assert copy(3200) == pytest.approx(10, abs=0.2)  # the rate holds: 3200 entries at 320/s
    clock.now += 60
    assert copy(3200) == pytest.approx(9, abs=0.2)  # a second's worth (320) at once, then 320/s again
    assert copy(320) == pytest.approx(1, abs=0.2)


def test_compaction_throttle_unlimited_and_stopped():
    stop = threading.Event()
    unlimited = Throttle(0, stop)
    assert all(unlimited.take() for _ in range(1000))
    stop.set()
    assert not Throttle(10, stop).take()


def damage(storage, log_id: int, ledger_id: int) -> None:
    """The size field of the ledger's second record in the log, running past the data: the scan stops there."""
    path = log_path(storage.config.ledger_dir, log_id)
    positions = [pos for pos, lid, _, _ in iter_records(path) if lid == ledger_id]
    with open(path, "r+b") as f:
        f.seek(positions[1] - 4)
        f.write((1 << 30).to_bytes(4, "big"))


def test_a_log_whose_scan_stops_at_damage_is_kept_with_what_follows(half_and_tenth, caplog):
    """A record a crash damaged in the middle of a sealed log (its size field): the scan stops there (as
    BookKeeper's), so compaction would copy only what comes before it; the log must then stay, or the live entries
    after the damage go with it."""
    storage = half_and_tenth
    damage(storage, 0, 1)
    run = collector(storage, {2, 4}).run((True, False))
    assert run.error == "" and 0 in list_log_ids(storage.config.ledger_dir)
    assert run.logs_compacted == 1  # log 1, not log 0
    assert "scan stopped at a damaged record" in caplog.text
    assert entry(storage, 1, 0).entry_id == 0
    assert [entry(storage, 1, e).entry_id for e in range(2, 5)] == [2, 3, 4]  # after the damage, still there


# ---- stalled logs, targeted compaction ----
def stalled_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "stalled" in r.getMessage()]


def test_a_damaged_log_stalls_once_and_the_others_compact(half_and_tenth, caplog):
    storage = half_and_tenth
    damage(storage, 0, 1)
    gc = collector(storage, {2, 4})
    caplog.set_level(logging.INFO, "bookie.storage.gc")
    first = gc.run((True, False))
    second = gc.run((True, False))
    assert (first.error, first.logs_compacted, second.logs_compacted) == ("", 1, 0)  # log 1 compacted, then nothing
    assert list(gc.state.stalled) == [0] and "scan stopped at a damaged record" in gc.state.stalled[0]
    since = gc.state.stalled_since[0]
    assert len(stalled_lines(caplog)) == 1  # logged when it stalled, not at every run
    assert gc.state.stalled_since[0] == since
    # its dead bytes (ledger 2's, under the major threshold) are not what a major compaction would free
    assert (gc.state.dead_bytes, gc.state.reclaimable_bytes) == (5 * RECORD, 0)
    # its ledgers deleted, the log goes with them: no longer stalled
    gc.live_ledgers = lambda ids: set()
    gc.run()
    assert 0 not in list_log_ids(storage.config.ledger_dir) and gc.state.stalled == {}
    assert "entry log 0 no longer stalled: it is gone" in caplog.text


def test_targeted_compaction_takes_a_log_above_the_thresholds(half_and_tenth):
    storage = half_and_tenth
    gc = collector(storage, {2, 4}, minor_threshold=0.2, major_threshold=0.3)
    gc.run()  # forgets 2 and 4: log 0 at 50%, log 1 at 10%
    assert gc.state.reclaimable_bytes == 9 * RECORD  # log 1's dead bytes, under the major threshold of 0.3
    assert gc.state.dead_bytes == 14 * RECORD  # and log 0's
    run = gc.run(targets=[0])
    assert (run.kind, run.logs_compacted, run.entries_copied) == (TARGETED, 1, 5)
    assert 0 not in list_log_ids(storage.config.ledger_dir) and 1 in list_log_ids(storage.config.ledger_dir)
    assert gc.state.counters[MAJOR] == 0  # not a major compaction: its schedule is unchanged
    assert gc.state.dead_bytes == 9 * RECORD
    assert_reads(storage, 1, 5)


def test_choosing_logs_by_id_or_ledger_and_what_is_refused(half_and_tenth):
    storage = half_and_tenth
    group = GarbageCollectors([collector(storage, {2, 4})])
    group.collectors[0].run()
    assert [m.log_id for _, m in group.choose([1], [])] == [1]
    assert [m.log_id for _, m in group.choose([], [3])] == [1]  # ledger 3 lives in log 1
    assert [m.log_id for _, m in group.choose([0], [3])] == [0, 1]
    with pytest.raises(InvalidArgument, match="entry log 2 is the current log"):
        group.choose([2], [])
    with pytest.raises(NotFound, match="no sealed entry log 7"):
        group.choose([7], [])
    with pytest.raises(NotFound, match="ledger 2 "):  # deleted: no log holds a live entry of it
        group.choose([], [2])
    chosen = group.choose([1], [])
    group.suspend([MAJOR], True)
    with pytest.raises(Unsafe, match="major compaction is suspended"):
        group.compact(chosen)
    assert group.compact(chosen, dry_run=True, override_suspension=True) is None
    assert 1 in list_log_ids(storage.config.ledger_dir)


def test_a_log_whose_compactions_reclaim_nothing_stalls(storage):
    """All live (no ledger deleted): each targeted compaction copies the whole log into a new one, which the next
    takes; the third in a row stalls the log holding the copies."""
    fill_log(storage, {1: 10}, {})
    fill_log(storage, {2: 1}, {})
    gc = collector(storage, set())
    gc.run()
    for done in range(1, NO_PROGRESS_RUNS + 1):
        assert gc.state.stalled == {}
        (target,) = [log_id for log_id in gc.logs if log_id != 1]  # the log with ledger 1's entries
        run = gc.run(targets=[target])
        assert (run.logs_compacted, run.bytes_reclaimed) == (1, 0), done
    (held,) = gc.state.stalled
    assert held in gc.logs and "3 compactions in a row reclaimed nothing" in gc.state.stalled[held]
    assert [entry(storage, 1, e).entry_id for e in range(10)] == list(range(10))


def test_a_stall_for_no_progress_is_logged_once_as_it_passes_from_log_to_log(storage, caplog):
    """Compactions after the stall copy the log again: the stall goes on to each new log, with its first time, and
    is logged once (one ERROR), not "no longer stalled" then "stalled" at every one."""
    fill_log(storage, {1: 10}, {})
    fill_log(storage, {2: 1}, {})
    gc = collector(storage, set())
    gc.run()
    caplog.set_level(logging.INFO, "bookie.storage.gc")
    since = None  # when it first stalled
    for _ in range(NO_PROGRESS_RUNS + 2):
        (target,) = [log_id for log_id in gc.logs if log_id != 1]
        gc.run(targets=[target])
        if since is None and gc.state.stalled_since:
            (since,) = gc.state.stalled_since.values()
    (held,) = gc.state.stalled
    assert held in gc.logs and "5 compactions in a row reclaimed nothing" in gc.state.stalled[held]
    assert gc.state.stalled_since == {held: since}
    assert len(stalled_lines(caplog)) == 1 and "no longer stalled" not in caplog.text


def test_a_full_disk_ends_the_run_with_a_warning_and_stalls_nothing(half_and_tenth, caplog, monkeypatch):
    """ENOSPC creating the compaction's log: the run fails with one warning naming it, no traceback (not a bug),
    and no log is stalled; the next run, with space again, compacts."""
    storage = half_and_tenth
    gc = collector(storage, {2, 4})

    def full() -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(storage.entry_logger, "new_log", full)
    caplog.set_level(logging.INFO, "bookie.storage.gc")
    run = gc.run((True, False))
    assert run.error == "entry log 1 not compacted: No space left on device"  # the emptiest first
    assert [(r.levelno, r.exc_info) for r in caplog.records if r.levelno >= logging.WARNING] == [
        (logging.WARNING, None)
    ]
    assert gc.state.stalled == {}
    monkeypatch.undo()
    assert gc.run((True, False)).logs_compacted == 2

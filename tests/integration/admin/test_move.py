"""Moving replicas between live bookies (bookie/client/move.py): the metadata names the target only once it holds
every entry, the ledger stays readable with the source gone, open segments stay, a held lock waits, an
interrupted move resumes."""

import asyncio
import concurrent.futures

import pytest

from bookie.client import BookKeeper
from bookie.client.bookie_client import EOK
from bookie.client.move import Move, MovementLock, ReplicaMover, movable, replica_bytes
from bookie.errors import Busy
from bookie.meta.ledger_metadata import Segment
from bookie.meta.store import MetadataStore
from bookie.meta.underreplication import UnderReplicationManager
from bookie.meta.uri import parse_service_uri

from support.checks import check, write_ledgers
from support.waiting import wait_for

PAYLOAD = b"x" * 1000


def entries(bk, ledger_id):
    md = bk.ledger_metadata(ledger_id)
    return [e.payload for e in bk.open_ledger(ledger_id).read(0, md.last_entry_id)]


def test_a_planned_move_copies_the_replica_then_names_the_target(harness, bkctl):
    bookies = harness.start(4)
    (ledger_id,) = write_ledgers(harness.service_uri, 1, quorum=(3, 2, 2), entries=60)
    with BookKeeper(harness.service_uri) as bk:
        md = bk.ledger_metadata(ledger_id)
        source = md.segments[0].bookies[1]
        target = next(b.bookie_id for b in bookies if b.bookie_id not in md.segments[0].bookies)
        assert movable(md, 0) and replica_bytes(md, 0, 1) == round(40 * md.length / 60)
        mover = ReplicaMover(bk.core)
        report = bk.run(mover.run([Move(ledger_id, 0, source, target)]))
        assert report.complete and report.moved == [Move(ledger_id, 0, source, target)]
        assert report.entries == 40  # E3 W2: the source held 2 of every 3 entries
        after = bk.ledger_metadata(ledger_id)
        assert after.segments[0].bookies == tuple(target if b == source else b for b in md.segments[0].bookies)
        assert bk.core.store.zk.exists(mover.locks.lock_path(ledger_id)) is None  # released
        again = bk.run(ReplicaMover(bk.core).run([Move(ledger_id, 0, source, target)]))
        assert again.moved == [] and again.skipped == [Move(ledger_id, 0, source, target)]  # done: nothing twice
    next(b for b in bookies if b.bookie_id == source).stop(kill=True)
    with BookKeeper(harness.service_uri) as bk:
        assert entries(bk, ledger_id) == [b"entry-%d" % i for i in range(60)]
    assert check(bkctl, harness.service_uri)[0] == 0


def test_a_drain_moves_closed_segments_and_leaves_a_live_writers_last_one(harness):
    bookies = harness.start(5)
    closed = write_ledgers(harness.service_uri, 3, quorum=(3, 3, 2), entries=30)
    with BookKeeper(harness.service_uri) as bk:
        writer = bk.create_ledger(3, 3, 2)
        writer.add_entries(b"open-%d" % i for i in range(10))
        source = writer.ensemble[0]
        named = [lid for lid in closed if source in bk.ledger_metadata(lid).segments[0].bookies]
        loads = {b.bookie_id: 0 for b in bookies}
        report = bk.run(ReplicaMover(bk.core).drain({source}, load=loads))
        assert sorted({m.ledger_id for m in report.moved}) == sorted(named)
        assert report.open == [writer.ledger_id] and not report.complete
        for lid in closed:
            assert source not in bk.ledger_metadata(lid).segments[0].bookies
        assert source in bk.ledger_metadata(writer.ledger_id).segments[-1].bookies  # never fenced, never swapped
        writer.add_entries(b"open-%d" % i for i in range(10, 20))  # the writer goes on undisturbed
        writer.close()
        assert entries(bk, writer.ledger_id) == [b"open-%d" % i for i in range(20)]
        for lid in closed:
            assert entries(bk, lid) == [b"entry-%d" % i for i in range(30)]


def test_a_held_re_replication_lock_makes_the_ledger_busy_not_moved(harness):
    harness.start(4)
    (ledger_id,) = write_ledgers(harness.service_uri, 1, quorum=(3, 3, 2), entries=5)
    with BookKeeper(harness.service_uri) as bk:
        source = bk.ledger_metadata(ledger_id).segments[0].bookies[0]
        locks = UnderReplicationManager(bk.core.store)
        assert locks.try_lock(ledger_id, "a-replication-worker")
        try:
            report = bk.run(ReplicaMover(bk.core, lock_wait=1.5).drain({source}))
        finally:
            locks.release_lock(ledger_id)
        assert report.busy == [ledger_id] and report.moved == []
        assert source in bk.ledger_metadata(ledger_id).segments[0].bookies


def test_an_interrupted_move_keeps_what_the_target_acknowledged_and_a_rerun_finishes(harness):
    harness.start(4)
    with BookKeeper(harness.service_uri) as bk:
        ledger = bk.create_ledger(3, 3, 2)
        ledger.add_entries(PAYLOAD for _ in range(600))
        ledger.close()
        source = ledger.ensemble[0]
        (target,) = {b.bookie_id for b in harness.bookies} - set(ledger.ensemble)
        mover = ReplicaMover(bk.core, rate=150_000)  # ~4 s for the 600 KB: cancelled well before the end
        future = asyncio.run_coroutine_threadsafe(mover.drain({source}), bk.loop)
        held = lambda: bk.run(bk.core.bookie(target).read_entry(ledger.ledger_id, 0, 5.0, "test")).status == EOK  # noqa: E731
        wait_for(held, "the target to hold the first entry")
        future.cancel()
        with pytest.raises(concurrent.futures.CancelledError):
            future.result(10)
        assert mover.settled.wait(10)
        md = bk.ledger_metadata(ledger.ledger_id)
        assert len(md.segments) == 2 and source not in md.segments[0].bookies and source in md.segments[1].bookies
        report = bk.run(ReplicaMover(bk.core).drain({source}))
        assert report.complete and [m.first_entry_id for m in report.moved] == [md.segments[1].first_entry_id]
        assert all(source not in s.bookies for s in bk.ledger_metadata(ledger.ledger_id).segments)
        assert entries(bk, ledger.ledger_id) == [PAYLOAD] * 600


def test_one_data_movement_at_a_time(cluster):
    held = pytest.raises(Busy, match=r"drain of b1:3181 \(pid \d+ on .+ since ")
    with MovementLock(cluster, "drain of b1:3181"), held, MovementLock(cluster, "rebalance"):
        pass
    with MovementLock(cluster, "rebalance") as lock:  # released: free again
        assert lock.holder()["what"] == "rebalance"
    assert lock.holder() is None


def test_a_lock_freed_between_finding_it_held_and_reading_its_holder_is_taken(cluster, service_uri):
    """A killed bkctl's lock goes when ZooKeeper expires its session, which may fall between a rerun's create (the
    node exists) and its read of the holder (the node is gone): the rerun takes the lock, not "held by unknown"."""
    with MetadataStore(parse_service_uri(service_uri)) as killed:
        MovementLock(killed, "drain of b1:3181").__enter__()

        class SessionEndsOnRead(MovementLock):
            def holder(self):
                killed.close()
                return super().holder()

        with SessionEndsOnRead(cluster, "rebalance") as lock:
            assert lock.holder()["what"] == "rebalance"


def test_a_segment_split_during_the_copy_is_never_swapped_by_its_old_index(harness):
    """An interrupted `bookie recover` of another bookie splits an earlier segment while a move copies: the segments
    after it shift. The move must swap the segment it copied (found by its first entry), not the one now at its
    index, which holds entries the target never received."""
    harness.start(4)
    with BookKeeper(harness.service_uri) as bk:
        ledger = bk.create_ledger(3, 3, 2)
        ledger.add_entries(PAYLOAD for _ in range(300))
        ledger.close()
        ensemble = tuple(ledger.ensemble)
        (target,) = {b.bookie_id for b in harness.bookies} - set(ensemble)
        md, version = bk.core.ledgers.read(ledger.ledger_id)
        bk.core.ledgers.write(
            ledger.ledger_id, md.with_changes(segments=(Segment(0, ensemble), Segment(150, ensemble))), version
        )
        mover = ReplicaMover(bk.core, rate=40_000)  # ~4 s for its 150 KB
        future = asyncio.run_coroutine_threadsafe(
            mover.run([Move(ledger.ledger_id, 150, ensemble[0], target)]), bk.loop
        )
        held = lambda: bk.run(bk.core.bookie(target).read_entry(ledger.ledger_id, 150, 5.0, "test")).status == EOK  # noqa: E731
        wait_for(held, "the target to hold entry 150")
        md, version = bk.core.ledgers.read(ledger.ledger_id)
        split = (Segment(0, ensemble), Segment(50, ensemble), Segment(150, ensemble))
        bk.core.ledgers.write(ledger.ledger_id, md.with_changes(segments=split), version)
        report = future.result(60)
        assert report.complete and report.moved == [Move(ledger.ledger_id, 150, ensemble[0], target)]
        after = bk.ledger_metadata(ledger.ledger_id).segments
        assert [s.bookies for s in after] == [ensemble, ensemble, (target, *ensemble[1:])]
    harness.bookies[[b.bookie_id for b in harness.bookies].index(ensemble[0])].stop(kill=True)
    with BookKeeper(harness.service_uri) as bk:
        assert entries(bk, ledger.ledger_id) == [PAYLOAD] * 300

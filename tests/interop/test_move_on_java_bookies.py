"""Moving replicas in a mixed cluster (bookie/client/move.py): Java bookies (Apache BookKeeper 4.17.4) as sources and
targets of our ReplicaMover, over BookKeeper's protocol and metadata. The Java client reads every entry afterwards,
and a Java bookie whose garbage collector looks for over-replicated ledgers (a short
``gcOverreplicatedLedgerWaitTime``) collects the replica it no longer holds. The oracle's bookies serve no HTTP, so
bkctl cannot make them read-only: what a drain does for them is move their closed ledgers, as here and as
`bkctl bookie drain` of one does."""

from __future__ import annotations

import json

import pytest

from bookie.client import BookKeeper
from bookie.client.bookie_client import EOK
from bookie.client.move import Move, ReplicaMover

from interop.oracle import JavaCluster, java_read, java_write, require_oracle
from support.cluster import shared_cluster
from support.waiting import wait_for

require_oracle()

# A Java bookie refuses for 7 days to take back a ledger its GC collected (HandleFactoryImpl's
# recentlyFencedAndDeletedLedgers): the drain below drains the one that collected, so that no target refuses
collected: list[str] = []
LEDGERS, ENTRIES = 12, 200  # E3 of 4 bookies: each ledger leaves one out; both kinds are needed below


@pytest.fixture(scope="module")
def ours(zookeeper, tmp_path_factory):
    with shared_cluster(zookeeper, tmp_path_factory.mktemp("ours"), bookies=2) as harness:
        yield harness


@pytest.fixture(scope="module")
def java(ours, zookeeper, tmp_path_factory):
    root = "/" + ours.service_uri.split("://", 1)[1].split("/", 1)[1]
    cluster = JavaCluster.start(
        tmp_path_factory.mktemp("java"),
        2,
        "gcWaitTime=1000",
        "gcOverreplicatedLedgerWaitTime=2000",
        zk=zookeeper.address,
        ledgers_root=root,
    )
    try:
        yield cluster
    finally:
        cluster.stop()


def holds(bk: BookKeeper, bookie_id: str, ledger_id: int) -> bool:
    """Whether the bookie still has the ledger (its last entry: every replica of E3 W2 has one)."""
    return bk.run(bk.core.bookie(bookie_id).read_entry(ledger_id, -1, 10.0, "test")).status == EOK


def test_replicas_move_between_java_bookies_and_ours_and_java_collects_its_old_copy(ours, java, classes):
    ledger_ids = java_write(classes, ours.service_uri, ENTRIES, "entry", *["close"] * LEDGERS)
    java_ids = {java.bookie_id(1), java.bookie_id(2)}
    our_ids = {b.bookie_id for b in ours.bookies}
    with BookKeeper(ours.service_uri) as bk:
        ensembles = {lid: bk.ledger_metadata(lid).segments[0].bookies for lid in ledger_ids}
        while {java_ids <= set(e) for e in ensembles.values()} != {True, False}:  # placement is random: 1 in 2,048
            more = java_write(classes, ours.service_uri, ENTRIES, "entry", *["close"] * 4)
            ledger_ids += more
            ensembles.update((lid, bk.ledger_metadata(lid).segments[0].bookies) for lid in more)
        moves = []
        for left_out, kinds in ((our_ids, java_ids), (java_ids, our_ids)):  # Java -> ours, then ours -> Java
            lid, bookies = next((lid, e) for lid, e in ensembles.items() if not left_out <= set(e))
            (target,) = left_out - set(bookies)
            source = next(b for b in bookies if b in kinds)
            moves.append(Move(lid, 0, source, target))
        from_java = moves[0]
        assert holds(bk, from_java.source, from_java.ledger_id)

        report = bk.run(ReplicaMover(bk.core).run(moves))
        assert report.complete and sorted(report.moved) == sorted(moves), report.doc()
        for move in moves:
            bookies = bk.ledger_metadata(move.ledger_id).segments[0].bookies
            assert move.target in bookies and move.source not in bookies

        collected.append(from_java.source)
        wait_for(
            lambda: not holds(bk, from_java.source, from_java.ledger_id),
            f"Java bookie {from_java.source} to collect over-replicated ledger {from_java.ledger_id}",
            60,
        )
        assert holds(bk, moves[1].target, moves[1].ledger_id)  # the Java target kept its new copy

    expected = [(i, f"entry-{i}".encode()) for i in range(ENTRIES)]
    assert java_read(classes, ours.service_uri, ledger_ids, recovery=False) == dict.fromkeys(ledger_ids, expected)


def test_bkctl_drains_a_java_bookie_and_the_java_client_reads_every_entry_without_it(ours, java, classes, bkctl):
    ledger_ids = java_write(classes, ours.service_uri, ENTRIES, "drained", *["close"] * 4)
    drained = collected[0] if collected else java.bookie_id(2)
    result = bkctl("-u", ours.service_uri, "bookie", "drain", drained, "--yes", "-o", "json")
    assert result.exit_code == 0, result.stdout + result.stderr
    doc = json.loads(result.stdout)
    # no HTTP admin API on the oracle's bookies: not made read-only, said so, its closed ledgers moved all the same
    assert doc["bookies"] == [{"bookieId": drained, "readOnly": False, "why": doc["bookies"][0]["why"]}]
    assert doc["bookies"][0]["why"] and "cannot be made read-only" in result.stderr
    assert doc["complete"] and doc["moved"] and {m["from"] for m in doc["moved"]} == {drained}
    with BookKeeper(ours.service_uri) as bk:
        everything = list(bk.core.ledgers.iter_ledgers())
    assert everything and all(drained not in s.bookies for _, md in everything for s in md.segments)

    number = next(n for n in (1, 2) if java.bookie_id(n) == drained)
    java.kill(number)
    try:
        expected = [(i, f"drained-{i}".encode()) for i in range(ENTRIES)]
        assert java_read(classes, ours.service_uri, ledger_ids, recovery=False) == dict.fromkeys(ledger_ids, expected)
    finally:
        java.start_bookie(number)

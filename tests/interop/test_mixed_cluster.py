"""A mixed cluster: Java bookies (Apache BookKeeper 4.17.4) and ours registered under one root of one ZooKeeper, and
both clients on it. Ensembles of three out of four bookies always hold both kinds."""

from __future__ import annotations

import pytest

from bookie.client import BookKeeper
from bookie.errors import LedgerFenced
from bookie.meta.ledger_manager import LedgerManager

from interop.oracle import JavaCluster, bk_read, bk_write, bk_write_during, require_oracle
from support.cluster import adds_ok, shared_cluster
from support.waiting import wait_for

require_oracle()

PASSWORD = b"pw"  # the Java tools' default


@pytest.fixture(scope="module")
def ours(zookeeper, tmp_path_factory):
    with shared_cluster(zookeeper, tmp_path_factory.mktemp("ours"), bookies=2) as harness:
        yield harness


@pytest.fixture(scope="module")
def java(ours, zookeeper, tmp_path_factory):
    root = "/" + ours.service_uri.split("://", 1)[1].split("/", 1)[1]
    cluster = JavaCluster.start(tmp_path_factory.mktemp("java"), 2, zk=zookeeper.address, ledgers_root=root)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def java_args(ours):
    return ["--root", "/" + ours.service_uri.split("://", 1)[1].split("/", 1)[1]]


def payloads(count: int, text: str = "entry") -> list[tuple[int, bytes]]:
    return [(i, b"%s-%d" % (text.encode(), i)) for i in range(count)]


def kinds(md, java: JavaCluster) -> set[str]:
    java_ids = {java.bookie_id(n) for n in (1, 2)}
    return {"java" if b in java_ids else "ours" for b in md.segments[0].bookies}


def test_our_client_changes_ensemble_when_a_java_bookie_dies(ours, java, zookeeper, java_args):
    with BookKeeper(ours.service_uri) as bk:
        handle = bk.create_ledger(3, 2, 2, digest_type="crc32c", password=PASSWORD)
        md = bk.ledger_metadata(handle.ledger_id)
        assert kinds(md, java) == {"java", "ours"}
        victim = next(n for n in (1, 2) if java.bookie_id(n) in md.segments[0].bookies)
        futures = [handle.add_entry_async(p) for _, p in payloads(3000)[:1000]]
        futures[-1].result(timeout=60)
        java.kill(victim)
        futures += [handle.add_entry_async(p) for _, p in payloads(3000)[1000:]]
        assert [f.result(timeout=120) for f in futures] == list(range(3000))
        md = handle.close()
    assert len(md.segments) >= 2 and java.bookie_id(victim) not in md.segments[-1].bookies
    assert bk_read(zookeeper.address, handle.ledger_id, *java_args, "--no-recovery") == payloads(3000)
    java.start_bookie(victim)


def test_the_java_client_changes_ensemble_when_one_of_ours_dies(ours, java, zookeeper, java_args):
    killed = []

    def kill_ours(_ledger_id, ensemble):
        victim = next(b for b in ours.bookies if b.bookie_id in ensemble)
        baseline = adds_ok(victim)
        wait_for(lambda: adds_ok(victim) - baseline > 1000, "the Java client's first thousand adds", 60)
        victim.stop(kill=True)
        killed.append(victim)

    ledger_id = bk_write_during(
        zookeeper.address,
        *java_args,
        "--n",
        "8000",
        "--text",
        "entry",
        "--suffix-index",
        "--window",
        "20",
        during=kill_ours,
    )
    (victim,) = killed
    md = LedgerManager(ours.store).read(ledger_id)[0]
    assert md.is_closed and md.last_entry_id == 7999 and victim.bookie_id not in md.segments[-1].bookies
    with BookKeeper(ours.service_uri) as bk, bk.open_ledger(ledger_id, PASSWORD) as reader:
        assert [(e.entry_id, e.payload) for e in reader.iter_entries(0, 7999)] == payloads(8000)
    ours.restart(victim)


def test_a_ledger_left_open_by_the_java_client_is_recovered_by_ours(ours, java, zookeeper, java_args):
    ledger_id = bk_write(zookeeper.address, *java_args, "--n", "400", "--text", "entry", "--suffix-index", "--no-close")
    with BookKeeper(ours.service_uri) as bk:
        with bk.open_ledger(ledger_id, PASSWORD) as reader:  # recovery: fence and close
            assert [(e.entry_id, e.payload) for e in reader.iter_entries(0, 399)] == payloads(400)
        md = bk.ledger_metadata(ledger_id)
    assert md.is_closed and md.last_entry_id == 399 and kinds(md, java) == {"java", "ours"}
    assert bk_read(zookeeper.address, ledger_id, *java_args, "--no-recovery") == payloads(400)


def test_a_ledger_left_open_by_our_client_is_recovered_by_the_java_one(ours, java, zookeeper, java_args):
    bk = BookKeeper(ours.service_uri)
    handle = bk.create_ledger(3, 2, 2, digest_type="crc32c", password=PASSWORD)
    for _, payload in payloads(250):
        handle.add_entry(payload)
    ledger_id = handle.ledger_id
    try:
        # the writer is still alive: the Java client's recovery fences it out
        assert bk_read(zookeeper.address, ledger_id, *java_args) == payloads(250)
        md = LedgerManager(ours.store).read(ledger_id)[0]
        assert md.is_closed and md.last_entry_id == 249
        with pytest.raises(LedgerFenced):
            handle.add_entry(b"too late")  # fenced on every bookie, Java or ours
    finally:
        bk.close()

"""The Java client (Apache BookKeeper 4.17.4, ../shared/bk-oracle) on a cluster of our bookies.

Our bookies speak BookKeeper's protocol on their bookie port; the Java client finds them through the registrations
in ZooKeeper, as it finds Java bookies, and writes, reads (v3 and v2), changes ensemble and recovers ledgers on them.
"""

from __future__ import annotations

import re

import pytest

from bookie.local.bookies import wait_registered
from bookie.meta.ledger_manager import LedgerManager

from interop.oracle import bk_read, bk_write, bk_write_during, require_oracle, run
from support.cluster import adds_ok, shared_cluster
from support.waiting import wait_for

require_oracle()

ENTRIES = 10_000


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    """Four of our bookies (one spare for an ensemble change of E3 ledgers)."""
    with shared_cluster(zookeeper, tmp_path_factory.mktemp("ours"), bookies=4) as harness:
        yield harness


@pytest.fixture(scope="module")
def java_args(cluster):
    root = cluster.service_uri.split("://", 1)[1].split("/", 1)[1]
    return ["--root", "/" + root]


@pytest.fixture(scope="module")
def zk(zookeeper):
    return zookeeper.address


@pytest.fixture(scope="module")
def shell_conf(cluster, tmp_path_factory):
    """A bookie configuration naming our cluster, for the BookKeeper shell."""
    directory = tmp_path_factory.mktemp("shell")
    conf = directory / "bookie.conf"
    run("bk-conf", str(conf), "3181", str(directory), cluster.service_uri.split("://", 1)[1].split("/", 1)[0])
    text = re.sub(r"(?m)^metadataServiceUri=.*$", f"metadataServiceUri={cluster.service_uri}", conf.read_text())
    conf.write_text(text)
    return conf


def text_entries(count: int, first: int = 0) -> list[tuple[int, bytes]]:
    return [(i, b"entry-%d" % i) for i in range(first, first + count)]


def test_java_client_writes_through_a_kill_9_and_reads_back_with_v3_and_v2(cluster, zk, java_args):
    killed = []

    def kill_one(_ledger_id, ensemble):
        victim = next(b for b in cluster.bookies if b.bookie_id == ensemble[0])
        baseline = adds_ok(victim)
        wait_for(lambda: adds_ok(victim) - baseline > 1000, "the Java client's first thousand adds", timeout=60)
        victim.stop(kill=True)
        killed.append(victim)

    ledger_id = bk_write_during(
        zk,
        *java_args,
        "--n",
        str(ENTRIES),
        "--text",
        "entry",
        "--suffix-index",
        "--ensemble",
        "3",
        "--write-quorum",
        "2",
        "--ack-quorum",
        "2",
        "--window",
        "50",
        during=kill_one,
    )
    (victim,) = killed
    md, _ = LedgerManager(cluster.store).read(ledger_id)
    assert md.is_closed and md.last_entry_id == ENTRIES - 1
    assert len(md.segments) >= 2 and victim.bookie_id not in md.segments[-1].bookies  # it changed ensemble
    for version in ((), ("--no-recovery", "--v2")):
        assert bk_read(zk, ledger_id, *java_args, *version, timeout=180) == text_entries(ENTRIES)
    cluster.restart(victim)


def test_java_v2_client_writes_and_a_left_open_ledger_is_recovered(cluster, zk, java_args):
    ledger_id = bk_write(zk, *java_args, "--n", "300", "--text", "entry", "--suffix-index", "--v2", "--no-close")
    md, _ = LedgerManager(cluster.store).read(ledger_id)
    assert not md.is_closed
    # reading with recovery fences the ledger on our bookies and closes it at the last entry they hold
    assert bk_read(zk, ledger_id, *java_args, "--v2") == text_entries(300)
    md, _ = LedgerManager(cluster.store).read(ledger_id)
    assert md.is_closed and md.last_entry_id == 299


def test_bookkeeper_shell_simpletest_readledger_and_listbookies(cluster, shell_conf, zk, java_args):
    done = run(
        "bk-shell",
        str(shell_conf),
        "simpletest",
        "-ensemble",
        "3",
        "-writeQuorum",
        "2",
        "-ackQuorum",
        "2",
        "-numEntries",
        "100",
        timeout=120,
        check=False,
    )
    printed = done.stdout + done.stderr
    match = re.search(r"100 entries written to ledger (\d+)", printed)
    assert match, printed[-3000:]  # simpletest exits 0 even when it fails: what it prints is the verdict
    ledger_id = str(bk_write(zk, *java_args, "--n", "100", "--text", "entry"))  # simpletest deletes its ledger
    read = run("bk-shell", str(shell_conf), "readledger", "-ledgerid", ledger_id, timeout=120, check=False)
    assert len(re.findall(rf"Lid={ledger_id}, Eid=\d+", read.stdout + read.stderr)) == 100
    listed = run("bk-shell", str(shell_conf), "listbookies", "-rw", timeout=120, check=False)
    listed_ids = set(re.findall(r"BookieID:(\S+?),", listed.stdout + listed.stderr))
    assert listed_ids == {b.bookie_id for b in cluster.bookies}


def test_java_client_reads_what_it_wrote_after_our_bookies_restart(cluster, zk, java_args):
    """Journal replay and the index serve the Java client's entries after a restart (kill -9: no clean stop)."""
    ledger_id = bk_write(
        zk,
        *java_args,
        "--n",
        "500",
        "--text",
        "entry",
        "--suffix-index",
        "--ensemble",
        "4",
        "--write-quorum",
        "3",
        "--ack-quorum",
        "2",
    )
    for bookie in cluster.bookies:
        bookie.stop(kill=True)
    for bookie in cluster.bookies:
        bookie.start()
    wait_registered(cluster.store, cluster.bookies)
    assert bk_read(zk, ledger_id, *java_args, "--no-recovery") == text_entries(500)


def test_the_bookkeeper_shell_recovers_a_dead_bookie_of_ours(cluster, shell_conf, zk, java_args):
    """BookKeeperAdmin (the shell's `recover`) re-replicates a dead bookie of ours: it reads the fragments from our
    other bookies and writes them, with RECOVERY_ADD, to another of ours."""
    victim = cluster.bookies[-1]
    ledger_ids, manager = [], LedgerManager(cluster.store)
    while len(ledger_ids) < 2:  # E3 of 4 bookies: 3 in 4 ledgers are on it
        ledger_id = bk_write(zk, *java_args, "--n", "200", "--text", "entry", "--suffix-index")
        if victim.bookie_id in manager.read(ledger_id)[0].segments[0].bookies:
            ledger_ids.append(ledger_id)
    victim.stop(kill=True)
    for ledger_id in ledger_ids:  # these only: an E4 ledger of an earlier test has no fifth bookie to move to
        done = run(
            "bk-shell",
            str(shell_conf),
            "recover",
            "-force",
            "-ledger",
            str(ledger_id),
            victim.bookie_id,
            timeout=180,
            check=False,
        )
        assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
        md = manager.read(ledger_id)[0]
        assert all(victim.bookie_id not in segment.bookies for segment in md.segments), md.segments
        assert bk_read(zk, ledger_id, *java_args, "--no-recovery") == text_entries(200)
    cluster.restart(victim)

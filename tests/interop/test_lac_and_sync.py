"""What a tailing reader and a careful writer use, across the two implementations (tests/interop/java/
InteropClient.java): long-poll reads (READ with ENTRY_PIGGYBACK, previousLAC and a timeout), WRITE_LAC and READ_LAC
(explicit LAC), and DEFERRED_SYNC adds with FORCE_LEDGER — the Java client on our bookies, and our client with Java
bookies."""

from __future__ import annotations

import subprocess
import threading
import time

import pytest

from bookie.client import BookKeeper
from bookie.meta.ledger_manager import LedgerManager

from interop.oracle import ENV, JavaCluster, interop, java_command, require_oracle, where
from support.cluster import shared_cluster
from support.waiting import wait_for

require_oracle()

PASSWORD = b"pw"


@pytest.fixture(scope="module")
def ours(zookeeper, tmp_path_factory):
    with shared_cluster(zookeeper, tmp_path_factory.mktemp("ours"), bookies=3) as harness:
        yield harness


@pytest.fixture(scope="module")
def java(tmp_path_factory):
    cluster = JavaCluster.start(tmp_path_factory.mktemp("java"), 3)
    try:
        yield cluster
    finally:
        cluster.stop()


def follow_while_our_client_writes(classes, service_uri: str, count: int) -> list[str]:
    """Our client writes ``count`` entries in small bursts to an open ledger; a Java reader tails it with long
    polls, started after the first burst (a bookie that holds no entry of a ledger answers a long poll with
    ENOLEDGER, Java's as ours). What the Java reader printed, line by line."""
    with BookKeeper(service_uri) as bk:
        handle = bk.create_ledger(3, 2, 2, digest_type="crc32c", password=PASSWORD)
        for i in range(10):
            handle.add_entry(b"entry-%d" % i)
        reader = subprocess.Popen(
            java_command(classes, "InteropClient", "tail", *where(service_uri), str(handle.ledger_id), str(count)),
            env=ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            lines: list[str] = []
            pump = threading.Thread(target=lambda: lines.extend(reader.stdout), daemon=True)
            pump.start()
            # entry 9 is not confirmed yet: having printed 0-8, the reader waits in a long poll, which the next
            # burst must wake
            wait_for(lambda: len(lines) >= 9, "the Java reader to read entries 0-8", 60)
            for burst in range(10, count, 10):
                for i in range(burst, min(count, burst + 10)):
                    handle.add_entry(b"entry-%d" % i)
                time.sleep(0.05)
            handle.add_entry(b"one more")  # carries LAC = count - 1, so the reader can see the last one
            reader.wait(timeout=120)
            pump.join(timeout=10)
            assert reader.returncode == 0, reader.stderr.read()[-3000:]
            handle.close()
            return [line.rstrip("\n") for line in lines]
        finally:
            if reader.poll() is None:
                reader.kill()


@pytest.mark.parametrize("side", ["ours", "java"])
def test_a_java_reader_tails_our_clients_ledger_with_long_polls(classes, side, request):
    """On our bookies: they answer the Java client's long-poll reads as the LAC moves. On Java bookies: the LAC our
    client piggybacks on its adds is what a Java bookie's long poll waits for."""
    service_uri = request.getfixturevalue(side).service_uri
    count = 120
    assert follow_while_our_client_writes(classes, service_uri, count) == [f"{i} entry-{i}" for i in range(count)]


def test_java_deferred_sync_adds_and_force_on_our_bookies(classes, ours):
    out = interop(classes, ours.service_uri, "deferred", "100")
    _, ledger_id, _, lac = out.split()
    assert int(lac) == 99  # FORCE_LEDGER answered by all of the write quorum: every add is durable
    md = LedgerManager(ours.store).read(int(ledger_id))[0]
    assert not md.is_closed
    with BookKeeper(ours.service_uri) as bk, bk.open_ledger(int(ledger_id), PASSWORD, recovery=True) as reader:
        assert reader.last_add_confirmed == 99  # recovery found every deferred add on our bookies
        assert [e.payload for e in reader.read(0, 99)] == [b"deferred-%d" % i for i in range(100)]


@pytest.mark.parametrize("side", ["ours", "java"])
def test_explicit_lac_is_written_and_read_across_implementations(classes, side, request):
    """A Java writer's WRITE_LAC lands on the bookies (ours, or Java's); READ_LAC then gives the explicit LAC to the
    Java client and to ours, so a reader without recovery sees the last entry, which no later add carried."""
    cluster = request.getfixturevalue(side)
    writer = subprocess.Popen(
        java_command(classes, "InteropClient", "explicit-lac", *where(cluster.service_uri), "20", "6"),
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ledger_id = int(writer.stdout.readline().split()[1])
        with BookKeeper(cluster.service_uri) as bk, bk.open_ledger(ledger_id, PASSWORD, recovery=False) as reader:
            # the last entry carries LAC 18: 19 is the explicit LAC, sent at the writer's next explicitLacInterval tick
            wait_for(lambda: reader.read_lac() == 19, "the explicit LAC on the bookies", 30)
            assert int(interop(classes, cluster.service_uri, "read-explicit-lac", str(ledger_id))) == 19
            assert reader.read_lac() == 19
            assert [e.payload for e in reader.read(0, 19)] == [b"entry-%d" % i for i in range(20)]
        writer.wait(timeout=60)
    finally:
        if writer.poll() is None:
            writer.kill()

"""A bookie's life: cookies, read-only when the disks are full, re-registration after a session expiry, a clean
shutdown."""

import os
import signal
import subprocess
import sys

import pytest

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.meta.cookies import CookieStore
from bookie.meta.registration import BookieRegistry

from support.storage import records
from support.waiting import wait_for
from support.wire import add_requests

# the CLI's bookie, and the core's own process that the harness and the sandbox start: one bookie, the same refusals
CLI = ("bkctl", "bookie", "run")
CORE = ("bookie.server",)


def run_bookie(conf, command=CLI):
    return subprocess.run(
        [sys.executable, "-m", *command, "--conf", str(conf)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cookie_written_on_first_start(harness, cluster):
    (bookie,) = harness.start(1)
    cookie, _ = CookieStore(cluster).read(bookie.bookie_id)
    assert cookie.journal_dirs == (bookie.journal_dir,) and cookie.ledger_dirs == (bookie.ledger_dir,)
    assert cookie.instance_id == cluster.zk.get(f"{cluster.root}/INSTANCEID")[0].decode()


@pytest.mark.parametrize("command", [CLI, CORE])
def test_new_ledger_directory_is_refused(harness, tmp_path, command):
    (bookie,) = harness.start(1)
    bookie.stop()
    bookie.settings["ledgerDirectories"] = str(tmp_path / "other-disk")
    bookie.write_conf(harness.service_uri)
    result = run_bookie(bookie.conf_path, command)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"error: bookie {bookie.bookie_id}: cookie in ZooKeeper does not match: ledger directories "
        f"('{tmp_path / 'other-disk'}',) != ('{tmp_path / 'bookie-1' / 'ledgers'}',)"
    ]


def test_another_clusters_disks_are_refused(harness, zookeeper):
    (bookie,) = harness.start(1)
    bookie.stop()
    from bookie.meta.layout import init_cluster
    from bookie.meta.store import MetadataStore
    from bookie.meta.uri import parse_service_uri

    other = f"zk+hierarchical://{zookeeper.address}{harness.store.root}-other"
    with MetadataStore(parse_service_uri(other)) as store:
        init_cluster(store)
    bookie.write_conf(other)
    result = run_bookie(bookie.conf_path)
    assert result.returncode == 1 and len(result.stderr.splitlines()) == 1
    assert "has a cookie but ZooKeeper has none" in result.stderr


@pytest.mark.parametrize("command", [CLI, CORE])
def test_a_setting_it_cannot_honour_is_refused_with_exit_2(tmp_path, command):
    conf = tmp_path / "bk_server.conf"
    conf.write_text(f"listeningInterface=no-such-interface0\njournalDirectories={tmp_path / 'journal'}\n")
    result = run_bookie(conf, command)
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.splitlines()) == 1 and "no-such-interface0" in result.stderr
    assert not (tmp_path / "journal").exists()


def test_full_disks_make_the_bookie_read_only(harness, cluster):
    (bookie,) = harness.start(1, diskUsageThreshold=0.001, diskUsageWarnThreshold=0.001)
    assert [b.bookie_id for b in BookieRegistry(cluster).list(writable=False, readonly=True)] == [bookie.bookie_id]
    answer = harness.wire(bookie).ask(add_requests(1, 0, 1)[0])
    assert answer.status == pb.EREADONLY


def test_reregisters_after_its_session_expires(harness, cluster):
    (bookie,) = harness.start(1)  # zkTimeout 6 s
    registry = BookieRegistry(cluster)
    os.kill(bookie.pid, signal.SIGSTOP)  # a long pause: ZooKeeper expires the session
    try:
        wait_for(lambda: not registry.list(), "the session to expire", 30)
    finally:
        os.kill(bookie.pid, signal.SIGCONT)
    wait_for(lambda: [b.bookie_id for b in registry.list()] == [bookie.bookie_id], "re-registration", 30)


def test_sigterm_shuts_down_cleanly(harness, cluster):
    (bookie,) = harness.start(1)
    bookie.stop()  # SIGTERM
    assert f"bookie {bookie.bookie_id} stopped" in bookie.log_path.read_text()
    assert not BookieRegistry(cluster).list()  # unregistered at once, not after a session timeout


def test_metrics_count_adds_reads_and_fsyncs(harness):
    from support.cluster import StreamWriter, metrics

    (bookie,) = harness.start(1)
    writer = StreamWriter(bookie.port, ledger_id=1, batch=25, limit=100)  # each batch in one write
    writer.start()
    writer.join(30)
    assert writer.acked == list(range(100)), writer.error
    conn = harness.wire(bookie)
    conn.ask(pb.ReadRequest(ledgerId=1, entryId=7))
    conn.ask(pb.ReadRequest(ledgerId=1, entryId=100))  # not there
    got = metrics(bookie)
    assert got.sum("bookkeeper_server_ADD_ENTRY_REQUEST_count", success="true") == 100
    assert got.sum("bookie_BOOKIE_ADD_ENTRY_count", success="true") == 100
    assert got.sum("bookie_journal_JOURNAL_ADD_ENTRY_count", success="true") == 101  # and the master key's
    assert got.sum("bookkeeper_server_READ_ENTRY_REQUEST_count", success="true") == 1
    assert got.sum("bookkeeper_server_READ_ENTRY_REQUEST_count", success="false") == 1
    assert 1 <= got.sum("bookie_journal_JOURNAL_SYNC_count", success="true") <= 5  # 4 batches, group committed
    assert got.sum("bookie_WRITE_BYTES") == 100 * len(records(1, 0, 1)) - 100 * 4  # framed entries
    assert got.sum("bookie_READ_BYTES") == len(records(1, 7, 1)) - 4
    assert got.sum("bookie_SERVER_STATUS") == 1 and got.sum("bookie_ledger_writable_dirs") == 1


def test_reregisters_after_zookeeper_was_down_longer_than_a_connect_timeout(tmp_path):
    """A bookie outlives a ZooKeeper outage of any length: it keeps trying to reconnect, then registers again.
    (kazoo's connection retry policy used to give up after three tries or 8 s and stop its connection thread for
    good, leaving the bookie running but invisible to every client.)"""
    import time

    from support.cluster import OwnZooKeeper

    with OwnZooKeeper(tmp_path) as zk:
        bookie = zk.start_bookie()
        zk.kill()  # the old policy gave up within a second of refused connections
        wait_for(lambda: "Connection dropped" in bookie.log_path.read_text(), "the bookie to notice", 30)
        time.sleep(3)
        zk.start()
        # A restarted ZooKeeper restores the old session, and its ephemeral node, until the session times out
        # (zkTimeout 6 s): only a registration still there after that is one the bookie holds.
        time.sleep(9)
        with zk.store() as store:
            wait_for(
                lambda: [b.bookie_id for b in BookieRegistry(store).list()] == [bookie.bookie_id],
                "the registration after ZooKeeper came back",
                30,
            )


def test_calls_fail_and_a_bookie_stops_in_bounded_time_while_zookeeper_is_down(tmp_path):
    """Reconnecting without end must not mean waiting without end: kazoo queues a call made while disconnected, and
    its synchronous calls had no timeout, so a command, a GC run or a bookie's shutdown hung as long as ZooKeeper
    was away."""
    import threading
    import time

    import pytest

    from bookie.errors import ServiceUnavailable

    from support.cluster import OwnZooKeeper

    with OwnZooKeeper(tmp_path) as zk:
        bookie = zk.start_bookie()
        with zk.store(connect_timeout=2, session_timeout=4) as store:
            zk.kill()
            outcome = []

            def call():
                with pytest.raises(ServiceUnavailable) as caught:
                    store.exists("/ledgers")
                outcome.append(caught.value)

            started = time.monotonic()
            caller = threading.Thread(target=call, daemon=True)
            caller.start()
            caller.join(20)
            assert outcome and time.monotonic() - started < 15
            bookie.stop()  # SIGTERM; SIGKILL only after 20 s
            assert f"bookie {bookie.bookie_id} stopped" in bookie.log_path.read_text()

"""Real bookie processes on a ZooKeeper: start, kill and restart them, read their metrics."""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from pathlib import Path

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.client.channel import BookieChannel
from bookie.local.bookies import LocalBookie, wait_registered
from bookie.meta.store import MetadataStore

from support.waiting import wait_for
from support.wire import WireConn, add_requests

# What every harness bookie gets unless its test sets it. The host's disk is not under test: at BookKeeper's
# thresholds a disk over 90% used (1 - usable/total, as BookKeeper measures it; this machine's reached 93% while the
# suite ran) rolls every bookie's entry log at each disk check (diskAlmostFull), reshaping the logs a test laid out,
# and over 95% makes every bookie read-only. A 1 MB journal preallocation, not 16: the suite starts bookies by the
# hundred, and their journals took 13.4 GB of the 14.7 GB one run left in its temporary directory.
HARNESS_BOOKIE = {"diskUsageThreshold": "0.999", "diskUsageWarnThreshold": "0.999", "journalPreAllocSizeMB": "1"}


def expire_session(store: MetadataStore) -> None:
    """Expire ``store``'s ZooKeeper session the way kazoo's harness does: a second client joins the same session
    and closes it. ``store`` then gets a new session; the old session's ephemeral nodes are gone."""
    from kazoo.client import KazooClient

    old_session = store.zk.client_id[0]
    twin = KazooClient(hosts=store.uri.zk_hosts, client_id=store.zk.client_id)
    twin.start(timeout=10)
    twin.stop()
    twin.close()
    wait_for(lambda: store.zk.connected and store.zk.client_id[0] != old_session, "a new session")


def metrics(bookie):
    """A running bookie's /metrics (bookie.client.metrics_client.Metrics)."""
    from bookie.client.metrics_client import scrape

    return scrape(bookie.bookie_id, f"http://127.0.0.1:{bookie.metrics_port}/metrics")


def metric(bookie, name: str, **labels: str) -> float:
    """The sum of a running bookie's samples of ``name`` with ``labels`` (e.g. both outcomes), 0 when it has none."""
    return metrics(bookie).sum(name, **labels) or 0.0


def adds_ok(bookie) -> float:
    return metric(bookie, "bookkeeper_server_ADD_ENTRY_REQUEST_count", success="true")


def reads_ok(bookie) -> float:
    return metric(bookie, "bookkeeper_server_READ_ENTRY_REQUEST_count", success="true")


def http_call(bookie, method: str, path: str, body: str | None = None) -> tuple[int, dict, str]:
    """One request to a bookie's HTTP admin API: ``(status, headers, body)``. ``body`` None sends none at all (no
    Content-Length: what BookKeeper's handlers see as a null body; urllib would send an empty one on a PUT)."""
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", bookie.http_port, timeout=60)
    try:
        connection.putrequest(method, path, skip_accept_encoding=True)
        data = body.encode() if body is not None else None
        if data is not None:
            connection.putheader("Content-Length", str(len(data)))
        connection.endheaders(data)
        response = connection.getresponse()
        return response.status, dict(response.headers), response.read().decode()
    finally:
        connection.close()


class StreamWriter(threading.Thread):
    """Streams adds of one ledger to a bookie over BookKeeper's protocol, ``batch`` at a time (each batch in one write)
    and records which entries were acknowledged, until it is stopped or the bookie goes away."""

    def __init__(self, port: int, ledger_id: int, batch: int = 50, size: int = 100, limit: int = 10**9):
        super().__init__(daemon=True)
        self.port, self.ledger_id, self.batch, self.size, self.limit = port, ledger_id, batch, size, limit
        self.acked: list[int] = []
        self.error: BaseException | None = None
        self._halt = threading.Event()

    def run(self):
        try:
            with WireConn(self.port) as conn:
                for first in range(0, self.limit, self.batch):
                    if self._halt.is_set():
                        break
                    adds = add_requests(self.ledger_id, first, self.batch, self.size)
                    for txn, add in zip(conn.send_requests(adds), adds, strict=True):
                        answer = conn.answer(txn).addResponse
                        assert answer.status == pb.EOK, answer
                        self.acked.append(add.entryId)
                    time.sleep(0.002)
        except BaseException as exc:  # noqa: BLE001 - kept for the test to judge (a killed bookie breaks the stream)
            self.error = exc

    def stop(self):
        self._halt.set()
        self.join(30)


class BookieHarness:
    """Start, kill and restart real bookies (like BookKeeperClusterTestCase)."""

    def __init__(self, store, service_uri, directory):
        self.store, self.service_uri, self.directory = store, service_uri, directory
        self.bookies: list[LocalBookie] = []
        self.channels: list[BookieChannel | WireConn] = []

    def start(self, count: int = 1, http: bool = False, **settings) -> list[LocalBookie]:
        """``http``: also serve BookKeeper's HTTP admin API."""
        started = []
        for _ in range(count):
            index = len(self.bookies) + 1
            bookie = LocalBookie.create(
                index,
                self.directory / f"bookie-{index}",
                self.service_uri,
                {**HARNESS_BOOKIE, **{k: str(v) for k, v in settings.items()}},
                http=http,
            )
            bookie.start()
            self.bookies.append(bookie)
            started.append(bookie)
        wait_registered(self.store, started)
        return started

    def restart(self, bookie: LocalBookie) -> None:
        bookie.start()
        wait_registered(self.store, [bookie])

    def channel(self, bookie: LocalBookie) -> BookieChannel:
        """A gRPC channel to a bookie's admin service."""
        channel = BookieChannel(bookie.bookie_id, ("127.0.0.1", bookie.admin_port))
        self.channels.append(channel)
        return channel

    def wire(self, bookie: LocalBookie) -> WireConn:
        """A connection to a bookie's port, in BookKeeper's protocol."""
        conn = WireConn(bookie.port)
        self.channels.append(conn)
        return conn

    def close(self):
        for channel in self.channels:
            channel.close()
        for bookie in self.bookies:
            bookie.stop(kill=True)


@contextlib.contextmanager
def shared_cluster(zookeeper, directory: Path, bookies: int, **start):
    """A cluster of its own (a fresh root on the session's ZooKeeper) with real bookies, for a module's tests."""
    from bookie.meta.layout import init_cluster
    from bookie.meta.uri import parse_service_uri

    uri = f"zk+hierarchical://{zookeeper.address}/m{uuid.uuid4().hex[:8]}/ledgers"
    with MetadataStore(parse_service_uri(uri)) as store:
        init_cluster(store)
        harness = BookieHarness(store, uri, directory)
        harness.start(bookies, **start)
        try:
            yield harness
        finally:
            harness.close()


class OwnZooKeeper:
    """A ZooKeeper of a test's own, which it may kill and start again on the same port and data (the session's
    shared one must stay up), with an initialised cluster and a harness for bookies; stopped by pid on exit."""

    def __init__(self, directory: Path):
        from bookie.local.process import free_port
        from bookie.local.zookeeper import EmbeddedZooKeeper

        self.directory = directory
        self.server = EmbeddedZooKeeper(directory / "zk", free_port())
        self.pid: int | None = None
        self.uri = f"zk+hierarchical://{self.server.address}/ledgers"
        self.harness: BookieHarness | None = None

    def __enter__(self) -> OwnZooKeeper:
        from bookie.meta.layout import init_cluster
        from bookie.meta.uri import parse_service_uri

        self.start()
        with MetadataStore(parse_service_uri(self.uri)) as store:
            init_cluster(store)
        self.harness = BookieHarness(None, self.uri, self.directory)
        return self

    def start(self) -> None:
        self.pid = self.server.start()

    def kill(self) -> None:
        from bookie.local.process import stop_process_group

        stop_process_group(self.pid)

    def store(self, **timeouts) -> MetadataStore:
        from bookie.meta.uri import parse_service_uri

        return MetadataStore(parse_service_uri(self.uri), **timeouts)

    def start_bookie(self) -> LocalBookie:
        with self.store() as store:
            self.harness.store = store
            (bookie,) = self.harness.start(1)
        return bookie

    def __exit__(self, *exc) -> None:
        if self.harness is not None:
            self.harness.close()
        self.kill()

"""Helpers for tests that drive real processes: waiting, and expiring ZooKeeper sessions."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import click

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.client import BookKeeper
from bookie.client.channel import BookieChannel
from bookie.codec import wire
from bookie.codec.digest import Digester, DigestType, master_key
from bookie.codec.entry import frame_entry, parse_entry
from bookie.local.bookies import LocalBookie, wait_registered
from bookie.meta.store import MetadataStore
from bookie.storage.db.storage import DbLedgerStorage
from bookie.storage.ledger_storage import AddKey, LedgerStorage


def command_tree() -> dict[tuple[str, ...], click.Command]:
    """Every group and command under `bkctl` by its argument path, loading lazy groups as a user's call would."""
    from bkctl.cli import cli

    commands = {}

    def walk(command: click.Command, path: tuple[str, ...], ctx: click.Context) -> None:
        commands[path] = command
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                walk(sub, (*path, name), click.Context(sub, info_name=name, parent=ctx))

    walk(cli, (), click.Context(cli, info_name="bkctl"))
    return commands


# Commands without -o, each with why: what they print is not data about the cluster.
WITHOUT_OUTPUT_OPTION = {
    ("bookie", "run"): "a daemon: logs on stderr; --print-systemd-unit/--print-dockerfile print a file as it is",
    ("autorecovery", "run"): "a daemon: logs on stderr, nothing on stdout",
    ("completion",): "prints a shell script for eval",
}

# A command of each group that reaches the cluster.
EVERY_GROUP = [
    ["ledger", "list"],
    ["bookies", "list"],
    ["cluster", "info"],
    ["autorecovery", "status"],
    ["bookie", "info", "--all"],
    ["bench", "read", "--ledger", "1"],
]


def invoke(*args: str, input: str | None = None):
    """bkctl in-process, failing the test if an exception escapes (a traceback the user would see)."""
    from click.testing import CliRunner

    from bkctl.cli import cli

    result = CliRunner().invoke(cli, list(args), input=input, catch_exceptions=True)
    escaped = result.exception if not isinstance(result.exception, SystemExit) else None
    assert escaped is None, f"bkctl {' '.join(args)} raised {escaped!r}"
    return result


def assert_one_line_error(result, code: int, args) -> None:
    from bkctl.errors import ExitCode

    where = f"bkctl {' '.join(args)}: exit {result.exit_code}, stderr {result.stderr!r}"
    assert "Traceback" not in result.output, where
    assert result.exit_code in list(ExitCode), where
    assert result.exit_code == code, where
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, where


def complete(*words: str, env: dict | None = None) -> list[tuple[str, str]]:
    """What bkctl offers for the last of ``words`` (the one being typed), asked as bash asks a bkctl process:
    ``(type, value)`` pairs."""
    line = ["bkctl", *words]
    proc = subprocess.run(
        [sys.executable, "-m", "bkctl"],
        capture_output=True,
        text=True,
        timeout=30,
        env={
            **os.environ,
            **(env or {}),
            "_BKCTL_COMPLETE": "bash_complete",
            "COMP_WORDS": " ".join(line),
            "COMP_CWORD": str(len(line) - 1),
        },
    )
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
    return [tuple(item.split(",", 1)) for item in proc.stdout.splitlines() if item]  # nothing: one empty line


def values(*words: str, env: dict | None = None) -> list[str]:
    return [value for kind, value in complete(*words, env=env) if kind == "plain"]


def dead_uri() -> str:
    """A service URI whose ZooKeeper port has nothing listening."""
    from bookie.local.process import free_port

    return f"zk+hierarchical://127.0.0.1:{free_port()}/ledgers"


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


# ---- security: the credentials of conftest's secure_zookeeper and credentials fixtures ----
SASL_USER, SASL_PASSWORD = "bookkeeper", "sasl-Pw-8c1f"
DIGEST_USER, DIGEST_PASSWORD = "bkadmin", "digest-Pw-51e0"
LEDGER_PASSWORD = "ledger-Pw-77aa"
SECRETS = (SASL_PASSWORD, DIGEST_PASSWORD, LEDGER_PASSWORD)


def private_file(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o600)
    return path


def _quoted(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def jaas_client(path: Path, user: str = SASL_USER, password: str = SASL_PASSWORD) -> Path:
    """A JAAS file with ZooKeeper's client login, as a Java bookie's JVM reads it."""
    return private_file(
        path,
        "// java.security.auth.login.config\n"
        "Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n"
        f'  username="{user}"\n  password="{_quoted(password)}";\n}};\n',
    )


def wait_for(condition, what: str, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


# ---- storage ----
KEY = master_key(b"pw")
DIGESTER = Digester(DigestType.CRC32C)


def payload(ledger_id: int, entry_id: int, size: int = 100) -> bytes:
    return (f"{ledger_id}:{entry_id}:".encode() * size)[:size]


def framed(ledger_id: int, first: int, count: int, size: int = 100) -> list[bytes]:
    """Entries ``first..first+count-1`` of a ledger, framed (digest CRC32C) as a client sends them."""
    return [
        frame_entry(
            DIGESTER, ledger_id, entry_id, entry_id - 1, (entry_id + 1) * size, payload(ledger_id, entry_id, size)
        )
        for entry_id in range(first, first + count)
    ]


def add_requests(ledger_id: int, first: int, count: int, size: int = 100, key: bytes = KEY) -> list[pb.AddRequest]:
    """The v3 adds of those entries."""
    return [
        pb.AddRequest(ledgerId=ledger_id, entryId=entry_id, masterKey=key, body=body)
        for entry_id, body in enumerate(framed(ledger_id, first, count, size), first)
    ]


def records(ledger_id: int, first: int, count: int, size: int = 100) -> bytes:
    """The same entries as add records (bookie/codec/records.py): each ``int32 length | framed entry``."""
    return b"".join(struct.pack(">i", len(f)) + f for f in framed(ledger_id, first, count, size))


def add(storage: LedgerStorage, ledger_id: int, first: int, count: int, key=KEY, recovery=False, size=100):
    """Add and wait until durable; return the refused adds."""
    done = threading.Event()
    errors = []
    _, refused = storage.add_batch(
        {ledger_id: AddKey(key, recovery=recovery)},
        records(ledger_id, first, count, size),
        lambda e: (errors.append(e), done.set()),
    )
    assert done.wait(10) and errors == [None]
    return refused


def stored_entry(storage: LedgerStorage, ledger_id: int, entry_id: int):
    return parse_entry(DIGESTER, storage.read_entry(ledger_id, entry_id), ledger_id, entry_id)


class WireConn:
    """One connection to a bookie's port in BookKeeper's protocol: raw frames (v3 Requests or v2 records) and their
    answers, or ``ask``: a v3 request message (``pb.AddRequest``, ``pb.ReadRequest``...) in, its Response out."""

    def __init__(self, port: int, timeout: float = 20):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buffer = bytearray()
        self.txn = 0
        self._answers: dict[int, pb.Response] = {}  # v3 answers that came before the one waited for, by txnId
        self._cut: list[bytes] = []  # frames cut from the buffer but not yet taken

    def send(self, *frames: bytes) -> None:
        self.sock.sendall(b"".join(frames))

    def frames(self, count: int) -> list[bytes]:
        """The next ``count`` frames received (those that came with them stay for the next call)."""
        while len(self._cut) < count:
            self._cut += wire.cut_frames(self.buffer)
            if len(self._cut) >= count:
                break
            data = self.sock.recv(1 << 20)
            if not data:
                raise ConnectionError(f"closed after {len(self._cut)} of {count} answers")
            self.buffer += data
        got, self._cut = self._cut[:count], self._cut[count:]
        return got

    def closed(self) -> bool:
        """Whether the bookie closed the connection (EOF or reset) within the socket timeout."""
        try:
            while data := self.sock.recv(65536):
                self.buffer += data
        except ConnectionResetError:
            pass
        return True

    def v3(self, operation: int, priority: int | None = None, **fields) -> bytes:
        self.txn += 1
        header = pb.BKPacketHeader(version=pb.VERSION_THREE, operation=operation, txnId=self.txn)
        if priority is not None:
            header.priority = priority
        return wire.encode_v3(pb.Request(header=header, **fields))

    def call(self, operation: int, **fields):
        self.send(self.v3(operation, **fields))
        return wire.decode_v3_response(self.frames(1)[0])

    def send_request(self, request, priority: int | None = None) -> int:
        """Send one v3 request for ``request`` (its operation told by its type); its txnId, for ``answer``."""
        return self.send_requests([request], priority)[0]

    def send_requests(self, requests: list, priority: int | None = None) -> list[int]:
        """Send v3 requests in one write (one pass of the bookie's, as a pipelining client's); their txnIds."""
        frames = []
        for request in requests:
            operation, name = _V3_REQUESTS[type(request).__name__]
            frames.append(self.v3(operation, priority, **{name: request}))
        self.send(*frames)
        return list(range(self.txn - len(requests) + 1, self.txn + 1))

    def answer(self, txn: int):
        """The Response to request ``txn`` (answers to other requests that come first are kept for their turn)."""
        while txn not in self._answers:
            response = wire.decode_v3_response(self.frames(1)[0])
            self._answers[response.header.txnId] = response
        return self._answers.pop(txn)

    def ask(self, request, priority: int | None = None):
        """Send ``request`` and return its answer: the operation's response (``pb.AddResponse``...)."""
        response = self.answer(self.send_request(request, priority))
        return getattr(response, _V3_REQUESTS[type(request).__name__][1].replace("Request", "Response"))

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireConn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# a v3 request message's type -> (operation, its field in Request; the answer's field is named ...Response)
_V3_REQUESTS = {
    "AddRequest": (pb.ADD_ENTRY, "addRequest"),
    "ReadRequest": (pb.READ_ENTRY, "readRequest"),
    "WriteLacRequest": (pb.WRITE_LAC, "writeLacRequest"),
    "ReadLacRequest": (pb.READ_LAC, "readLacRequest"),
    "GetBookieInfoRequest": (pb.GET_BOOKIE_INFO, "getBookieInfoRequest"),
    "ForceLedgerRequest": (pb.FORCE_LEDGER, "forceLedgerRequest"),
    "GetListOfEntriesOfLedgerRequest": (pb.GET_LIST_OF_ENTRIES_OF_LEDGER, "getListOfEntriesOfLedgerRequest"),
}


def read_stored(conn: WireConn, ledger_id: int, first: int, last: int) -> dict[int, bytes]:
    """The payloads of entries ``first..last`` that one bookie answers with (reads, pipelined), by entry id."""
    entries = {}
    for start in range(first, last + 1, 500):
        ids = range(start, min(start + 500, last + 1))
        for txn in conn.send_requests([pb.ReadRequest(ledgerId=ledger_id, entryId=e) for e in ids]):
            answer = conn.answer(txn).readResponse
            if answer.status == pb.EOK:
                entry = parse_entry(DIGESTER, answer.body, ledger_id)
                entries[entry.entry_id] = entry.payload
    return entries


def crash(storage: LedgerStorage) -> None:
    """What kill -9 leaves: whatever reached the OS; no checkpoint, no shutdown."""
    for journal in storage.journals:
        journal.stop()  # the journal threads die with the process; nothing more is written


def crash_db(storage: DbLedgerStorage) -> None:
    """What kill -9 leaves of a DbLedgerStorage: the journal, what checkpoints wrote, nothing of the write cache."""
    for journal in storage.journals:
        journal.stop()
    for single in storage.dirs:
        single.locations.close()
        single.ledgers.close()


# ---- bookie processes ----
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
                {k: str(v) for k, v in settings.items()},
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


# ---- cluster checks ----
def write_ledgers(uri, count, quorum=(3, 3, 2), entries=20):
    with BookKeeper(uri) as bk:
        ids = []
        for _ in range(count):
            ledger = bk.create_ledger(*quorum)
            ledger.add_entries(b"entry-%d" % i for i in range(entries))
            ledger.close()
            ids.append(ledger.ledger_id)
        return ids


def wipe(bookie):
    """Lose a bookie's data but keep its cookies (as if its disks were restored empty, same identity)."""
    bookie.stop()
    for directory in (bookie.journal_dir, bookie.ledger_dir):
        for path in Path(directory, "current").iterdir():
            if path.name != "VERSION":
                shutil.rmtree(path) if path.is_dir() else path.unlink()


def check(bkctl, uri, *args):
    result = bkctl("-u", uri, "cluster", "check", "--recheck-delay", "1", *args, "-o", "json")
    return result.exit_code, json.loads(result.stdout) if result.stdout else None


def flip_byte(bookie, needle: bytes, offset: int = 2) -> bool:
    """Corrupt the first copy of ``needle`` in the bookie's entry log files; False while it is not on disk yet."""
    for log in Path(bookie.ledger_dir, "current").glob("*.log"):
        data = log.read_bytes()
        at = data.find(needle)
        if at >= 0:
            with open(log, "r+b") as f:
                f.seek(at + offset)
                f.write(b"X")
            return True
    return False


def ledgers_naming(bkctl, uri, bookie_id) -> list[int]:
    result = bkctl("-u", uri, "bookie", "recover", bookie_id, "--query", "-o", "json")
    return [d["ledgerId"] for d in json.loads(result.stdout)]

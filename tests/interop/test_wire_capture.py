"""Our wire codec against real BookKeeper 4.17.4 frames (../shared/bk-oracle).

A recording proxy registers itself in a Java cluster's ZooKeeper as a fourth bookie and forwards each connection to
one Java bookie. The Java client writes and reads ledgers of ensemble 4 (so the proxy is always in the ensemble), once
with v3 and once with v2; every frame that crossed the proxy, in both directions, must decode with bookie.codec.wire
and re-encode to the same bytes. Each ledger is left open and then read with recovery, so fencing reads cross too.
"""

from __future__ import annotations

import socket
import threading

import pytest

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.codec import wire
from bookie.meta.registration import BookieRegistry, BookieServiceInfo
from bookie.meta.store import MetadataStore
from bookie.meta.uri import parse_service_uri

from interop.oracle import JavaCluster, output, require_oracle

require_oracle()


class RecordingProxy:
    """Forwards every accepted connection to ``target`` and records the bytes of each direction."""

    def __init__(self, target: tuple[str, int]):
        self.target = target
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.connections: list[tuple[bytearray, bytearray]] = []  # (client -> bookie, bookie -> client)
        self.lock = threading.Lock()
        self.threads: list[threading.Thread] = []
        self.sockets: list[socket.socket] = []
        self.accepter = threading.Thread(target=self._accept, daemon=True)
        self.accepter.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return  # closed
            bookie = socket.create_connection(self.target)
            requests, responses = bytearray(), bytearray()
            with self.lock:
                self.connections.append((requests, responses))
                self.sockets += [client, bookie]
                for args in ((client, bookie, requests), (bookie, client, responses)):
                    thread = threading.Thread(target=self._pump, args=args, daemon=True)
                    thread.start()
                    self.threads.append(thread)

    def _pump(self, source: socket.socket, sink: socket.socket, record: bytearray) -> None:
        try:
            while data := source.recv(65536):
                with self.lock:
                    record += data
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.server.close()
        with self.lock:
            for s in self.sockets:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
        self.accepter.join(5)
        for thread in self.threads:
            thread.join(5)


@pytest.fixture(scope="module")
def java_cluster(tmp_path_factory):
    """Three Java bookies and their ZooKeeper, for the whole module (a start costs ~10 s)."""
    cluster = JavaCluster.start(tmp_path_factory.mktemp("bk"))
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def capture(java_cluster):
    """Run the Java client through the proxy with v3, then with v2; return ``{"v3": [...], "v2": [...]}`` of
    recorded connections (request bytes, response bytes)."""
    zk = java_cluster.zk
    proxy = RecordingProxy(("127.0.0.1", java_cluster.bookie_ports[0]))
    store = None
    try:
        store = MetadataStore(parse_service_uri(java_cluster.service_uri))
        BookieRegistry(store).register(f"127.0.0.1:{proxy.port}", BookieServiceInfo.for_bookie("127.0.0.1", proxy.port))
        recorded = {}
        for version, flag in (("v3", ()), ("v2", ("--v2",))):
            start = len(proxy.connections)
            ledger = output(
                "bk-write",
                "--zk",
                zk,
                "--n",
                "20",
                "--text",
                "entry",
                "--suffix-index",
                "--ensemble",
                "4",
                "--write-quorum",
                "2",
                "--ack-quorum",
                "2",
                "--no-close",
                *flag,
            ).strip()
            # Left open, the ledger is recovered by the read: fencing reads, then the reads of its entries
            lines = output("bk-read", "--zk", zk, "--ledger", ledger, *flag).splitlines()
            assert len(lines) == 20, lines
            with proxy.lock:
                recorded[version] = [(bytes(a), bytes(b)) for a, b in proxy.connections[start:]]
        yield recorded
    finally:
        if store is not None:
            store.close()
        proxy.close()


def _exchange(port: int, requests: list[bytes], answers: int) -> list[bytes]:
    """Send our frames to a Java bookie on one connection; return the bodies of its first ``answers`` frames, or
    fewer if it closes (or resets) the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(b"".join(requests))
        buffer, frames = bytearray(), []
        try:
            while len(frames) < answers and (data := conn.recv(65536)):
                buffer += data
                frames += wire.cut_frames(buffer)
        except ConnectionResetError:  # closed with our bytes unread
            pass
        return frames


def _frames(stream: bytes) -> list[bytes]:
    buffer = bytearray(stream)
    frames = wire.cut_frames(buffer)
    assert buffer == b"", f"{len(buffer)} bytes of a partial frame left at the end of a connection"
    return frames


def test_the_proxy_was_in_every_ensemble(capture):
    for version in ("v3", "v2"):
        assert capture[version], f"the Java client never connected to the proxy with {version}"


def test_default_java_client_sends_no_auth_frame(capture):
    """proto/README.md: with BookKeeper's default (AuthDisabledPlugin) the client's first frame is a real request."""
    for version in ("v3", "v2"):
        for requests, _ in capture[version]:
            first = _frames(requests)[0]
            request = wire.RequestDecoder().decode(first)
            if isinstance(request, pb.Request):
                assert request.header.operation != pb.AUTH
            else:
                assert not isinstance(request, wire.AuthRequestV2)


def test_v3_frames_decode_and_reencode_byte_for_byte(capture):
    operations = set()
    for requests, responses in capture["v3"]:
        decoder = wire.RequestDecoder()
        for body in _frames(requests):
            request = decoder.decode(body)
            assert decoder.v3, "a v3 client's frame was not a v3 Request"
            assert wire.encode_v3(request) == wire.frame(body)
            fencing = request.HasField("readRequest") and request.readRequest.flag == pb.ReadRequest.FENCE_LEDGER
            operations.add((request.header.operation, fencing))
        for body in _frames(responses):
            response = wire.decode_v3_response(body)
            assert wire.encode_v3(response) == wire.frame(body)
            operation = next((f.name for f, _ in response.ListFields() if f.number >= 100), None)
            assert operation is not None, f"a response without an operation response: {response}"
            # the envelope's status repeats the operation's (proto/README.md)
            assert response.status == getattr(response, operation).status
    # (which bookie of a write set serves a plain read is the client's choice: the proxy may see none of them)
    assert {(pb.ADD_ENTRY, False), (pb.READ_ENTRY, True)} <= operations


def test_v2_frames_decode_and_reencode_byte_for_byte(capture):
    kinds = set()
    for requests, responses in capture["v2"]:
        decoder = wire.RequestDecoder()
        bodies = _frames(requests)
        for body in bodies:
            request = decoder.decode(body)
            if isinstance(request, pb.Request):  # v3 even with useV2WireProtocol (e.g. GET_BOOKIE_INFO)
                assert wire.encode_v3(request) == wire.frame(body)
                continue
            assert wire.encode_request_v2(request) == wire.frame(body)
            kinds.add((type(request).__name__, request.flags & wire.FLAG_DO_FENCING))
        for body in _frames(responses):
            response = wire.decode_response_v2(body) if not decoder.v3 else wire.decode_v3_response(body)
            encode = wire.encode_v3 if isinstance(response, pb.Response) else wire.encode_response_v2
            assert encode(response) == wire.frame(body)
    # the adds, the recovery's fencing reads and the plain reads of the entries
    assert {("AddRequestV2", 0), ("ReadRequestV2", wire.FLAG_DO_FENCING)} <= kinds


def _v3(operation: int, txn_id: int, **fields) -> bytes:
    header = pb.BKPacketHeader(version=pb.VERSION_THREE, operation=operation, txnId=txn_id)
    return wire.encode_v3(pb.Request(header=header, **fields))


def test_java_bookie_answers_our_v3_frames(java_cluster):
    auth = pb.AuthMessage(authPluginName=wire.AUTH_DISABLED_PLUGIN, payload=b"")
    requests = [
        _v3(pb.START_TLS, 5, startTLSRequest=pb.StartTLSRequest()),  # first: the connection must stay usable
        _v3(pb.AUTH, 1, authRequest=auth),
        _v3(pb.GET_BOOKIE_INFO, 2, getBookieInfoRequest=pb.GetBookieInfoRequest(requested=3)),
        _v3(pb.READ_ENTRY, 3, readRequest=pb.ReadRequest(ledgerId=987654321, entryId=0)),
        _v3(pb.READ_LAC, 4, readLacRequest=pb.ReadLacRequest(ledgerId=987654321)),
    ]
    answers = {
        r.header.txnId: r for r in map(wire.decode_v3_response, _exchange(java_cluster.bookie_ports[1], requests, 5))
    }
    assert sorted(answers) == [1, 2, 3, 4, 5]
    # the handshake a default bookie gives (proto/README.md)
    assert answers[1].status == pb.EOK
    assert answers[1].authResponse == pb.AuthMessage(authPluginName="AuthDisabledPlugin", payload=b"")
    assert answers[2].getBookieInfoResponse.status == pb.EOK
    assert answers[2].getBookieInfoResponse.freeDiskSpace > 0
    assert answers[3].readResponse.status in (pb.ENOLEDGER, pb.ENOENTRY)
    assert answers[4].readLacResponse.status in (pb.ENOLEDGER, pb.ENOENTRY)
    # a bookie without TLS refuses START_TLS with EBADREQ and no StartTLSResponse, and stays usable
    assert answers[5].status == pb.EBADREQ and not answers[5].HasField("startTLSResponse")


def test_java_bookie_answers_our_v2_frames(java_cluster):
    requests = [
        wire.encode_request_v2(wire.AuthRequestV2(wire.AUTH_DISABLED_PLUGIN, b"")),
        wire.encode_request_v2(wire.ReadRequestV2(987654321, 0)),
    ]
    answers = [wire.decode_response_v2(body) for body in _exchange(java_cluster.bookie_ports[1], requests, 2)]
    assert answers[0] == wire.AuthResponseV2("AuthDisabledPlugin", b"")
    assert answers[1][:3] in ((1, 987654321, 0), (2, 987654321, 0))  # ENOLEDGER or ENOENTRY, v2 codes


def test_java_bookie_closes_on_a_v2_opcode_without_a_layout(java_cluster):
    """READ_LAC (4) has a v2 number but no v2 layout: the bookie's decoder fails and it drops the connection."""
    header = wire.packet_header(wire.V2_VERSION, wire.READ_LAC, 0).to_bytes(4, "big", signed=True)
    assert _exchange(java_cluster.bookie_ports[1], [wire.frame(header + bytes(16))], 1) == []

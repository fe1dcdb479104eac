"""BookKeeper's own protocol (v3 and v2) on a real bookie's port: raw frames from bookie/codec/wire.py over a socket.

The semantics (fencing, statuses, read-only, long polls) are test_protocol.py's, asked in v3 one request at a time;
here: each operation in both versions, the envelope, pipelining, and what a connection does with frames it cannot
use."""

from __future__ import annotations

import socket
import time

import pytest

from bookie._proto import bookie_admin_pb2 as admin
from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.codec import wire
from bookie.codec.availability import AvailabilityOfEntries
from bookie.codec.entry import parse_entry

from support.storage import DIGESTER, KEY, payload, records
from support.waiting import wait_for
from support.wire import WireConn


def body(ledger_id: int, entry_id: int) -> bytes:
    return records(ledger_id, entry_id, 1)[4:]


def v3_add_request(ledger_id: int, entry_id: int, key: bytes = KEY) -> pb.AddRequest:
    return pb.AddRequest(ledgerId=ledger_id, entryId=entry_id, masterKey=key, body=body(ledger_id, entry_id))


def v3_add(conn: WireConn, ledger_id: int, entry_id: int, key: bytes = KEY, recovery: bool = False) -> pb.Response:
    add = v3_add_request(ledger_id, entry_id, key)
    if recovery:
        add.flag = pb.AddRequest.RECOVERY_ADD
    return conn.call(pb.ADD_ENTRY, addRequest=add)


def v2(conn: WireConn, request) -> wire.ResponseV2:
    conn.send(wire.encode_request_v2(request))
    return wire.decode_response_v2(conn.frames(1)[0])


def v2_add(ledger_id: int, entry_id: int, key: bytes = KEY, flags: int = 0) -> wire.AddRequestV2:
    return wire.AddRequestV2(ledger_id, entry_id, key, body(ledger_id, entry_id), flags)


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    from support.cluster import shared_cluster

    with shared_cluster(zookeeper, tmp_path_factory.mktemp("wire"), bookies=1) as harness:
        yield harness


@pytest.fixture
def bookie(cluster):
    return cluster.bookies[0]


@pytest.fixture
def conn(bookie):
    c = WireConn(bookie.port)
    yield c
    c.close()


_ledgers = iter(range(1000, 10**6))


@pytest.fixture
def ledger() -> int:
    return next(_ledgers)


# ---- v3 ----
def test_v3_add_and_read_echo_the_header_and_repeat_the_status(conn, ledger):
    added = v3_add(conn, ledger, 0)
    assert (added.header.operation, added.header.txnId, added.header.version) == (pb.ADD_ENTRY, 1, pb.VERSION_THREE)
    assert added.status == added.addResponse.status == pb.EOK
    assert (added.addResponse.ledgerId, added.addResponse.entryId) == (ledger, 0)
    read = conn.call(pb.READ_ENTRY, readRequest=pb.ReadRequest(ledgerId=ledger, entryId=0))
    assert read.status == read.readResponse.status == pb.EOK and read.header.txnId == 2
    assert parse_entry(DIGESTER, read.readResponse.body, ledger, 0).payload == payload(ledger, 0)
    assert read.readResponse.maxLAC == -1  # the entry's own LAC: nothing before it was confirmed
    missing = conn.call(pb.READ_ENTRY, readRequest=pb.ReadRequest(ledgerId=ledger, entryId=7))
    assert missing.status == missing.readResponse.status == pb.ENOENTRY
    unknown = conn.call(pb.READ_ENTRY, readRequest=pb.ReadRequest(ledgerId=ledger + 10**9, entryId=0))
    assert unknown.status == pb.ENOLEDGER


def test_v3_fencing_wrong_key_and_recovery_adds(conn, ledger):
    assert v3_add(conn, ledger, 0).status == pb.EOK
    wrong = v3_add(conn, ledger, 1, key=b"w" * 20)
    assert wrong.status == wrong.addResponse.status == pb.EUA
    fence = pb.ReadRequest(ledgerId=ledger, entryId=-1, flag=pb.ReadRequest.FENCE_LEDGER, masterKey=KEY)
    fenced = conn.call(pb.READ_ENTRY, readRequest=fence)
    assert fenced.status == pb.EOK and parse_entry(DIGESTER, fenced.readResponse.body).entry_id == 0
    assert v3_add(conn, ledger, 1).status == pb.EFENCED
    assert v3_add(conn, ledger, 1, recovery=True).status == pb.EOK


def test_v3_lac_operations(conn, ledger):
    for entry_id in range(3):
        assert v3_add(conn, ledger, entry_id).status == pb.EOK
    lac_body = b"explicit-lac"
    written = conn.call(
        pb.WRITE_LAC, writeLacRequest=pb.WriteLacRequest(ledgerId=ledger, lac=1, masterKey=KEY, body=lac_body)
    )
    assert written.status == written.writeLacResponse.status == pb.EOK
    read_lac = conn.call(pb.READ_LAC, readLacRequest=pb.ReadLacRequest(ledgerId=ledger))
    assert read_lac.status == pb.EOK and read_lac.readLacResponse.lacBody == lac_body
    assert parse_entry(DIGESTER, read_lac.readLacResponse.lastEntryBody).entry_id == 2
    forced = conn.call(pb.FORCE_LEDGER, forceLedgerRequest=pb.ForceLedgerRequest(ledgerId=ledger))
    assert forced.status == forced.forceLedgerResponse.status == pb.EOK
    listed = conn.call(
        pb.GET_LIST_OF_ENTRIES_OF_LEDGER,
        getListOfEntriesOfLedgerRequest=pb.GetListOfEntriesOfLedgerRequest(ledgerId=ledger),
    )
    answer = listed.getListOfEntriesOfLedgerResponse
    assert listed.status == answer.status == pb.EOK
    assert list(AvailabilityOfEntries.decode(answer.availabilityOfEntriesOfLedger)) == [0, 1, 2]


def test_v3_long_poll_answers_when_the_lac_moves(conn, bookie, ledger):
    for entry_id in range(2):
        assert v3_add(conn, ledger, entry_id).status == pb.EOK
    poll = pb.ReadRequest(
        ledgerId=ledger, entryId=-1, previousLAC=0, timeOut=10_000, flag=pb.ReadRequest.ENTRY_PIGGYBACK
    )
    conn.send(conn.v3(pb.READ_ENTRY, readRequest=poll))
    other = WireConn(bookie.port)
    try:
        started = time.monotonic()
        assert v3_add(other, ledger, 2).status == pb.EOK  # entry 2 carries LAC 1: the LAC moves past 0
        answer = wire.decode_v3_response(conn.frames(1)[0])
        assert time.monotonic() - started < 5
        assert answer.status == pb.EOK and answer.readResponse.maxLAC == 1
        assert answer.readResponse.entryId == 1  # the piggybacked entry: previousLAC + 1
    finally:
        other.close()


def test_bookie_info_auth_start_tls_and_unserved_operations(conn):
    info = conn.call(
        pb.GET_BOOKIE_INFO,
        getBookieInfoRequest=pb.GetBookieInfoRequest(
            requested=pb.GetBookieInfoRequest.TOTAL_DISK_CAPACITY | pb.GetBookieInfoRequest.FREE_DISK_SPACE
        ),
    )
    assert info.status == pb.EOK
    assert info.getBookieInfoResponse.totalDiskCapacity >= info.getBookieInfoResponse.freeDiskSpace > 0
    auth = conn.call(pb.AUTH, authRequest=pb.AuthMessage(authPluginName=wire.AUTH_DISABLED_PLUGIN, payload=b""))
    assert auth.status == pb.EOK and auth.authResponse.authPluginName == wire.AUTH_DISABLED_PLUGIN
    tls = conn.call(pb.START_TLS, startTLSRequest=pb.StartTLSRequest())
    assert tls.status == pb.EBADREQ and not tls.HasField("startTLSResponse")  # no TLS configured: as Java's
    for operation in (pb.RANGE_READ_ENTRY, pb.BATCH_READ_ENTRY):
        assert conn.call(operation).status == pb.EBADREQ
    assert conn.call(pb.ADD_ENTRY).status == pb.EBADREQ  # the operation without its message
    assert v3_add(conn, next(_ledgers), 0).status == pb.EOK  # and the connection still serves


def test_v3_pipelining_thousands_of_adds_matched_by_txn_id(conn, ledger):
    count = 5000
    frames = []
    for entry_id in range(count):
        frames.append(conn.v3(pb.ADD_ENTRY, addRequest=v3_add_request(ledger, entry_id)))
    conn.send(*frames)
    answers = [wire.decode_v3_response(f) for f in conn.frames(count)]
    assert sorted(a.header.txnId for a in answers) == list(range(1, count + 1))
    assert all(a.status == pb.EOK and a.addResponse.entryId == a.header.txnId - 1 for a in answers)


def test_one_pass_of_adds_over_two_ledgers_refuses_only_those_with_a_wrong_key(conn, ledger):
    """The bookie takes a pass's adds as batches with one key per ledger: a wrong key in the middle of a run of adds
    (bookie/codec/frames.py) fails its own add, not its neighbours'."""
    other = next(_ledgers)
    assert v3_add(conn, other, 0).status == pb.EOK
    frames, wrong = [], set()
    for entry_id in range(1, 40):
        frames.append(conn.v3(pb.ADD_ENTRY, addRequest=v3_add_request(ledger, entry_id - 1)))
        key = b"w" * 20 if entry_id % 10 == 0 else KEY
        frames.append(conn.v3(pb.ADD_ENTRY, addRequest=v3_add_request(other, entry_id, key)))
        if key != KEY:
            wrong.add((other, entry_id))
    conn.send(*frames)
    answers = [wire.decode_v3_response(f).addResponse for f in conn.frames(len(frames))]
    statuses = {(a.ledgerId, a.entryId): a.status for a in answers}
    assert len(statuses) == len(frames) and wrong == {(other, 10), (other, 20), (other, 30)}
    assert {at for at, status in statuses.items() if status != pb.EOK} == wrong
    assert {statuses[at] for at in wrong} == {pb.EUA}


# ---- v2 ----
def test_v2_add_read_fence_and_batch_read(conn, ledger):
    for entry_id in range(5):
        added = v2(conn, v2_add(ledger, entry_id))
        assert added == wire.AddResponseV2(0, ledger, entry_id)
    read = v2(conn, wire.ReadRequestV2(ledger, 3))
    assert (read.rc, read.ledger_id, read.entry_id) == (0, ledger, 3)
    assert parse_entry(DIGESTER, bytes(read.body), ledger, 3).payload == payload(ledger, 3)
    missing = v2(conn, wire.ReadRequestV2(ledger, 9))
    assert (missing.rc, bytes(missing.body)) == (2, b"")  # ENOENTRY, no body
    batch = v2(conn, wire.BatchReadRequestV2(ledger, 1, request_id=77, max_count=10, max_size=1 << 20))
    assert (batch.rc, batch.request_id, len(batch.entries)) == (0, 77, 4)  # entries 1..4: stops at the end
    assert [parse_entry(DIGESTER, bytes(e)).entry_id for e in batch.entries] == [1, 2, 3, 4]
    small = v2(conn, wire.BatchReadRequestV2(ledger, 0, request_id=78, max_count=10, max_size=300))
    assert len(small.entries) == 1  # maxSize counts the response: never less than the first entry
    fenced = v2(conn, wire.ReadRequestV2(ledger, 4, wire.FLAG_DO_FENCING, KEY))
    assert fenced.rc == 0
    assert v2(conn, v2_add(ledger, 5)).rc == 104  # EFENCED
    assert v2(conn, v2_add(ledger, 5, flags=wire.FLAG_RECOVERY_ADD | wire.FLAG_HIGH_PRIORITY)).rc == 0
    assert v2(conn, v2_add(ledger, 6, key=b"k" * 20, flags=wire.FLAG_RECOVERY_ADD)).rc == 102  # EUA
    assert v2(conn, wire.ReadRequestV2(ledger + 10**9, 0)).rc == 1  # ENOLEDGER


def test_v2_auth_and_a_v2_connection_stays_v2(conn, ledger):
    answer = v2(conn, wire.AuthRequestV2(wire.AUTH_DISABLED_PLUGIN, b""))
    assert answer == wire.AuthResponseV2(wire.AUTH_DISABLED_PLUGIN, b"")
    assert v2(conn, v2_add(ledger, 0)).rc == 0
    # BookKeeper's decoder never goes back to v3 on a connection that spoke v2: the v3 frame is garbage to it
    conn.send(conn.v3(pb.READ_ENTRY, readRequest=pb.ReadRequest(ledgerId=ledger, entryId=0)))
    assert conn.closed()


# ---- bad frames and back-pressure ----
@pytest.mark.parametrize(
    "junk",
    [
        wire.LENGTH.pack(-1),
        wire.LENGTH.pack(wire.MAX_FRAME_SIZE),  # length + 4 is over the limit
        wire.frame(b"\x02\x06\x00\x00" + b"\x00" * 16),  # v2 GET_BOOKIE_INFO: an opcode without a v2 layout
        wire.frame(b"\xff" * 12),  # neither a v3 Request nor a v2 header
    ],
)
def test_bad_frames_close_the_connection_and_the_bookie_serves_on(bookie, junk, ledger):
    bad = WireConn(bookie.port)
    try:
        bad.send(junk)
        assert bad.closed()
    finally:
        bad.close()
    good = WireConn(bookie.port)
    try:
        assert v3_add(good, ledger, 0).status == pb.EOK
    finally:
        good.close()


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


def test_a_client_that_never_reads_its_answers_is_paused_not_buffered(bookie, ledger):
    """The bookie stops reading a connection whose answers pile up: what the client sends then waits in the
    kernel's buffers (the client's sendall blocks), and the bookie's memory does not grow with it."""
    slow = WireConn(bookie.port)
    slow.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow.sock.settimeout(0.5)
    read = wire.encode_request_v2(wire.ReadRequestV2(ledger, 0))
    assert v2(WireConn(bookie.port), v2_add(ledger, 0)).rc == 0
    before = _rss_kib(bookie.pid)
    sent = 0
    try:
        chunk = read * 2000  # 2000 reads of a ~130-byte entry each
        for _ in range(2000):  # up to 4M reads: far more answers than any bound
            slow.sock.sendall(chunk)
            sent += 2000
    except TimeoutError:
        pass  # the bookie stopped reading: our sends block
    finally:
        grown = _rss_kib(bookie.pid) - before
        slow.close()
    assert sent < 4_000_000, "the bookie kept reading requests whose answers nobody took"
    assert grown < 64 * 1024, f"the bookie's memory grew by {grown} KiB"
    wait_for(lambda: v2(WireConn(bookie.port), wire.ReadRequestV2(ledger, 0)).rc == 0, "the bookie serving again")


def test_read_only_bookie_refuses_adds_but_lets_recovery_adds_through(cluster, bookie, conn, ledger):
    with cluster.channel(bookie) as channel:
        channel.admin.SetReadOnly(admin.SetReadOnlyRequest(readOnly=True), timeout=10)
        try:
            assert v3_add(conn, ledger, 0).status == pb.EREADONLY
            v2_conn = WireConn(bookie.port)
            assert v2(v2_conn, v2_add(ledger, 0)).rc == 105  # EREADONLY
            v2_conn.close()
            recovery = pb.AddRequest(
                ledgerId=ledger, entryId=0, masterKey=KEY, body=body(ledger, 0), flag=pb.AddRequest.RECOVERY_ADD
            )
            conn.send(conn.v3(pb.ADD_ENTRY, priority=100, addRequest=recovery))
            answer = wire.decode_v3_response(conn.frames(1)[0])
            assert answer.status == pb.EOK  # BookKeeper: high priority writes go on while the disks have room
        finally:
            channel.admin.SetReadOnly(admin.SetReadOnlyRequest(readOnly=False), timeout=10)

"""The wire protocol's semantics at a real bookie (proto/README.md), asked in BookKeeper's protocol v3 one request at
a time (test_wire_server.py: the envelope, v2, pipelining)."""

import time

import pytest

from bookie._proto import bookie_admin_pb2 as admin
from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.codec.availability import AvailabilityOfEntries
from bookie.codec.digest import Digester, DigestType
from bookie.codec.entry import parse_entry
from bookie.codec.lac import frame_lac, parse_lac

from support.cluster import metric
from support.storage import DIGESTER, KEY, payload
from support.waiting import wait_for
from support.wire import add_requests


def add_request(ledger_id, entry_id, key=KEY, recovery=False):
    (request,) = add_requests(ledger_id, entry_id, 1, key=key)
    if recovery:
        request.flag = pb.AddRequest.RECOVERY_ADD
    return request


def add(conn, ledger_id, entry_id, key=KEY, recovery=False):
    return conn.ask(add_request(ledger_id, entry_id, key, recovery)).status


def read(conn, ledger_id, entry_id, **fields):
    return conn.ask(pb.ReadRequest(ledgerId=ledger_id, entryId=entry_id, **fields))


@pytest.fixture
def bookie(harness):
    (bookie,) = harness.start(1)
    return bookie


@pytest.fixture
def conn(harness, bookie):
    return harness.wire(bookie)


def test_fence_then_adds(conn):
    assert add(conn, 1, 0) == pb.EOK
    fenced = read(conn, 1, -1, flag=pb.ReadRequest.FENCE_LEDGER, masterKey=KEY)
    assert fenced.status == pb.EOK and parse_entry(DIGESTER, fenced.body, 1, 0).payload == payload(1, 0)
    assert add(conn, 1, 1) == pb.EFENCED
    assert add(conn, 1, 1, recovery=True) == pb.EOK


def test_fence_needs_the_master_key_and_creates_unknown_ledgers(conn):
    assert read(conn, 2, -1, flag=pb.ReadRequest.FENCE_LEDGER).status == pb.EUA
    assert read(conn, 2, -1, flag=pb.ReadRequest.FENCE_LEDGER, masterKey=KEY).status == pb.ENOENTRY
    assert add(conn, 2, 0) == pb.EFENCED  # the unknown ledger was created fenced
    assert read(conn, 2, -1, flag=pb.ReadRequest.FENCE_LEDGER, masterKey=b"x" * 20).status == pb.EUA


def test_status_codes(conn):
    assert add(conn, 3, 0) == pb.EOK
    assert add(conn, 3, 1, key=b"wrong-key-wrong-key!") == pb.EUA
    assert read(conn, 99, 0).status == pb.ENOLEDGER
    assert read(conn, 3, 5).status == pb.ENOENTRY
    last = read(conn, 3, -1)
    assert last.status == pb.EOK and parse_entry(DIGESTER, last.body).entry_id == 0


def test_read_only_bookie_refuses_adds_and_serves_reads(harness, bookie, conn):
    operator = harness.channel(bookie).admin
    assert add(conn, 4, 0) == pb.EOK
    state = operator.SetReadOnly(admin.SetReadOnlyRequest(readOnly=True), timeout=10)
    assert state.readOnly and state.readOnlyByOperator
    assert add(conn, 4, 1) == pb.EREADONLY
    assert read(conn, 4, 0).status == pb.EOK
    operator.SetReadOnly(admin.SetReadOnlyRequest(readOnly=False), timeout=10)
    assert add(conn, 4, 1) == pb.EOK


def test_list_of_entries_from_the_index(conn):
    present = [0, 1, 2, 5, 6, 7, 8, 20]
    for entry_id in present:
        assert add(conn, 5, entry_id) == pb.EOK
    answer = conn.ask(pb.GetListOfEntriesOfLedgerRequest(ledgerId=5))
    assert (answer.status, answer.ledgerId) == (pb.EOK, 5)
    assert answer.availabilityOfEntriesOfLedger == AvailabilityOfEntries.from_entries(present).encode()
    assert sorted(AvailabilityOfEntries.decode(answer.availabilityOfEntriesOfLedger)) == present
    unknown = conn.ask(pb.GetListOfEntriesOfLedgerRequest(ledgerId=77))
    assert (unknown.status, unknown.ledgerId) == (pb.ENOLEDGER, 77)


def test_explicit_lac_and_read_lac(conn):
    digester = Digester(DigestType.CRC32C)
    assert conn.ask(pb.ReadLacRequest(ledgerId=6)).status == pb.ENOLEDGER
    add(conn, 6, 0)
    answer = conn.ask(pb.WriteLacRequest(ledgerId=6, lac=0, masterKey=KEY, body=frame_lac(digester, 6, 0)))
    assert answer.status == pb.EOK
    lac = conn.ask(pb.ReadLacRequest(ledgerId=6))
    assert parse_lac(digester, lac.lacBody, 6) == 0 and parse_entry(DIGESTER, lac.lastEntryBody).entry_id == 0
    assert conn.ask(pb.ForceLedgerRequest(ledgerId=6)).status == pb.EOK


def test_long_poll_answers_when_the_lac_advances(bookie, conn):
    for entry_id in range(3):  # entry e carries LAC e-1: the bookie's LAC is 1
        add(conn, 7, entry_id)
    immediate = read(conn, 7, -1, previousLAC=0, timeOut=5000, flag=pb.ReadRequest.ENTRY_PIGGYBACK)
    assert immediate.maxLAC == 1 and parse_entry(DIGESTER, immediate.body).entry_id == 1
    # the poll stays in flight on the connection, which serves the add that answers it
    poll = conn.send_request(
        pb.ReadRequest(ledgerId=7, entryId=-1, previousLAC=1, timeOut=10000, flag=pb.ReadRequest.ENTRY_PIGGYBACK)
    )
    # READ_ENTRY_LONG_POLL_PRE_WAIT is recorded once the poll waits for the LAC (the immediate one above did not)
    wait_for(lambda: metric(bookie, "bookkeeper_server_READ_ENTRY_LONG_POLL_PRE_WAIT_count"), "the poll to wait")
    added = time.monotonic()
    assert add(conn, 7, 3) == pb.EOK  # carries LAC 2
    answer = conn.answer(poll)
    answered = time.monotonic()
    assert answer.readResponse.maxLAC == 2 and parse_entry(DIGESTER, answer.readResponse.body).entry_id == 2
    assert added < answered < added + 5  # answered by the add, long before the poll's 10 s timeout
    timed_out = read(conn, 7, -1, previousLAC=2, timeOut=300)
    assert (timed_out.status, timed_out.maxLAC, timed_out.entryId) == (pb.EOK, 2, -1)
    assert read(conn, 7, 0, previousLAC=0, flag=pb.ReadRequest.ENTRY_PIGGYBACK).status == pb.EBADREQ


def test_bookie_info(conn):
    flags = pb.GetBookieInfoRequest.TOTAL_DISK_CAPACITY | pb.GetBookieInfoRequest.FREE_DISK_SPACE
    info = conn.ask(pb.GetBookieInfoRequest(requested=flags))
    assert info.status == pb.EOK and 0 < info.freeDiskSpace < info.totalDiskCapacity

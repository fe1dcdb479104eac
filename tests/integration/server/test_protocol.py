"""The wire protocol's semantics at a real bookie (proto/README.md)."""

import threading
import time

import pytest

from bookie._proto import bookie_admin_pb2 as admin
from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.codec.availability import AvailabilityOfEntries
from bookie.codec.digest import Digester, DigestType
from bookie.codec.entry import parse_entry
from bookie.codec.lac import frame_lac, parse_lac

from helpers import DIGESTER, KEY, metric, payload, records, wait_for


def add(channel, ledger_id, entry_id, key=KEY, recovery=False):
    request = pb.AddRequest(
        ledgerId=ledger_id, entryId=entry_id, masterKey=key, body=records(ledger_id, entry_id, 1)[4:]
    )
    if recovery:
        request.flag = pb.AddRequest.RECOVERY_ADD
    return channel.bookie.AddEntry(request, timeout=10).status


def read(channel, ledger_id, entry_id, **fields):
    return channel.bookie.ReadEntry(pb.ReadRequest(ledgerId=ledger_id, entryId=entry_id, **fields), timeout=10)


@pytest.fixture
def channel(harness):
    (bookie,) = harness.start(1)
    return harness.channel(bookie)


def test_fence_then_adds(channel):
    assert add(channel, 1, 0) == pb.EOK
    fenced = read(channel, 1, -1, flag=pb.ReadRequest.FENCE_LEDGER, masterKey=KEY)
    assert fenced.status == pb.EOK and parse_entry(DIGESTER, fenced.body, 1, 0).payload == payload(1, 0)
    assert add(channel, 1, 1) == pb.EFENCED
    assert add(channel, 1, 1, recovery=True) == pb.EOK


def test_fence_needs_the_master_key_and_creates_unknown_ledgers(channel):
    assert read(channel, 2, -1, flag=pb.ReadRequest.FENCE_LEDGER).status == pb.EUA
    assert read(channel, 2, -1, flag=pb.ReadRequest.FENCE_LEDGER, masterKey=KEY).status == pb.ENOENTRY
    assert add(channel, 2, 0) == pb.EFENCED  # the unknown ledger was created fenced
    assert read(channel, 2, -1, flag=pb.ReadRequest.FENCE_LEDGER, masterKey=b"x" * 20).status == pb.EUA


def test_status_codes(channel):
    assert add(channel, 3, 0) == pb.EOK
    assert add(channel, 3, 1, key=b"wrong-key-wrong-key!") == pb.EUA
    assert read(channel, 99, 0).status == pb.ENOLEDGER
    assert read(channel, 3, 5).status == pb.ENOENTRY
    last = read(channel, 3, -1)
    assert last.status == pb.EOK and parse_entry(DIGESTER, last.body).entry_id == 0


def test_read_only_bookie_refuses_adds_and_serves_reads(channel):
    assert add(channel, 4, 0) == pb.EOK
    state = channel.admin.SetReadOnly(admin.SetReadOnlyRequest(readOnly=True), timeout=10)
    assert state.readOnly and state.readOnlyByOperator
    assert add(channel, 4, 1) == pb.EREADONLY
    assert read(channel, 4, 0).status == pb.EOK
    channel.admin.SetReadOnly(admin.SetReadOnlyRequest(readOnly=False), timeout=10)
    assert add(channel, 4, 1) == pb.EOK


def test_list_of_entries_from_the_index(channel):
    present = [0, 1, 2, 5, 6, 7, 8, 20]
    for entry_id in present:
        assert add(channel, 5, entry_id) == pb.EOK
    answer = channel.bookie.GetListOfEntriesOfLedger(pb.GetListOfEntriesOfLedgerRequest(ledgerId=5), timeout=10)
    assert answer.availabilityOfEntriesOfLedger == AvailabilityOfEntries.from_entries(present).encode()
    assert sorted(AvailabilityOfEntries.decode(answer.availabilityOfEntriesOfLedger)) == present
    chunks = list(
        channel.bookie.GetListOfEntriesOfLedgers(
            pb.GetListOfEntriesOfLedgersRequest(ledgerId=[5, 77, *range(1000, 1600)])
        )
    )
    answers = [a for chunk in chunks for a in chunk.ledgers]
    assert len(chunks) == 2 and len(answers) == 602  # many answers to a message, in request order
    assert [(a.ledgerId, a.status) for a in answers[:2]] == [(5, pb.EOK), (77, pb.ENOLEDGER)]


def test_explicit_lac_and_read_lac(channel):
    digester = Digester(DigestType.CRC32C)
    assert channel.bookie.ReadLac(pb.ReadLacRequest(ledgerId=6), timeout=10).status == pb.ENOLEDGER
    add(channel, 6, 0)
    answer = channel.bookie.WriteLac(
        pb.WriteLacRequest(ledgerId=6, lac=0, masterKey=KEY, body=frame_lac(digester, 6, 0)), timeout=10
    )
    assert answer.status == pb.EOK
    lac = channel.bookie.ReadLac(pb.ReadLacRequest(ledgerId=6), timeout=10)
    assert parse_lac(digester, lac.lacBody, 6) == 0 and parse_entry(DIGESTER, lac.lastEntryBody).entry_id == 0
    assert channel.bookie.ForceLedger(pb.ForceLedgerRequest(ledgerId=6), timeout=10).status == pb.EOK


def test_long_poll_answers_when_the_lac_advances(harness, channel):
    (bookie,) = harness.bookies
    for entry_id in range(3):  # entry e carries LAC e-1: the bookie's LAC is 1
        add(channel, 7, entry_id)
    immediate = read(channel, 7, -1, previousLAC=0, timeOut=5000, flag=pb.ReadRequest.ENTRY_PIGGYBACK)
    assert immediate.maxLAC == 1 and parse_entry(DIGESTER, immediate.body).entry_id == 1
    result = {}

    def poll():
        result["answer"] = read(channel, 7, -1, previousLAC=1, timeOut=10000, flag=pb.ReadRequest.ENTRY_PIGGYBACK)
        result["answered"] = time.monotonic()

    waiter = threading.Thread(target=poll)
    waiter.start()
    # READ_ENTRY_LONG_POLL_PRE_WAIT is recorded once the poll waits for the LAC (the immediate one above did not)
    wait_for(lambda: metric(bookie, "bookkeeper_server_READ_ENTRY_LONG_POLL_PRE_WAIT_count"), "the poll to wait")
    added = time.monotonic()
    add(channel, 7, 3)  # carries LAC 2
    waiter.join(15)
    assert result["answer"].maxLAC == 2 and parse_entry(DIGESTER, result["answer"].body).entry_id == 2
    assert added < result["answered"] < added + 5  # answered by the add, long before the poll's 10 s timeout
    timed_out = read(channel, 7, -1, previousLAC=2, timeOut=300)
    assert (timed_out.status, timed_out.maxLAC, timed_out.entryId) == (pb.EOK, 2, -1)
    assert read(channel, 7, 0, previousLAC=0, flag=pb.ReadRequest.ENTRY_PIGGYBACK).status == pb.EBADREQ


def test_range_read_streams_chunks_and_stops_at_a_gap(channel):
    for entry_id in [*range(50), 51]:
        add(channel, 8, entry_id)
    chunks = list(
        channel.bookie.ReadEntries(
            pb.ReadRangeRequest(ledgerId=8, firstEntryId=0, lastEntryId=51, maxChunkBytes=2000), timeout=10
        )
    )
    assert sum(c.count for c in chunks if c.status == pb.EOK) == 50 and len(chunks) > 3
    assert (chunks[-1].status, chunks[-1].firstEntryId) == (pb.ENOENTRY, 50)


def test_bookie_info(channel):
    flags = pb.GetBookieInfoRequest.TOTAL_DISK_CAPACITY | pb.GetBookieInfoRequest.FREE_DISK_SPACE
    info = channel.bookie.GetBookieInfo(pb.GetBookieInfoRequest(requested=flags), timeout=10)
    assert info.status == pb.EOK and 0 < info.freeDiskSpace < info.totalDiskCapacity


def test_range_read_of_one_bookies_stripe(channel):
    for entry_id in range(30):
        if (1 - entry_id) % 3 < 2:  # what bookie 1 of E=3, WQ=2 holds
            add(channel, 9, entry_id)
    request = pb.ReadRangeRequest(
        ledgerId=9, firstEntryId=0, lastEntryId=29, ensembleSize=3, writeQuorumSize=2, bookieIndex=1, maxChunkBytes=1000
    )
    chunks = list(channel.bookie.ReadEntries(request, timeout=10))
    got = []
    for chunk in chunks:
        assert chunk.status == pb.EOK
        data, offset = chunk.entries, 0
        while offset < len(data):
            size = int.from_bytes(data[offset : offset + 4], "big")
            got.append(parse_entry(DIGESTER, data[offset + 4 : offset + 4 + size], 9).entry_id)
            offset += 4 + size
    assert got == [e for e in range(30) if (1 - e) % 3 < 2]

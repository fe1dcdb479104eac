"""A bookie's log: a client going away is one INFO line, never an ERROR traceback; one record per line, as text or
as JSON (BKCTL_LOG_FORMAT=json) that a log shipper parses."""

import json
import socket
import struct

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.codec import wire

from helpers import KEY, records, wait_for

LEDGER = 7
POLLS = 20


def write_entries(channel, count: int = 5) -> None:
    batch = pb.AddBatch(batchId=0, entries=records(LEDGER, 0, count))
    batch.keys.add(ledgerId=LEDGER, masterKey=KEY)
    assert [a.count for a in channel.bookie.AddEntries(iter([batch]), timeout=10)] == [count]


# waits a minute for the LAC to pass entry 10 (it is 4)
LONG_POLL = pb.ReadRequest(ledgerId=LEDGER, entryId=-1, previousLAC=10, timeOut=60_000)
PLAIN_READ = pb.ReadRequest(ledgerId=LEDGER, entryId=0)


def v3_read(txn_id: int, read: pb.ReadRequest) -> bytes:
    header = pb.BKPacketHeader(version=pb.VERSION_THREE, operation=pb.READ_ENTRY, txnId=txn_id)
    return wire.encode_v3(pb.Request(header=header, readRequest=read))


def test_a_client_reset_with_long_polls_in_flight_is_one_info_line(harness):
    (bookie,) = harness.start(1)
    write_entries(harness.channel(bookie))
    with socket.create_connection(("127.0.0.1", bookie.port), timeout=10) as client:
        client.sendall(b"".join(v3_read(txn, LONG_POLL) for txn in range(1, POLLS + 1)))
        # answered in the pass over the frames that made the polls wait: then they all wait
        client.sendall(v3_read(POLLS + 1, PLAIN_READ))
        answer = wire.decode_v3_response(wire.cut_frames(bytearray(client.recv(1 << 16)))[0])
        assert (answer.header.txnId, answer.status) == (POLLS + 1, pb.EOK)
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with a reset
    wait_for(lambda: "went away" in bookie.log_path.read_text(), "the bookie to log the reset")
    log = bookie.log_path.read_text()
    gone = [line for line in log.splitlines() if "went away" in line]
    assert len(gone) == 1 and f" with {POLLS} requests in flight" in gone[0], gone
    assert " INFO bookie.server.protocol: client 127.0.0.1:" in gone[0]
    assert "Traceback" not in log and " ERROR " not in log


def test_a_grpc_client_gone_with_calls_in_flight_is_one_info_line_in_json(harness, monkeypatch):
    monkeypatch.setenv("BKCTL_LOG_FORMAT", "json")
    (bookie,) = harness.start(1)
    channel = harness.channel(bookie)
    write_entries(channel)
    _polls = [channel.bookie.ReadEntry.future(LONG_POLL, timeout=60) for _ in range(POLLS)]  # kept: in flight
    assert channel.bookie.ReadEntry(PLAIN_READ, timeout=10).status == pb.EOK  # after the polls, on one connection
    channel.close()  # the calls in flight are cancelled
    wait_for(lambda: "went away" in bookie.log_path.read_text(), "the bookie to log the cancellation")
    lines = bookie.log_path.read_text().splitlines()
    logged = [json.loads(line) for line in lines]  # every line one record
    assert all(set(r) == {"time", "level", "logger", "message"} for r in logged), logged
    gone = [r for r in logged if "went away" in r["message"]]
    assert [(r["level"], r["logger"]) for r in gone] == [("INFO", "bookie.server.servicer")]
    assert gone[0]["message"].startswith("client ipv4:127.0.0.1:")
    assert {"bookie.server.bookie", "bookie.storage.group_commit"} <= {r["logger"] for r in logged}


def test_a_key_this_bookie_does_not_use_is_one_warning_line_naming_it(harness):
    """A Java bookie's bk_server.conf: what it sets that ours ignores is said once, at start, and nothing else the
    configuration holds (the harness writes BookKeeper's keys) is warned about."""
    (bookie,) = harness.start(1, numAddWorkerThreads=4, journalSyncData="true")
    lines = bookie.log_path.read_text().splitlines()
    warned = [line for line in lines if " WARNING " in line and "numAddWorkerThreads" in line]
    assert len(warned) == 1, lines
    assert warned[0].endswith(" WARNING bookie.server.config: numAddWorkerThreads is not used by this bookie: ignored")
    assert [line for line in lines if "is not used by this bookie" in line] == warned

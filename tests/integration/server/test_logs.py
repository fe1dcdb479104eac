"""A bookie's log: a client going away is one INFO line, never an ERROR traceback; one record per line, as text or
as JSON (BKCTL_LOG_FORMAT=json) that a log shipper parses."""

import json
import socket
import struct

from bookie._proto import bookkeeper_protocol_pb2 as pb

from support.waiting import wait_for
from support.wire import WireConn, add_requests

LEDGER = 7
POLLS = 20


def write_entries(port: int, count: int = 5) -> None:
    with WireConn(port) as conn:
        adds = conn.send_requests(add_requests(LEDGER, 0, count))
        assert [conn.answer(txn).status for txn in adds] == [pb.EOK] * count


# waits a minute for the LAC to pass entry 10 (it is 4)
LONG_POLL = pb.ReadRequest(ledgerId=LEDGER, entryId=-1, previousLAC=10, timeOut=60_000)
PLAIN_READ = pb.ReadRequest(ledgerId=LEDGER, entryId=0)


def reset_with_long_polls_in_flight(bookie) -> str:
    """A client with POLLS long polls waiting on its connection resets it; the bookie's log once it said so."""
    write_entries(bookie.port)
    with WireConn(bookie.port, timeout=10) as client:
        client.send(*(client.v3(pb.READ_ENTRY, readRequest=LONG_POLL) for _ in range(POLLS)))
        # answered in the pass over the frames that made the polls wait: then they all wait
        assert client.ask(PLAIN_READ).status == pb.EOK
        client.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with a reset
    wait_for(lambda: "went away" in bookie.log_path.read_text(), "the bookie to log the reset")
    return bookie.log_path.read_text()


def test_a_client_reset_with_long_polls_in_flight_is_one_info_line(harness):
    (bookie,) = harness.start(1)
    log = reset_with_long_polls_in_flight(bookie)
    gone = [line for line in log.splitlines() if "went away" in line]
    assert len(gone) == 1 and f" with {POLLS} requests in flight" in gone[0], gone
    assert " INFO bookie.server.wire: client 127.0.0.1:" in gone[0]
    assert "Traceback" not in log and " ERROR " not in log


def test_a_client_reset_with_long_polls_in_flight_is_one_info_record_in_json(harness, monkeypatch):
    monkeypatch.setenv("BKCTL_LOG_FORMAT", "json")
    (bookie,) = harness.start(1)
    logged = [json.loads(line) for line in reset_with_long_polls_in_flight(bookie).splitlines()]  # one record a line
    assert all(set(r) == {"time", "level", "logger", "message"} for r in logged), logged
    gone = [r for r in logged if "went away" in r["message"]]
    assert [(r["level"], r["logger"]) for r in gone] == [("INFO", "bookie.server.wire")]
    message = gone[0]["message"]
    assert message.startswith("client 127.0.0.1:") and f" with {POLLS} requests in flight" in message
    assert [r for r in logged if r["level"] == "ERROR" or "Traceback" in r["message"]] == []
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

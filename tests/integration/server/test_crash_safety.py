"""kill -9 a bookie mid-stream, restart it: every acknowledged entry reads back, LAC and fences survive."""

import pytest

from bookie._proto import bookkeeper_protocol_pb2 as pb

from support.cluster import StreamWriter
from support.storage import KEY, payload
from support.waiting import wait_for
from support.wire import add_requests, read_stored


def fence(conn, ledger_id):
    answer = conn.ask(pb.ReadRequest(ledgerId=ledger_id, entryId=-1, flag=pb.ReadRequest.FENCE_LEDGER, masterKey=KEY))
    assert answer.status in (pb.EOK, pb.ENOENTRY)


DB = {"ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage"}


@pytest.mark.parametrize(
    "settings",
    [
        {"flushInterval": 60000},
        {"flushInterval": 5},
        {**DB, "flushInterval": 60000},
        {**DB, "flushInterval": 5},
        {**DB, "flushInterval": 60000, "dbStorage_writeCacheMaxSizeMb": 1},
    ],
    # flushInterval 5 ms: a checkpoint is nearly always running; a 1 MB write cache fills every ~2000 entries, each
    # time asking for a checkpoint at once
    ids=["between-checkpoints", "during-checkpoints", "db-between", "db-during", "db-write-cache-full"],
)
def test_kill_9_mid_stream_loses_no_acknowledged_entry(harness, settings):
    (bookie,) = harness.start(1, **settings)
    size = 1000 if "dbStorage_writeCacheMaxSizeMb" in settings else 100
    fenced = StreamWriter(bookie.port, ledger_id=2, limit=100)
    fenced.start()
    fenced.join(30)
    fence(harness.wire(bookie), 2)

    writer = StreamWriter(bookie.port, ledger_id=1, size=size)
    writer.start()
    wait_for(lambda: len(writer.acked) >= 3000, "3000 acknowledged entries", 60)
    bookie.stop(kill=True)
    writer.join(30)
    assert writer.error is not None  # the stream broke mid-way
    acked = list(writer.acked)
    assert acked == list(range(len(acked)))

    harness.restart(bookie)
    conn = harness.wire(bookie)
    entries = read_stored(conn, 1, 0, acked[-1])
    assert all(entries.get(e) == payload(1, e, size) for e in acked)
    if size == 1000:
        assert "write cache is full" in bookie.log_path.read_text()
    last = conn.ask(pb.ReadRequest(ledgerId=1, entryId=-1))
    assert last.status == pb.EOK and last.maxLAC >= acked[-1] - 1  # each entry carries LAC = its id - 1
    add = conn.ask(add_requests(2, 100, 1)[0])
    assert add.status == pb.EFENCED  # the fence survived the crash

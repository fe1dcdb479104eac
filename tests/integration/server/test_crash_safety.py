"""kill -9 a bookie mid-stream, restart it: every acknowledged entry reads back, LAC and fences survive."""

import pytest

from bookie._proto import bookkeeper_protocol_pb2 as pb

from helpers import KEY, StreamWriter, payload, read_stored, wait_for


def fence(channel, ledger_id):
    answer = channel.bookie.ReadEntry(
        pb.ReadRequest(ledgerId=ledger_id, entryId=-1, flag=pb.ReadRequest.FENCE_LEDGER, masterKey=KEY), timeout=10
    )
    assert answer.status in (pb.EOK, pb.ENOENTRY)


@pytest.mark.parametrize(
    "settings",
    [{"flushInterval": 60000}, {"flushInterval": 5}],
    ids=["between-checkpoints", "during-checkpoints"],  # flushInterval 5 ms: a checkpoint is nearly always running
)
def test_kill_9_mid_stream_loses_no_acknowledged_entry(harness, settings):
    (bookie,) = harness.start(1, **settings)
    channel = harness.channel(bookie)
    fenced = StreamWriter(channel, ledger_id=2, limit=100)
    fenced.start()
    fenced.join(30)
    fence(channel, 2)

    writer = StreamWriter(channel, ledger_id=1)
    writer.start()
    wait_for(lambda: len(writer.acked) >= 3000, "3000 acknowledged entries", 60)
    bookie.stop(kill=True)
    writer.join(30)
    assert writer.error is not None  # the stream broke mid-way
    acked = list(writer.acked)
    assert acked == list(range(len(acked)))

    harness.restart(bookie)
    channel = harness.channel(bookie)
    entries = read_stored(channel, 1, 0, acked[-1])
    assert all(entries.get(e) == payload(1, e) for e in acked)
    last = channel.bookie.ReadEntry(pb.ReadRequest(ledgerId=1, entryId=-1), timeout=10)
    assert last.status == pb.EOK and last.maxLAC >= acked[-1] - 1  # each entry carries LAC = its id - 1

    from helpers import records

    add = channel.bookie.AddEntry(
        pb.AddRequest(ledgerId=2, entryId=100, masterKey=KEY, body=records(2, 100, 1)[4:]), timeout=10
    )
    assert add.status == pb.EFENCED  # the fence survived the crash

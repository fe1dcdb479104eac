"""How many reads a range read over BookKeeper's protocol keeps in flight: a window sized by the entries' size, so
that large entries do not put a gigabyte in flight and small ones keep the bookie busy."""

import pytest

from bookie.client import BookKeeper
from bookie.client.connection import Connection
from bookie.client.range_read import FIRST_READS, READ_WINDOW, READ_WINDOW_BYTES


@pytest.fixture
def in_flight(monkeypatch):
    """The most reads (and other requests) each send of a connection left waiting for answers."""
    peaks: list[int] = []
    send = Connection.send

    def counted(self, frame):
        peaks.append(len(self.by_txn))
        send(self, frame)

    monkeypatch.setattr(Connection, "send", counted)
    return peaks


@pytest.mark.parametrize("protocol_version", ["v3"], indirect=True)
@pytest.mark.parametrize(
    ("size", "count", "expected_peak"),
    [
        (1024, 20_000, READ_WINDOW),
        (1_000_000, 24, READ_WINDOW_BYTES // 1_000_000),  # a few megabytes in flight, not READ_WINDOW entries
    ],
)
def test_a_range_read_keeps_a_window_sized_by_bytes_in_flight(
    harness, in_flight, size, count, expected_peak, client_config
):
    (bookie,) = harness.start(1)
    with BookKeeper(harness.service_uri, client_config) as bk:
        ledger = bk.create_ledger(1, 1, 1)
        ledger.add_entries((b"%08d" % i).ljust(size, b"x") for i in range(count))
        ledger.close()

        async def read() -> list[int]:
            ids = []
            async for chunk in bk.core.bookie(bookie.bookie_id).read_range(ledger.ledger_id, 0, count - 1, 30.0):
                ids.extend(entry_id for entry_id, _ in chunk)
            return ids

        in_flight.clear()
        assert bk.run(read()) == list(range(count))
    assert in_flight[0] == FIRST_READS  # before any entry's size is known
    assert max(in_flight[1:]) == expected_peak

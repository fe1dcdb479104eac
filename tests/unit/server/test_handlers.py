"""The request handlers over a real ledger storage, in one process: what a long poll leaves behind, when an add is
answered."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.codec import wire
from bookie.server.auth import Authorizer
from bookie.server.handlers import BookieHandlers
from bookie.server.metrics import BookieStats
from bookie.server.wire import BookieConnection, WireServer

from support.storage import KEY, add, framed


def test_long_polls_that_time_out_or_are_cancelled_leave_no_waiter(open_storage):
    storage = open_storage()
    add(storage, 7, 0, 3)  # LAC 1: a poll from previousLAC 1 waits
    handlers = BookieHandlers(SimpleNamespace(storage=storage, stats=BookieStats()))
    poll = pb.ReadRequest(ledgerId=7, entryId=-1, previousLAC=1, timeOut=5)

    async def scenario():
        for _ in range(20):  # timed out
            assert (await handlers.read_waiting(poll)).maxLAC == 1
        cancelled = asyncio.ensure_future(
            handlers.read_waiting(pb.ReadRequest(ledgerId=7, entryId=-1, previousLAC=1, timeOut=60_000))
        )
        await asyncio.sleep(0.05)
        cancelled.cancel()  # the client went away
        await asyncio.gather(cancelled, return_exceptions=True)

    asyncio.run(scenario())
    assert handlers._lac_waiters == {}


class _Transport:
    def __init__(self, events: list[str]) -> None:
        self.events = events

    def write(self, data: bytes) -> None:
        self.events.append("answer")

    def is_closing(self) -> bool:
        return False

    def set_write_buffer_limits(self, high: int) -> None:
        pass


def test_an_add_is_answered_in_the_loop_turn_that_learns_it_is_durable(open_storage):
    """The journal thread wakes the loop with a callback; the add's answer is written in it, not in a loop turn
    later, behind whatever the loop has ready by then (other connections' frames). The marker is queued right
    behind the journal's wake-up; the answer must come before it."""
    storage = open_storage()
    events: list[str] = []
    journalled = storage.add_batch

    def add_batch(keys, records, callback):
        loop = asyncio.get_running_loop()

        def durable(error):  # on the journal thread
            callback(error)
            loop.call_soon_threadsafe(events.append, "next loop turn")

        return journalled(keys, records, durable)

    storage.add_batch = add_batch
    config = SimpleNamespace(tls=None, authorizer=Authorizer(), bkctlReadRequiresMasterKey=False)
    bookie = SimpleNamespace(
        storage=storage, stats=BookieStats(), config=config, read_only=False, read_only_by_disk=False
    )
    connection = BookieConnection(WireServer(bookie, BookieHandlers(bookie), wire.MAX_FRAME_SIZE))

    async def scenario():
        connection.connection_made(_Transport(events))
        connection.data_received(wire.add_request_v3(1, 7, 0, KEY, framed(7, 0, 1)[0], recovery=False))
        while len(events) < 2:
            await asyncio.sleep(0.001)

    asyncio.run(asyncio.wait_for(scenario(), 10))
    assert events == ["answer", "next loop turn"]
    assert storage.read_entry(7, 0) == framed(7, 0, 1)[0]


def test_an_import_error_inside_the_bookie_is_not_taken_for_a_missing_uvloop(monkeypatch):
    """bookie.server.bookie.run once wrapped the whole run in `except ImportError` (meant for uvloop's import): a
    bookie failing with an ImportError of its own was started a second time, under plain asyncio."""
    from bookie.server import bookie

    starts = []

    async def failing(config, network):
        starts.append(1)
        raise ImportError("a module the bookie needs")

    monkeypatch.setattr(bookie, "serve", failing)
    with pytest.raises(ImportError, match="a module the bookie needs"):
        bookie.run(None, None)  # type: ignore[arg-type]  # serve is replaced: config and network are not read
    assert starts == [1]

"""The request handlers over a real ledger storage, in one process: what a long poll leaves behind."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.server.handlers import BookieHandlers
from bookie.server.metrics import BookieStats

from support.storage import add


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

"""The wire server's operation table (bookie/server/wire/operations.py) against what it names: the protobuf
fields of each operation, the request handlers' coroutines and the bookie's registered stats."""

from __future__ import annotations

import inspect

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.server.handlers import BookieHandlers
from bookie.server.metrics import BookieStats
from bookie.server.wire.connection import Pause
from bookie.server.wire.operations import OPERATIONS, ReadCheck


def test_every_operation_names_its_request_and_response_fields():
    for code, operation in OPERATIONS.items():
        assert operation.code == code
        assert operation.request in pb.Request.DESCRIPTOR.fields_by_name, operation
        assert operation.response in pb.Response.DESCRIPTOR.fields_by_name, operation


def test_every_handler_is_a_coroutine_with_its_request_stats():
    stats = BookieStats()
    handled = [op for op in OPERATIONS.values() if op.handler is not None]
    assert {op.code for op in handled} == {
        pb.WRITE_LAC,
        pb.READ_LAC,
        pb.FORCE_LEDGER,
        pb.GET_BOOKIE_INFO,
        pb.GET_LIST_OF_ENTRIES_OF_LEDGER,
    }
    for operation in handled:
        assert inspect.iscoroutinefunction(getattr(BookieHandlers, operation.handler)), operation
        assert operation.stats is not None
        stats.op(operation.stats)  # registered (KeyError otherwise)
    for pause in Pause:
        if pause.value is not None:
            stats.op(pause.value)


def test_the_read_check_covers_every_read_of_a_ledger():
    reads = {op.code for op in OPERATIONS.values() if op.check is ReadCheck.READS}
    assert reads == {pb.READ_ENTRY, pb.READ_LAC, pb.GET_LIST_OF_ENTRIES_OF_LEDGER}
    for op in OPERATIONS.values():
        if op.check is not ReadCheck.NONE:
            assert "ledgerId" in getattr(pb.Request(), op.request).DESCRIPTOR.fields_by_name

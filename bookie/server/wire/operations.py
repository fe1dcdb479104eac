"""The v3 operations a bookie serves, in one table: what drives the dispatch of a request, the name of its request
stats and how the per-ledger read check (``bkctlReadRequiresMasterKey``) treats it.

Adds and plain reads are answered in the connection's pass (bookie/server/wire/requests.py); the operations with a
``handler`` run as a task on :class:`bookie.server.handlers.BookieHandlers` and answer when done.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from bookie._proto import bookkeeper_protocol_pb2 as pb


class ReadCheck(enum.Enum):
    """What the per-ledger read check does with an operation."""

    NONE = enum.auto()  # not a read of a ledger
    READS = enum.auto()  # reads the ledger of its request's ``ledgerId``: refused EUA without the key shown
    SHOWS_KEY = enum.auto()  # carries the ledger's master key (``masterKey``): shows it for the connection


@dataclass(frozen=True)
class Operation:
    code: int  # pb.OperationType
    request: str  # the Request's field of its message
    response: str  # the Response's field of its answer
    handler: str | None = None  # the BookieHandlers coroutine that answers it; None: answered in the pass
    stats: str | None = None  # its RequestStats (arrival to answer written), for the operations with a handler
    check: ReadCheck = ReadCheck.NONE


OPERATIONS: dict[int, Operation] = {
    op.code: op
    for op in (
        Operation(pb.ADD_ENTRY, "addRequest", "addResponse"),
        Operation(pb.READ_ENTRY, "readRequest", "readResponse", check=ReadCheck.READS),
        Operation(pb.AUTH, "authRequest", "authResponse"),
        Operation(pb.START_TLS, "startTLSRequest", "startTLSResponse"),
        Operation(
            pb.WRITE_LAC, "writeLacRequest", "writeLacResponse", "write_lac", "WRITE_LAC_REQUEST", ReadCheck.SHOWS_KEY
        ),
        Operation(pb.READ_LAC, "readLacRequest", "readLacResponse", "read_lac", "READ_LAC_REQUEST", ReadCheck.READS),
        Operation(pb.FORCE_LEDGER, "forceLedgerRequest", "forceLedgerResponse", "force_ledger", "FORCE_LEDGER_REQUEST"),
        Operation(
            pb.GET_BOOKIE_INFO,
            "getBookieInfoRequest",
            "getBookieInfoResponse",
            "bookie_info",
            "GET_BOOKIE_INFO_REQUEST",
        ),
        Operation(
            pb.GET_LIST_OF_ENTRIES_OF_LEDGER,
            "getListOfEntriesOfLedgerRequest",
            "getListOfEntriesOfLedgerResponse",
            "entries_of_ledger",
            "GET_LIST_OF_ENTRIES_OF_LEDGER_REQUEST",
            ReadCheck.READS,
        ),
    )
}


def read_request_stats(read: pb.ReadRequest) -> str:
    """A read that waits is a fence read or a long poll: each has request stats of its own (ReadEntryProcessorV3)."""
    return "READ_ENTRY_LONG_POLL_REQUEST" if read.HasField("previousLAC") else "READ_ENTRY_FENCE_REQUEST"


def waits(read: pb.ReadRequest) -> bool:
    """Whether a v3 read waits (a LAC long poll or a fence read) rather than being answered in the pass."""
    return bool(read.HasField("previousLAC") or (read.HasField("flag") and read.flag == pb.ReadRequest.FENCE_LEDGER))

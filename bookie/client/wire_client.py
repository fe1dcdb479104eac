"""A :class:`~bookie.client.bookie_client.BookieClient` over BookKeeper's own protocol (proto/README.md): the
connections to one bookie (bookie/client/connection.py), shared by every ledger handle of a client.

Any bookie, ours or Java: v3 (protobuf, answers matched by txnId) by default; with ``use_v2`` adds and reads go in
the binary v2 protocol as BookKeeper's ``useV2WireProtocol`` sends them (answers matched by operation and ids), and
the operations that have no v2 layout (LAC, bookie info, entry lists, long polls) go on a second connection in v3 —
one connection cannot change back (the bookie's decoder stays v2).

Adds and plain reads are written by the hand-made encoders of :mod:`bookie.codec` (no protobuf object per entry);
range reads keep a window of reads in flight (bookie/client/range_read.py). Failures become the core's exceptions:
an unreachable bookie is ServiceUnavailable, a read that takes too long OperationTimeout, a lost connection fails
its adds with ``CONNECTION_LOST`` (the handle changes ensemble) and its reads with ServiceUnavailable, and a peer
that does not answer in BookKeeper's protocol is named as such.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator
from typing import Any

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.client import range_read
from bookie.client.bookie_client import (
    CONNECTION_LOST,
    AddTarget,
    BookieInfo,
    EntryChunk,
    EntryRead,
    LacPoll,
    LacRead,
    LedgerEntries,
    RangeStopped,
    StatusCode,
    Stripe,
    TokenT,
)
from bookie.client.connection import AddWaiter, Answer, Connection
from bookie.codec import wire
from bookie.codec.frames import ResponseItem
from bookie.errors import ServiceUnavailable
from bookie.tls import Tls

# The client's status codes are BookKeeper's: checked once, where the generated ones are at hand.
assert {s.name: int(s) for s in StatusCode if s != CONNECTION_LOST} == dict(pb.StatusCode.items())

LIST_WINDOW = 64  # GET_LIST_OF_ENTRIES_OF_LEDGER requests in flight


def _read_result(answer: Answer) -> EntryRead:
    assert isinstance(answer, ResponseItem), "a read is answered by a response item"
    return EntryRead(answer.status, answer.entry or b"")


class WireBookieClient:
    """The data operations on one bookie over BookKeeper's protocol (a BookieClient), and GET_BOOKIE_INFO."""

    def __init__(self, bookie_id: str, address: tuple[str, int], use_v2: bool = False, tls: Tls | None = None) -> None:
        self.bookie_id = bookie_id
        self.address = address
        self.use_v2 = use_v2
        self.tls = tls
        self.failure: str | None = None  # why the last TLS connection failed before it served (its handshake)
        self.closed = False
        self._connections: dict[bool, Connection] = {}  # by v3 or not

    # ---- connections ----
    def _connection(self, v3: bool) -> Connection:
        """The live connection of that version, or a new one that is connecting (frames wait for it)."""
        conn = self._connections.get(v3)
        if conn is None:
            if self.closed:
                raise ServiceUnavailable(f"the client of bookie {self.bookie_id} is closed")
            conn = self._connections[v3] = Connection(self, self.address, self.tls, v3, self._forget)
            conn.connecting = asyncio.ensure_future(conn.open())
        return conn

    def _forget(self, conn: Connection) -> None:
        if conn.failure is not None:
            self.failure = conn.failure
        if self._connections.get(conn.v3) is conn:
            del self._connections[conn.v3]

    async def _call(self, operation: int, field: str, message: Any, timeout: float, what: str) -> pb.Response:
        """One v3 request (``message`` in the Request's ``field``) other than a read; its Response."""
        answer = await self._connection(True).request(operation, field, message, timeout, what)
        assert isinstance(answer, pb.Response), "only a read is answered by a response item"
        return answer

    async def _read(
        self, request: pb.ReadRequest, timeout: float, what: str, high_priority: bool = False
    ) -> ResponseItem:
        """One v3 READ_ENTRY request (a fence read, a long poll); its answer."""
        conn = self._connection(True)
        answer = await conn.request(pb.READ_ENTRY, "readRequest", request, timeout, what, high_priority)
        assert isinstance(answer, ResponseItem), "a read is answered by a response item"
        return answer

    # ---- adds ----
    def add(
        self,
        ledger_id: int,
        master_key: bytes,
        recovery: bool,
        record: bytes,
        target: AddTarget[TokenT],
        token: TokenT,
        index: int,
    ) -> None:
        """See :meth:`BookieClient.add`."""
        try:
            conn = self._connection(not self.use_v2)
        except ServiceUnavailable:
            target.added(token, index, CONNECTION_LOST, self)
            return
        entry_id = token.entry_id
        waiter = AddWaiter(target, token, index)
        if conn.v3:
            conn.txn = txn = conn.txn + 1
            conn.by_txn[txn] = waiter
        else:
            txn = 0  # a v2 answer names its ledger and entry instead
            conn.expect((wire.ADDENTRY, ledger_id, entry_id), waiter)
        conn.send_add((txn, ledger_id, entry_id, master_key, record, recovery))

    # ---- reads ----
    async def read_entry(
        self, ledger_id: int, entry_id: int, timeout: float, what: str, fence_key: bytes | None = None
    ) -> EntryRead:
        """See :meth:`BookieClient.read_entry`."""
        if fence_key is None:
            conn = self._connection(not self.use_v2)
            future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
            (key,) = conn.send_reads(ledger_id, [entry_id], future)
        elif self.use_v2:
            conn = self._connection(False)
            key = (wire.READENTRY, ledger_id, entry_id)
            future = asyncio.get_running_loop().create_future()
            conn.expect(key, future)
            flags = wire.FLAG_DO_FENCING | wire.FLAG_HIGH_PRIORITY  # recovery traffic, as BookKeeper sends it
            conn.send(wire.encode_request_v2(wire.ReadRequestV2(ledger_id, entry_id, flags, fence_key)))
        else:
            request = pb.ReadRequest(
                ledgerId=ledger_id, entryId=entry_id, flag=pb.ReadRequest.FENCE_LEDGER, masterKey=fence_key
            )
            return _read_result(await self._read(request, timeout, what, high_priority=True))
        return _read_result(await conn.wait(key, future, timeout, what))

    async def long_poll_lac(self, ledger_id: int, previous: int, wait: float, timeout: float) -> LacPoll:
        """See :meth:`BookieClient.long_poll_lac` (always v3: v2 has no long poll)."""
        request = pb.ReadRequest(ledgerId=ledger_id, entryId=-1, previousLAC=previous, timeOut=int(wait * 1000))
        answer = await self._read(request, timeout, f"long poll ledger {ledger_id}")
        return LacPoll(answer.status, answer.max_lac)

    async def read_lac(self, ledger_id: int, timeout: float) -> LacRead:
        """See :meth:`BookieClient.read_lac`."""
        response = await self._call(
            pb.READ_LAC,
            "readLacRequest",
            pb.ReadLacRequest(ledgerId=ledger_id),
            timeout,
            f"read LAC of ledger {ledger_id}",
        )
        if not response.HasField("readLacResponse"):
            return LacRead(response.status)
        answer = response.readLacResponse
        return LacRead(
            answer.status,
            answer.lacBody if answer.HasField("lacBody") else None,
            answer.lastEntryBody if answer.HasField("lastEntryBody") else None,
        )

    def read_range(
        self,
        ledger_id: int,
        first_entry_id: int,
        last_entry_id: int,
        timeout: float,
        stripe: Stripe | None = None,
        high_priority: bool = False,
    ) -> AsyncIterator[EntryChunk | RangeStopped]:
        """See :meth:`BookieClient.read_range` and bookie/client/range_read.py. ``high_priority`` is not carried:
        BookKeeper's plain reads have no priority."""
        conn = self._connection(not self.use_v2)
        return range_read.read_range(conn, ledger_id, first_entry_id, last_entry_id, timeout, stripe)

    async def list_entries(self, ledger_ids: list[int], timeout: float) -> AsyncIterator[LedgerEntries]:
        """See :meth:`BookieClient.list_entries`: ``LIST_WINDOW`` requests in flight."""
        ids = iter(ledger_ids)
        window: collections.deque[tuple[int, asyncio.Future[pb.Response]]] = collections.deque()

        def issue() -> bool:
            ledger_id = next(ids, None)
            if ledger_id is None:
                return False
            message = pb.GetListOfEntriesOfLedgerRequest(ledgerId=ledger_id)
            call = self._call(
                pb.GET_LIST_OF_ENTRIES_OF_LEDGER,
                "getListOfEntriesOfLedgerRequest",
                message,
                timeout,
                f"list of entries of ledger {ledger_id}",
            )
            window.append((ledger_id, asyncio.ensure_future(call)))
            return True

        try:
            while len(window) < LIST_WINDOW and issue():
                pass
            while window:
                ledger_id, future = window.popleft()
                response = await future
                issue()
                answer = response.getListOfEntriesOfLedgerResponse
                status = answer.status if response.HasField("getListOfEntriesOfLedgerResponse") else response.status
                yield LedgerEntries(ledger_id, status, answer.availabilityOfEntriesOfLedger)
        finally:
            for _, future in window:
                future.cancel()

    async def bookie_info(self, timeout: float) -> BookieInfo:
        """GET_BOOKIE_INFO: total and free disk space (not part of BookieClient: ClientCore.bookie_info asks it on a
        v3 connection of its own)."""
        requested = pb.GetBookieInfoRequest.TOTAL_DISK_CAPACITY | pb.GetBookieInfoRequest.FREE_DISK_SPACE
        response = await self._call(
            pb.GET_BOOKIE_INFO,
            "getBookieInfoRequest",
            pb.GetBookieInfoRequest(requested=requested),
            timeout,
            "bookie info",
        )
        if not response.HasField("getBookieInfoResponse"):
            return BookieInfo(response.status, 0, 0)
        answer = response.getBookieInfoResponse
        return BookieInfo(answer.status, answer.totalDiskCapacity, answer.freeDiskSpace)

    async def close(self) -> None:
        """Close the connections; whatever is still in flight fails now (adds with CONNECTION_LOST), as when a
        connection breaks, so that no one waits on a client that is gone."""
        self.closed = True
        for conn in list(self._connections.values()):
            conn.fail(ServiceUnavailable(f"the client of bookie {self.bookie_id} was closed"))

"""A connection to one bookie in BookKeeper's own protocol (proto/README.md), shared by every ledger handle of a client.

Any bookie, ours or Java: v3 (protobuf, answers matched by txnId) by default; with ``use_v2`` adds and reads go in
the binary v2 protocol as BookKeeper's ``useV2WireProtocol`` sends them (answers matched by operation and ids,
batch reads by their request id), and the operations that have no v2 layout (LAC, bookie info, entry lists, long
polls) go on a second connection in v3 — one connection cannot change back (the bookie's decoder stays v2).

Pipelining: the frames of one turn of the event loop leave in one write; a range read keeps ``READ_WINDOW`` reads in
flight. Failures become the core's exceptions here: an unreachable bookie is ServiceUnavailable, a read that takes
too long OperationTimeout, a lost connection fails its adds with ``CONNECTION_LOST`` (the handle changes ensemble) and
its reads with ServiceUnavailable, and a peer that does not answer in BookKeeper's protocol is named as such.
"""

from __future__ import annotations

import asyncio
import collections
import logging

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.codec import wire
from bookie.codec.write_set import range_read_entries
from bookie.errors import BKError, MalformedFrame, OperationTimeout, ServiceUnavailable

log = logging.getLogger(__name__)
CONNECTION_LOST = -1  # a client-side status: the connection to the bookie broke
CONNECT_TIMEOUT = 10.0
HIGH_PRIORITY = 100  # BKPacketHeader.priority of recovery traffic, as the Java client sets it
READ_WINDOW = 256  # reads in flight per range read
LIST_WINDOW = 64  # GET_LIST_OF_ENTRIES_OF_LEDGER requests in flight
MAX_CHUNK = 256  # entries per list a range read yields
V2_READ_HEADER = wire.packet_header(wire.V2_VERSION, wire.READENTRY, 0)


class _Connection(asyncio.Protocol):
    """One TCP connection: writes frames (one write per loop turn) and routes each answer to who waits for it."""

    def __init__(self, owner: WireBookieClient, v3: bool):
        self.owner = owner
        self.v3 = v3
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.out: list[bytes] = []
        self.flush_handle: asyncio.Handle | None = None
        self.pending: dict = {}  # v3: txnId -> waiter; v2: (opcode, ledgerId, entryId | requestId) -> deque
        self.lost: BaseException | None = None
        self.ready = asyncio.get_running_loop().create_future()

    # ---- transport ----
    def connection_made(self, transport) -> None:
        self.transport = transport
        if not self.ready.done():
            self.ready.set_result(None)
        self._flush()

    def connection_lost(self, exc) -> None:
        self.fail(
            ServiceUnavailable(f"connection to bookie {self.owner.bookie_id} lost" + (f" ({exc})" if exc else ""))
        )

    def fail(self, error: BaseException) -> None:
        """Fail everything in flight (once): adds with CONNECTION_LOST, everything else with ``error``."""
        if self.lost is not None:
            return
        self.lost = error
        if not self.ready.done():
            self.ready.set_exception(error)
            self.ready.exception()  # retrieved: nobody may be awaiting it
        if self.transport is not None:
            self.transport.abort()
        waiters = [w for v in self.pending.values() for w in (v if isinstance(v, collections.deque) else (v,))]
        self.pending.clear()
        self.out.clear()
        self.owner._forget(self)
        for waiter in waiters:
            _fail(waiter, error, self.owner)

    def send(self, frame: bytes) -> None:
        self.out.append(frame)
        if self.flush_handle is None and self.transport is not None:
            self.flush_handle = asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self.flush_handle = None
        if self.out and self.transport is not None and self.lost is None:
            self.transport.write(b"".join(self.out))
            self.out.clear()

    # ---- answers ----
    def data_received(self, data: bytes) -> None:
        self.buffer += data
        try:
            frames = wire.cut_frames(self.buffer)
            if self.v3:
                for body in frames:
                    self._v3(wire.decode_v3_response(body))
            else:
                for body in frames:
                    self._v2(wire.decode_response_v2(body))
        except MalformedFrame as exc:
            self.fail(
                BKError(
                    f"bookie {self.owner.bookie_id} at {self.owner.address[0]}:{self.owner.address[1]} "
                    f"does not answer in BookKeeper's protocol ({exc})"
                )
            )

    def _v3(self, response: pb.Response) -> None:
        waiter = self.pending.pop(response.header.txnId, None)
        if waiter is None:
            return  # timed out and forgotten
        if isinstance(waiter, _AddWaiter):
            status = response.addResponse.status if response.HasField("addResponse") else response.status
            waiter.target.added(waiter.token, waiter.index, status, self.owner)
        elif not waiter.done():
            waiter.set_result(response)

    def _v2(self, response) -> None:
        if isinstance(response, wire.AddResponseV2):
            key = (wire.ADDENTRY, response.ledger_id, response.entry_id)
        elif isinstance(response, wire.ReadResponseV2):
            key = (wire.READENTRY, response.ledger_id, response.entry_id)
        elif isinstance(response, wire.BatchReadResponseV2):
            key = (wire.BATCH_READ_ENTRY, response.ledger_id, response.request_id)
        else:
            return
        waiters = self.pending.get(key)
        if not waiters:
            return
        waiter = waiters.popleft()
        if not waiters:
            del self.pending[key]
        if isinstance(waiter, _AddWaiter):
            waiter.target.added(waiter.token, waiter.index, wire.v3_status(response.rc), self.owner)
        elif not waiter.done():
            waiter.set_result(response)

    def expect(self, key, waiter) -> None:
        if self.v3:
            self.pending[key] = waiter
        else:
            waiters = self.pending.get(key)
            if waiters is None:
                waiters = self.pending[key] = collections.deque()
            waiters.append(waiter)

    def forget(self, key, waiter) -> None:
        """A waiter that gave up (timed out): its late answer is dropped."""
        if self.v3:
            self.pending.pop(key, None)
        else:
            waiters = self.pending.get(key)
            if waiters is not None:
                try:
                    waiters.remove(waiter)
                except ValueError:
                    pass


class _AddWaiter:
    __slots__ = ("index", "target", "token")

    def __init__(self, target, token, index: int):
        self.target, self.token, self.index = target, token, index


def _fail(waiter, error: BaseException, client) -> None:
    if isinstance(waiter, _AddWaiter):
        waiter.target.added(waiter.token, waiter.index, CONNECTION_LOST, client)
    elif not waiter.done():
        waiter.set_exception(error)


def _read_result(answer) -> tuple[int, bytes]:
    """``(v3 status, framed entry)`` of a read's answer, v3 or v2."""
    if isinstance(answer, pb.Response):
        if answer.HasField("readResponse"):
            return answer.readResponse.status, answer.readResponse.body
        return answer.status, b""
    return wire.v3_status(answer.rc), bytes(answer.body)


class WireBookieClient:
    """The data operations on one bookie over BookKeeper's protocol (the interface of the ledger handles)."""

    def __init__(self, bookie_id: str, address: tuple[str, int], use_v2: bool = False):
        self.bookie_id = bookie_id
        self.address = address
        self.use_v2 = use_v2
        self.closed = False
        self._connections: dict[bool, _Connection] = {}  # by v3 or not
        self._txn = 0
        self._request_ids = 0

    # ---- connections ----
    def _connection(self, v3: bool) -> _Connection:
        """The live connection of that version, or a new one that is connecting (frames wait for it)."""
        conn = self._connections.get(v3)
        if conn is None:
            if self.closed:
                raise ServiceUnavailable(f"the client of bookie {self.bookie_id} is closed")
            conn = self._connections[v3] = _Connection(self, v3)
            asyncio.ensure_future(self._connect(conn))
        return conn

    async def _connect(self, conn: _Connection) -> None:
        loop = asyncio.get_running_loop()
        host, port = self.address
        try:
            await asyncio.wait_for(loop.create_connection(lambda: conn, host, port), CONNECT_TIMEOUT)
        except (TimeoutError, OSError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
            conn.fail(ServiceUnavailable(f"bookie {self.bookie_id} is unreachable at {host}:{port} ({reason})"))

    def _forget(self, conn: _Connection) -> None:
        if self._connections.get(conn.v3) is conn:
            del self._connections[conn.v3]

    def _header(self, operation: int, high_priority: bool = False) -> pb.BKPacketHeader:
        self._txn += 1
        header = pb.BKPacketHeader(version=pb.VERSION_THREE, operation=operation, txnId=self._txn)
        if high_priority:
            header.priority = HIGH_PRIORITY
        return header

    async def _call(
        self, operation: int, field: str, message, timeout: float, what: str, high_priority: bool = False
    ) -> pb.Response:
        """One v3 request; its Response."""
        conn = self._connection(True)
        header = self._header(operation, high_priority)
        request = pb.Request(header=header)
        getattr(request, field).CopyFrom(message)
        future = asyncio.get_running_loop().create_future()
        conn.expect(header.txnId, future)
        conn.send(wire.encode_v3(request))
        return await self._wait(conn, header.txnId, future, timeout, what)

    async def _wait(self, conn: _Connection, key, future, timeout: float, what: str):
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            conn.forget(key, future)
            raise OperationTimeout(f"{what} on bookie {self.bookie_id} timed out") from None
        except ServiceUnavailable as exc:
            raise ServiceUnavailable(f"{exc} ({what})") from None

    # ---- adds ----
    def add(self, ledger_id: int, master_key: bytes, recovery: bool, record: bytes, target, token, index: int):
        """Send one add (``record``: ``int32 size | framed entry``); ``target.added(token, index, status, self)``
        is called once with its status (``CONNECTION_LOST`` when the connection broke)."""
        try:
            conn = self._connection(not self.use_v2)
        except ServiceUnavailable:
            target.added(token, index, CONNECTION_LOST, self)
            return
        entry_id = token.entry_id
        waiter = _AddWaiter(target, token, index)
        if conn.v3:
            self._txn += 1
            conn.expect(self._txn, waiter)
            conn.send(wire.add_request_v3(self._txn, ledger_id, entry_id, master_key, memoryview(record)[4:], recovery))
        else:
            flags = wire.FLAG_RECOVERY_ADD | wire.FLAG_HIGH_PRIORITY if recovery else 0
            conn.expect((wire.ADDENTRY, ledger_id, entry_id), waiter)
            header = wire.packet_header(wire.V2_VERSION, wire.ADDENTRY, flags)
            conn.send(
                wire.V2_HEADER.pack(len(record) + wire.MASTER_KEY_LENGTH, header) + master_key + memoryview(record)[4:]
            )

    # ---- reads ----
    async def read_entry(self, request: pb.ReadRequest, timeout: float, what: str) -> pb.ReadResponse:
        """READ_ENTRY (plain, fencing, or a LAC long poll); the answer's status is the caller's to judge."""
        fence = request.HasField("flag") and request.flag == pb.ReadRequest.FENCE_LEDGER
        if self.use_v2 and not request.HasField("previousLAC"):
            conn = self._connection(False)
            key = (wire.READENTRY, request.ledgerId, request.entryId)
            future = asyncio.get_running_loop().create_future()
            conn.expect(key, future)
            flags = wire.FLAG_DO_FENCING | wire.FLAG_HIGH_PRIORITY if fence else 0
            conn.send(
                wire.encode_request_v2(
                    wire.ReadRequestV2(request.ledgerId, request.entryId, flags, request.masterKey if fence else None)
                )
            )
            answer = await self._wait(conn, key, future, timeout, what)
            return pb.ReadResponse(
                status=wire.v3_status(answer.rc),
                ledgerId=answer.ledger_id,
                entryId=answer.entry_id,
                body=bytes(answer.body),
            )
        response = await self._call(pb.READ_ENTRY, "readRequest", request, timeout, what, high_priority=fence)
        if response.HasField("readResponse"):
            return response.readResponse
        return pb.ReadResponse(status=response.status, ledgerId=request.ledgerId, entryId=request.entryId)

    async def read_lac(self, ledger_id: int, timeout: float) -> pb.ReadLacResponse:
        response = await self._call(
            pb.READ_LAC,
            "readLacRequest",
            pb.ReadLacRequest(ledgerId=ledger_id),
            timeout,
            f"read LAC of ledger {ledger_id}",
        )
        if response.HasField("readLacResponse"):
            return response.readLacResponse
        return pb.ReadLacResponse(status=response.status, ledgerId=ledger_id)

    async def read_range(self, request: pb.ReadRangeRequest, timeout: float):
        """Yield lists of ``(entryId, framed entry)`` in entry order: the entries of ``firstEntryId..lastEntryId``
        that the bookie holds by the write-set rule (when ``ensembleSize`` is set, and also held by
        ``alsoHeldByIndex`` when that is set), ``READ_WINDOW`` reads in flight; then, if a read failed,
        ``[(entryId, status)]`` and nothing more."""
        wanted = range_read_entries(request)
        ledger_id, what = request.ledgerId, f"range read of ledger {request.ledgerId}"
        conn = self._connection(not self.use_v2)
        window: collections.deque = collections.deque()

        def issue() -> bool:
            entry_id = next(wanted, None)
            if entry_id is None:
                return False
            window.append((entry_id, *self._send_read(conn, ledger_id, entry_id)))
            return True

        try:
            while len(window) < READ_WINDOW and issue():
                pass
            while window:
                chunk = []
                while window and (not chunk or window[0][2].done()) and len(chunk) < MAX_CHUNK:
                    entry_id, key, future = window.popleft()
                    answer = future.result() if future.done() else await self._wait(conn, key, future, timeout, what)
                    status, body = _read_result(answer)
                    if status != pb.EOK:
                        if chunk:
                            yield chunk
                        yield [(entry_id, status)]
                        return
                    chunk.append((entry_id, body))
                    issue()
                yield chunk
        finally:
            for _, key, future in window:
                conn.forget(key, future)

    def _send_read(self, conn: _Connection, ledger_id: int, entry_id: int):
        """Send a plain read; ``(key, future of its answer)``."""
        future = asyncio.get_running_loop().create_future()
        if conn.v3:
            self._txn += 1
            key = self._txn
            frame = wire.read_request_v3(key, ledger_id, entry_id)
        else:
            key = (wire.READENTRY, ledger_id, entry_id)
            frame = wire.V2_READ.pack(wire.V2_READ.size - 4, V2_READ_HEADER, ledger_id, entry_id)
        conn.expect(key, future)
        conn.send(frame)
        return key, future

    async def list_entries(self, ledger_ids: list[int], timeout: float):
        """GET_LIST_OF_ENTRIES_OF_LEDGER for many ledgers, ``LIST_WINDOW`` in flight: yield ``(ledgerId, status,
        encoded availability)`` in the order asked."""
        ids = iter(ledger_ids)
        window: collections.deque = collections.deque()

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
                yield ledger_id, status, answer.availabilityOfEntriesOfLedger
        finally:
            for _, future in window:
                future.cancel()

    async def bookie_info(self, timeout: float) -> pb.GetBookieInfoResponse:
        """GET_BOOKIE_INFO: total and free disk space."""
        requested = pb.GetBookieInfoRequest.TOTAL_DISK_CAPACITY | pb.GetBookieInfoRequest.FREE_DISK_SPACE
        response = await self._call(
            pb.GET_BOOKIE_INFO,
            "getBookieInfoRequest",
            pb.GetBookieInfoRequest(requested=requested),
            timeout,
            "bookie info",
        )
        if response.HasField("getBookieInfoResponse"):
            return response.getBookieInfoResponse
        return pb.GetBookieInfoResponse(status=response.status)

    async def close(self) -> None:
        """Close the connections; whatever is still in flight fails now (adds with CONNECTION_LOST), as when a
        connection breaks, so that no one waits on a client that is gone."""
        self.closed = True
        for conn in list(self._connections.values()):
            conn.fail(ServiceUnavailable(f"the client of bookie {self.bookie_id} was closed"))

"""A :class:`~bookie.client.bookie_client.BookieClient` over BookKeeper's own protocol (proto/README.md): one
connection to one bookie, shared by every ledger handle of a client.

Any bookie, ours or Java: v3 (protobuf, answers matched by txnId) by default; with ``use_v2`` adds and reads go in
the binary v2 protocol as BookKeeper's ``useV2WireProtocol`` sends them (answers matched by operation and ids), and
the operations that have no v2 layout (LAC, bookie info, entry lists, long polls) go on a second connection in v3 —
one connection cannot change back (the bookie's decoder stays v2).

Pipelining: the frames of one turn of the event loop leave in one write; a range read keeps a window of reads in
flight. Adds and plain reads are written by the hand-made encoders of :mod:`bookie.codec.wire` (no protobuf object
per entry). Failures become the core's exceptions here: an unreachable bookie is ServiceUnavailable, a read that
takes too long OperationTimeout, a lost connection fails its adds with ``CONNECTION_LOST`` (the handle changes
ensemble) and its reads with ServiceUnavailable, and a peer that does not answer in BookKeeper's protocol is named
as such.

TLS (``tls``): as the Java client's ``initiateTLS``, a new connection's first frame is a v3 START_TLS (also on a v2
connection); frames asked meanwhile wait, and leave once the bookie answered EOK and the TLS handshake is done.
Any other answer, or a failed handshake, fails the connection with a message that says which.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import ssl
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, TypeAlias, cast

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.client.bookie_client import (
    CONNECTION_LOST,
    EOK,
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
    status_name,
)
from bookie.codec import frames, wire
from bookie.codec.records import PREFIX
from bookie.codec.write_set import wanted_entries
from bookie.errors import BKError, MalformedFrame, OperationTimeout, ServiceUnavailable
from bookie.tls import Tls

# The client's status codes are BookKeeper's: checked once, where the generated ones are at hand.
assert {s.name: int(s) for s in StatusCode if s != CONNECTION_LOST} == dict(pb.StatusCode.items())

log = logging.getLogger(__name__)
CONNECT_TIMEOUT = 10.0
HIGH_PRIORITY = 100  # BKPacketHeader.priority of recovery traffic, as the Java client sets it
# Reads in flight per range read: at most READ_WINDOW, and about READ_WINDOW_BYTES of answers, sized by the last
# entry read (the first burst, before any size is known, is FIRST_READS). 1 KiB entries, ours -> ours, 3 bookies on
# 2 cores: 256 in flight left the CPUs idle a tenth of the time waiting for answers (perf -a); 1,024 read 74-79k
# entries/s against 70k in alternating runs. A range of 5 MB entries keeps 1 in flight, not a gigabyte.
READ_WINDOW = 1024
READ_WINDOW_BYTES = 4 << 20
FIRST_READS = 4
LIST_WINDOW = 64  # GET_LIST_OF_ENTRIES_OF_LEDGER requests in flight
V2_READ_HEADER = wire.packet_header(wire.V2_VERSION, wire.READENTRY, 0)
V2_FENCE_FLAGS = wire.FLAG_DO_FENCING | wire.FLAG_HIGH_PRIORITY

# a read's answer: a response item of bookie/codec/frames.py, (READ, key, status, framed entry, maxLAC or -1), from
# frames.py or from wire.py (frames.read_item); any other v3 answer: the whole Response
ReadItem: TypeAlias = tuple[Any, ...]
_Answer: TypeAlias = "pb.Response | ReadItem"
_V2Key = tuple[int, int, int]  # (opcode, ledgerId, entryId): how v2 answers are matched
_AddWaiter: TypeAlias = tuple[AddTarget[Any], Any, int]  # (target, token, index): to whom an add's answer goes
_Waiter: TypeAlias = "_AddWaiter | _Range | asyncio.Future[_Answer]"


_Add = tuple[int, int, int, bytes, bytes, bool]  # a v3 add: (txn, ledgerId, entryId, masterKey, record, recovery)


class _Connection(asyncio.Protocol):
    """One TCP connection: writes frames (one write per loop turn) and routes each answer to who waits for it."""

    def __init__(self, owner: WireBookieClient, v3: bool) -> None:
        self.owner = owner
        self.v3 = v3
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.out: list[bytes | memoryview] = []
        self.adds: list[_Add] = []  # v3 adds not yet in out
        self.flush_handle: asyncio.Handle | None = None
        self.by_txn: dict[int, _Waiter] = {}  # v3
        self.by_key: dict[_V2Key, collections.deque[_Waiter]] = {}  # v2: the same key may be asked more than once
        self.lost: BaseException | None = None
        self.connecting: asyncio.Future[None] | None = None  # held: the loop keeps only weak references to tasks
        self.plain: asyncio.Transport | None = None  # before TLS: the connection, not yet for frames
        self.tls_answer: asyncio.Future[pb.Response] | None = None  # the START_TLS answer, awaited

    # ---- transport ----
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        stream = cast(asyncio.Transport, transport)  # a stream transport: create_connection's
        if self.owner.tls is not None:
            self.plain = stream  # frames wait for TLS
            return
        self.transport = stream
        self._flush()

    async def start_tls(self, tls: Tls, txn_id: int) -> None:
        """START_TLS, then the handshake; the frames waiting leave encrypted."""
        loop = asyncio.get_running_loop()
        assert self.plain is not None
        self.tls_answer = loop.create_future()
        header = pb.BKPacketHeader(version=pb.VERSION_THREE, operation=pb.START_TLS, txnId=txn_id)
        self.plain.write(wire.encode_v3(pb.Request(header=header, startTLSRequest=pb.StartTLSRequest())))
        answer = await self.tls_answer
        where = self._where()
        if answer.status != pb.EOK:
            raise BKError(
                f"{where} does not offer TLS (it answered START_TLS with {status_name(answer.status)}): "
                "connect without TLS, or configure TLS on the bookie (tlsProviderFactoryClass)"
            )
        try:
            secure = await loop.start_tls(self.plain, self, tls.context(), server_hostname=self.owner.address[0])
        except ssl.SSLError as exc:
            raise BKError(f"TLS handshake with {where} failed: {_ssl_reason(exc)}") from None
        if secure is None:
            raise ServiceUnavailable(f"{where} closed the connection during the TLS handshake")
        self.transport = secure
        self._flush()

    def connection_lost(self, exc: Exception | None) -> None:
        if isinstance(exc, ssl.SSLError) and self.transport is None:  # the handshake failed: say so, and why
            self.fail(BKError(f"TLS handshake with {self._where()} failed: {_ssl_reason(exc)}"))
            return
        self.fail(
            ServiceUnavailable(f"connection to bookie {self.owner.bookie_id} lost" + (f" ({exc})" if exc else ""))
        )

    def fail(self, error: BaseException) -> None:
        """Fail everything in flight (once): adds with CONNECTION_LOST, everything else with ``error``."""
        if self.lost is not None:
            return
        self.lost = error
        if self.plain is not None and self.transport is None:  # it never got to serve: say why to who asks
            self.owner.failure = str(error)
        for transport in (self.transport, self.plain):
            if transport is not None:
                transport.abort()
        if self.tls_answer is not None and not self.tls_answer.done():
            self.tls_answer.set_exception(error)
        waiters = [*self.by_txn.values(), *(w for queue in self.by_key.values() for w in queue)]
        self.by_txn.clear()
        self.by_key.clear()
        self.out.clear()
        self.adds.clear()
        self.owner._forget(self)
        for waiter in waiters:
            _fail(waiter, error, self.owner)

    def send(self, frame: bytes, entry: memoryview | None = None) -> None:
        """Send ``frame`` (then ``entry``, the rest of the frame, when given: no copy of an entry into each frame)
        with what else is sent in this turn of the loop."""
        if self.adds:  # after the adds sent before it
            self._take_adds()
        self.out.append(frame)
        if entry is not None:
            self.out.append(entry)
        self._flush_soon()

    def send_add(self, add: _Add) -> None:
        """Send a v3 add, ``(txn, ledgerId, entryId, masterKey, record, recovery)``: the adds of a turn of the loop
        are framed together, in C (frames.add_requests_v3), each entry copied from its record once."""
        self.adds.append(add)
        self._flush_soon()

    def _flush_soon(self) -> None:
        if self.flush_handle is None and self.transport is not None:
            self.flush_handle = asyncio.get_running_loop().call_soon(self._flush)

    def _take_adds(self) -> None:
        self.out.append(frames.add_requests_v3(self.adds))
        self.adds.clear()

    def _flush(self) -> None:
        self.flush_handle = None
        if self.transport is not None and self.lost is None:
            if self.adds:
                self._take_adds()
            if self.out:
                self.transport.write(b"".join(self.out))
                self.out.clear()

    # ---- answers ----
    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        buffer += data
        if self.tls_answer is not None and not self.tls_answer.done():
            self._tls_answer()
            return
        scan = frames.scan_responses_v3 if self.v3 else frames.scan_responses_v2
        offset = 0
        try:
            while True:  # answers to adds and plain reads through frames.py, the rest through wire.py
                offset, items, stop = scan(buffer, offset, wire.MAX_FRAME_SIZE)
                if items:
                    self._answers(items)
                if stop == frames.STOP_END:
                    break
                if stop != frames.STOP_OTHER:
                    raise frames.framing_error(buffer, offset, stop, wire.MAX_FRAME_SIZE)
                body, offset = frames.next_frame(buffer, offset)
                if self.v3:
                    self._v3(wire.decode_v3_response(body))
                else:
                    self._v2(wire.decode_response_v2(body))
        except MalformedFrame as exc:
            self.fail(
                BKError(
                    f"bookie {self.owner.bookie_id} at {self.owner.address[0]}:{self.owner.address[1]} "
                    f"does not answer in BookKeeper's protocol ({exc})"
                )
            )
        finally:
            del buffer[:offset]

    def _answers(self, items: list[ReadItem]) -> None:
        """Each answer to whoever waits for it: ``(kind, key, status, entry, maxLAC)`` items of frames.py."""
        owner = self.owner
        if self.v3:
            by_txn = self.by_txn
            for item in items:
                waiter = by_txn.pop(item[1], None)
                if waiter is None:
                    continue  # timed out and forgotten
                kind = type(waiter)
                if kind is tuple:  # an add's (target, token, index)
                    waiter[0].added(waiter[1], waiter[2], item[2], owner)  # type: ignore[index]
                elif kind is _Range:  # what _Range.answered does, inline
                    waiter.answers[item[1]] = item  # type: ignore[union-attr]
                    if waiter.wake is not None:  # type: ignore[union-attr]
                        waiter.woken()  # type: ignore[union-attr]
                elif not waiter.done():  # type: ignore[union-attr]
                    waiter.set_result(item)  # type: ignore[union-attr]
            return
        for item in items:
            self._answer_v2(item[1], item[2], item)

    def _where(self) -> str:
        return f"bookie {self.owner.bookie_id} at {self.owner.address[0]}:{self.owner.address[1]}"

    def _tls_answer(self) -> None:
        """The START_TLS answer, in the clear: v3 even on a v2 connection (BookKeeper's ResponseDecoder with TLS)."""
        assert self.tls_answer is not None
        try:
            frames = wire.cut_frames(self.buffer)
            if not frames:
                return
            if len(frames) > 1 or self.buffer:
                raise MalformedFrame("more than the START_TLS answer before the TLS handshake")
            answer = wire.decode_v3_response(frames[0])
        except MalformedFrame as exc:
            self.tls_answer.set_exception(BKError(f"bookie {self.owner.bookie_id} answered START_TLS wrongly: {exc}"))
            return
        self.tls_answer.set_result(answer)

    def _v3(self, response: pb.Response) -> None:
        """A v3 answer that frames.py left to wire.py."""
        waiter = self.by_txn.pop(response.header.txnId, None)
        if waiter is None:
            return  # timed out and forgotten
        status = response.addResponse.status if response.HasField("addResponse") else response.status
        is_read = isinstance(waiter, _Range) or response.header.operation == pb.READ_ENTRY
        self._give(waiter, status, frames.read_item(response) if is_read else response)

    def _v2(self, response: wire.ResponseV2) -> None:
        """A v2 answer that frames.py left to wire.py."""
        if isinstance(response, wire.AddResponseV2):
            key = (wire.ADDENTRY, response.ledger_id, response.entry_id)
            self._answer_v2(key, wire.v3_status(response.rc), None)
        elif isinstance(response, wire.ReadResponseV2):
            key = (wire.READENTRY, response.ledger_id, response.entry_id)
            status = wire.v3_status(response.rc)
            self._answer_v2(key, status, (frames.READ, key, status, bytes(response.body), -1))
        # anything else: nothing this client asks is answered so

    def _answer_v2(self, key: _V2Key, status: int, item: ReadItem | None) -> None:
        """The answer to the oldest request of ``key`` (v2 answers carry no request id): a read gets ``item``."""
        waiters = self.by_key.get(key)
        if not waiters:
            return
        waiter = waiters.popleft()
        if not waiters:
            del self.by_key[key]
        self._give(waiter, status, item)

    def _give(self, waiter: _Waiter, status: int, answer: _Answer | None) -> None:
        """An answer to its waiter: an add's status, or a read's item (``answer``; None: an add's answer, which a
        read cannot take). :meth:`_answers` does the same inline, once per frame."""
        if isinstance(waiter, tuple):
            target, token, index = waiter
            target.added(token, index, status, self.owner)
        elif answer is None:
            return
        elif isinstance(waiter, _Range):
            assert isinstance(answer, tuple), "a range read is answered by read items"
            waiter.answered(answer)
        elif not waiter.done():
            waiter.set_result(answer)

    def expect(self, key: int | _V2Key, waiter: _Waiter) -> None:
        """Route the answer of ``key`` (v3: a txnId; v2: the ids of the request) to ``waiter``."""
        if isinstance(key, int):
            self.by_txn[key] = waiter
        else:
            waiters = self.by_key.get(key)
            if waiters is None:
                waiters = self.by_key[key] = collections.deque()
            waiters.append(waiter)

    def forget(self, key: int | _V2Key, waiter: _Waiter) -> None:
        """A waiter that gave up (timed out): its late answer is dropped."""
        if isinstance(key, int):
            self.by_txn.pop(key, None)
        else:
            waiters = self.by_key.get(key)
            if waiters is not None:
                try:
                    waiters.remove(waiter)
                except ValueError:
                    pass


def _ssl_reason(exc: ssl.SSLError) -> str:
    """OpenSSL's reason in words: ``certificate verify failed: certificate has expired``."""
    detail = getattr(exc, "verify_message", None)
    reason = (exc.reason or str(exc)).lower().replace("_", " ")
    return f"{reason}: {detail}" if detail else reason


class _Range:
    """The waiter of all the reads in flight of one range read: their answers by key (txnId, or v2 key), and the
    reader's wake-up. One object for every read, and one wake-up per burst of answers, not one per entry (a future
    or a waiter per read cost more than the read)."""

    __slots__ = ("answers", "error", "wake")

    def __init__(self) -> None:
        self.answers: dict[int | _V2Key, ReadItem] = {}
        self.error: BaseException | None = None  # the connection's failure
        self.wake: asyncio.Future[None] | None = None  # while the reader waits

    def answered(self, item: ReadItem) -> None:
        self.answers[item[1]] = item
        if self.wake is not None:
            self.woken()

    def failed(self, error: BaseException) -> None:
        if self.error is None:
            self.error = error
        if self.wake is not None:
            self.woken()

    def woken(self) -> None:
        """Wake the reader (once: the next answers find no one waiting)."""
        assert self.wake is not None
        if not self.wake.done():
            self.wake.set_result(None)
        self.wake = None


def _fail(waiter: _Waiter, error: BaseException, client: WireBookieClient) -> None:
    if isinstance(waiter, tuple):
        target, token, index = waiter
        target.added(token, index, CONNECTION_LOST, client)
    elif isinstance(waiter, _Range):
        waiter.failed(error)
    elif not waiter.done():
        waiter.set_exception(error)


def _read_result(answer: _Answer) -> tuple[int, bytes]:
    """``(v3 status, framed entry)`` of a read's answer."""
    assert isinstance(answer, tuple), "a read is answered by a read item"
    return answer[2], answer[3]


class WireBookieClient:
    """The data operations on one bookie over BookKeeper's protocol (a BookieClient), and GET_BOOKIE_INFO."""

    def __init__(self, bookie_id: str, address: tuple[str, int], use_v2: bool = False, tls: Tls | None = None) -> None:
        self.bookie_id = bookie_id
        self.address = address
        self.use_v2 = use_v2
        self.tls = tls
        self.failure: str | None = None  # why the last TLS connection failed before it served (its handshake)
        self.closed = False
        self._connections: dict[bool, _Connection] = {}  # by v3 or not
        self._txn = 0

    # ---- connections ----
    def _connection(self, v3: bool) -> _Connection:
        """The live connection of that version, or a new one that is connecting (frames wait for it)."""
        conn = self._connections.get(v3)
        if conn is None:
            if self.closed:
                raise ServiceUnavailable(f"the client of bookie {self.bookie_id} is closed")
            conn = self._connections[v3] = _Connection(self, v3)
            conn.connecting = asyncio.ensure_future(self._connect(conn))
        return conn

    async def _connect(self, conn: _Connection) -> None:
        loop = asyncio.get_running_loop()
        host, port = self.address
        try:
            await asyncio.wait_for(loop.create_connection(lambda: conn, host, port), CONNECT_TIMEOUT)
            if self.tls is not None:
                self._txn += 1
                await asyncio.wait_for(conn.start_tls(self.tls, self._txn), CONNECT_TIMEOUT)
        except (TimeoutError, OSError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
            conn.fail(ServiceUnavailable(f"bookie {self.bookie_id} is unreachable at {host}:{port} ({reason})"))
        except BKError as exc:
            conn.fail(exc)

    def _forget(self, conn: _Connection) -> None:
        if self._connections.get(conn.v3) is conn:
            del self._connections[conn.v3]

    async def _call(self, operation: int, field: str, message: Any, timeout: float, what: str) -> pb.Response:
        """One v3 request (``message`` in the Request's ``field``) other than a read; its Response."""
        answer = await self._request(operation, field, message, timeout, what)
        assert not isinstance(answer, tuple), "only a read is answered by a read item"
        return answer

    async def _read(self, request: pb.ReadRequest, timeout: float, what: str, high_priority: bool = False) -> ReadItem:
        """One v3 READ_ENTRY request (a fence read, a long poll); its answer, as a read item."""
        answer = await self._request(pb.READ_ENTRY, "readRequest", request, timeout, what, high_priority)
        assert isinstance(answer, tuple), "a read is answered by a read item"
        return answer

    async def _request(
        self, operation: int, field: str, message: Any, timeout: float, what: str, high_priority: bool = False
    ) -> _Answer:
        conn = self._connection(True)
        self._txn += 1
        header = pb.BKPacketHeader(version=pb.VERSION_THREE, operation=operation, txnId=self._txn)
        if high_priority:
            header.priority = HIGH_PRIORITY
        request = pb.Request(header=header)
        getattr(request, field).CopyFrom(message)
        future: asyncio.Future[_Answer] = asyncio.get_running_loop().create_future()
        conn.expect(self._txn, future)
        conn.send(wire.encode_v3(request))
        return await self._wait(conn, header.txnId, future, timeout, what)

    async def _wait(
        self, conn: _Connection, key: int | _V2Key, future: asyncio.Future[_Answer], timeout: float, what: str
    ) -> _Answer:
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            conn.forget(key, future)
            raise OperationTimeout(f"{what} on bookie {self.bookie_id} timed out") from None
        except ServiceUnavailable as exc:
            raise ServiceUnavailable(f"{exc} ({what})") from None

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
        waiter = (target, token, index)
        if conn.v3:
            self._txn = txn = self._txn + 1
            conn.by_txn[txn] = waiter
            conn.send_add((txn, ledger_id, entry_id, master_key, record, recovery))
        else:
            flags = wire.FLAG_RECOVERY_ADD | wire.FLAG_HIGH_PRIORITY if recovery else 0
            conn.expect((wire.ADDENTRY, ledger_id, entry_id), waiter)
            header = wire.packet_header(wire.V2_VERSION, wire.ADDENTRY, flags)
            size = 4 + wire.MASTER_KEY_LENGTH + len(record) - PREFIX  # the packet header, the key, the entry
            conn.send(wire.V2_HEADER.pack(size, header) + master_key, memoryview(record)[PREFIX:])

    # ---- reads ----
    async def read_entry(
        self, ledger_id: int, entry_id: int, timeout: float, what: str, fence_key: bytes | None = None
    ) -> EntryRead:
        """See :meth:`BookieClient.read_entry`."""
        if fence_key is None:
            conn = self._connection(not self.use_v2)
            future = asyncio.get_running_loop().create_future()
            (key,) = self._send_reads(conn, ledger_id, [entry_id], future)
        elif self.use_v2:
            conn = self._connection(False)
            key = (wire.READENTRY, ledger_id, entry_id)
            future = asyncio.get_running_loop().create_future()
            conn.expect(key, future)
            conn.send(wire.encode_request_v2(wire.ReadRequestV2(ledger_id, entry_id, V2_FENCE_FLAGS, fence_key)))
        else:
            request = pb.ReadRequest(
                ledgerId=ledger_id, entryId=entry_id, flag=pb.ReadRequest.FENCE_LEDGER, masterKey=fence_key
            )
            return EntryRead(*_read_result(await self._read(request, timeout, what, high_priority=True)))
        return EntryRead(*_read_result(await self._wait(conn, key, future, timeout, what)))

    async def long_poll_lac(self, ledger_id: int, previous: int, wait: float, timeout: float) -> LacPoll:
        """See :meth:`BookieClient.long_poll_lac` (always v3: v2 has no long poll)."""
        request = pb.ReadRequest(ledgerId=ledger_id, entryId=-1, previousLAC=previous, timeOut=int(wait * 1000))
        answer = await self._read(request, timeout, f"long poll ledger {ledger_id}")
        return LacPoll(answer[2], answer[4])

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

    async def read_range(
        self,
        ledger_id: int,
        first_entry_id: int,
        last_entry_id: int,
        timeout: float,
        stripe: Stripe | None = None,
        high_priority: bool = False,
    ) -> AsyncIterator[EntryChunk | RangeStopped]:
        """See :meth:`BookieClient.read_range`: plain reads, a window in flight (READ_WINDOW, READ_WINDOW_BYTES),
        the answers of one burst yielded together. ``high_priority`` is not carried: BookKeeper's plain reads have
        no priority."""
        wanted: Iterator[int]
        if stripe is None:
            wanted = iter(range(first_entry_id, last_entry_id + 1))
        else:
            wanted = wanted_entries(
                first_entry_id,
                last_entry_id,
                stripe.bookie_index,
                stripe.ensemble_size,
                stripe.write_quorum_size,
                stripe.also_held_by,
            )
        what = f"range read of ledger {ledger_id}"
        conn = self._connection(not self.use_v2)
        reads = _Range()
        answers = reads.answers
        window: collections.deque[tuple[int, int | _V2Key]] = collections.deque()  # (entry id, key), in order
        limit = FIRST_READS

        def refill() -> None:
            """Top the window up to ``limit`` reads, sent together."""
            entry_ids = list(itertools.islice(wanted, limit - len(window)))
            if entry_ids:
                window.extend(zip(entry_ids, self._send_reads(conn, ledger_id, entry_ids, reads), strict=True))

        try:
            refill()
            while window:
                chunk: EntryChunk = []
                while window:  # the answers that have come, in order (at most READ_WINDOW)
                    item = answers.pop(window[0][1], None)
                    if item is None:
                        break
                    entry_id = window.popleft()[0]
                    if item[2] != EOK:
                        if chunk:
                            yield chunk
                        yield RangeStopped(entry_id, item[2])
                        return
                    chunk.append((entry_id, item[3]))
                if not chunk:
                    await self._wait_range(reads, timeout, what)
                    continue
                limit = max(1, min(READ_WINDOW, READ_WINDOW_BYTES // max(len(chunk[-1][1]), 1)))
                if len(window) <= limit // 2:
                    refill()
                yield chunk
        finally:
            for _, key in window:
                conn.forget(key, reads)

    async def _wait_range(self, reads: _Range, timeout: float, what: str) -> None:
        """Until the next answer of a range read, or its connection's failure (raised, as :meth:`_wait` does)."""
        if reads.error is None:
            reads.wake = asyncio.get_running_loop().create_future()
            try:
                await asyncio.wait_for(reads.wake, timeout)
            except TimeoutError:
                raise OperationTimeout(f"{what} on bookie {self.bookie_id} timed out") from None
            finally:
                reads.wake = None
        if reads.error is not None:
            if isinstance(reads.error, ServiceUnavailable):
                raise ServiceUnavailable(f"{reads.error} ({what})") from None
            raise reads.error

    def _send_reads(
        self, conn: _Connection, ledger_id: int, entry_ids: list[int], waiter: _Range | asyncio.Future[_Answer]
    ) -> Sequence[int | _V2Key]:
        """Send plain reads of ``entry_ids`` in one go, their answers to ``waiter``; their keys."""
        keys: Sequence[int | _V2Key]
        if conn.v3:
            first = self._txn + 1
            self._txn += len(entry_ids)
            keys = range(first, first + len(entry_ids))
            conn.by_txn.update(dict.fromkeys(keys, waiter))
            conn.send(frames.read_requests_v3(first, ledger_id, entry_ids))
            return keys
        keys = [(wire.READENTRY, ledger_id, entry_id) for entry_id in entry_ids]
        for key in keys:
            conn.expect(key, waiter)
        size, header = wire.V2_READ.size - 4, V2_READ_HEADER
        conn.send(b"".join(wire.V2_READ.pack(size, header, ledger_id, entry_id) for entry_id in entry_ids))
        return keys

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

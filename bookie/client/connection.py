"""One TCP connection to one bookie in BookKeeper's protocol (proto/README.md), v3 or v2: it writes the frames of one
turn of the event loop in one write, and routes each answer to whoever waits for it.

Answers are matched to requests by txnId (v3) or by operation and ids (v2, :data:`~bookie.codec.frames.V2Key`: the
same key may be asked more than once, answered in order). Who waits is a :data:`Waiter`: an add's
:class:`AddWaiter`, a range read's :class:`RangeWaiter` (one for all its reads), or a future (any other request).
Adds and plain reads, and their answers, go through :mod:`bookie.codec.frames` (C); everything else through
:mod:`bookie.codec.wire`.

When the connection breaks, everything in flight fails at once: adds with ``CONNECTION_LOST`` (the handle changes
ensemble), everything else with the error (ServiceUnavailable, or BKError for a peer that does not answer in
BookKeeper's protocol).

TLS: as the Java client's ``initiateTLS``, the first frame is a v3 START_TLS (also on a v2 connection); frames asked
meanwhile wait, and leave once the bookie answered EOK and the TLS handshake is done. Any other answer, or a failed
handshake, fails the connection with a message that says which.
"""

from __future__ import annotations

import asyncio
import collections
import ssl
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, cast

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.client.bookie_client import CONNECTION_LOST, AddTarget, BookieClient, status_name
from bookie.codec import frames, wire
from bookie.codec.frames import AddRequest, ResponseItem, V2Key
from bookie.errors import BKError, MalformedFrame, OperationTimeout, ServiceUnavailable
from bookie.tls import Tls

CONNECT_TIMEOUT = 10.0
Answer: TypeAlias = "pb.Response | ResponseItem"  # a read's answer is a ResponseItem; any other, the v3 Response
Key: TypeAlias = "int | V2Key"  # what an answer is matched by: its txnId (v3), its v2 key


@dataclass(slots=True)
class AddWaiter:
    """Who is told an add's status: ``target.added(token, index, status, client)``."""

    target: AddTarget[Any]
    token: Any
    index: int


class RangeWaiter:
    """The waiter of all the reads in flight of one range read: their answers by key, and the reader's wake-up. One
    object for every read, and one wake-up per burst of answers, not one per entry (a future or a waiter per read
    cost more than the read)."""

    __slots__ = ("answers", "error", "wake")

    def __init__(self) -> None:
        self.answers: dict[Key, ResponseItem] = {}
        self.error: BaseException | None = None  # the connection's failure
        self.wake: asyncio.Future[None] | None = None  # while the reader waits

    def answered(self, item: ResponseItem) -> None:
        self.answers[item.key] = item
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


Waiter: TypeAlias = "AddWaiter | RangeWaiter | asyncio.Future[Answer]"


class Connection(asyncio.Protocol):
    """One connection of ``client`` (v3, or v2 when not ``v3``); ``on_failed(self)`` is called once when it fails."""

    def __init__(
        self,
        client: BookieClient,
        address: tuple[str, int],
        tls: Tls | None,
        v3: bool,
        on_failed: Callable[[Connection], None],
    ) -> None:
        self.client = client
        self.address = address
        self.tls = tls
        self.v3 = v3
        self.on_failed = on_failed
        self.txn = 0  # the last txnId sent
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.out: list[bytes] = []
        self.adds: list[AddRequest] = []  # adds not yet in out
        self.flush_handle: asyncio.Handle | None = None
        self.by_txn: dict[int, Waiter] = {}  # v3
        self.by_key: dict[V2Key, collections.deque[Waiter]] = {}  # v2
        self.lost: BaseException | None = None
        self.failure: str | None = None  # why it failed before it served (its TLS handshake), for later errors
        self.connecting: asyncio.Future[None] | None = None  # held: the loop keeps only weak references to tasks
        self.plain: asyncio.Transport | None = None  # before TLS: the connection, not yet for frames
        self.tls_answer: asyncio.Future[pb.Response] | None = None  # the START_TLS answer, awaited

    # ---- transport ----
    async def open(self) -> None:
        """Connect (then START_TLS and the handshake, with ``tls``); on failure, fail the connection."""
        loop = asyncio.get_running_loop()
        host, port = self.address
        try:
            await asyncio.wait_for(loop.create_connection(lambda: self, host, port), CONNECT_TIMEOUT)
            if self.tls is not None:
                await asyncio.wait_for(self._start_tls(self.tls), CONNECT_TIMEOUT)
        except (TimeoutError, OSError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
            self.fail(ServiceUnavailable(f"bookie {self.client.bookie_id} is unreachable at {host}:{port} ({reason})"))
        except BKError as exc:
            self.fail(exc)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        stream = cast(asyncio.Transport, transport)  # a stream transport: create_connection's
        if self.tls is not None:
            self.plain = stream  # frames wait for TLS
            return
        self.transport = stream
        self._flush()

    async def _start_tls(self, tls: Tls) -> None:
        """START_TLS, then the handshake; the frames waiting leave encrypted."""
        loop = asyncio.get_running_loop()
        assert self.plain is not None
        self.tls_answer = loop.create_future()
        self.txn += 1
        header = pb.BKPacketHeader(version=pb.VERSION_THREE, operation=pb.START_TLS, txnId=self.txn)
        self.plain.write(wire.encode_v3(pb.Request(header=header, startTLSRequest=pb.StartTLSRequest())))
        answer = await self.tls_answer
        where = self._where()
        if answer.status != pb.EOK:
            raise BKError(
                f"{where} does not offer TLS (it answered START_TLS with {status_name(answer.status)}): "
                "connect without TLS, or configure TLS on the bookie (tlsProviderFactoryClass)"
            )
        try:
            secure = await loop.start_tls(self.plain, self, tls.context(), server_hostname=self.address[0])
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
            ServiceUnavailable(f"connection to bookie {self.client.bookie_id} lost" + (f" ({exc})" if exc else ""))
        )

    def fail(self, error: BaseException) -> None:
        """Fail everything in flight (once): adds with CONNECTION_LOST, everything else with ``error``."""
        if self.lost is not None:
            return
        self.lost = error
        if self.plain is not None and self.transport is None:  # it never got to serve: say why to who asks
            self.failure = str(error)
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
        self.on_failed(self)
        for waiter in waiters:
            if isinstance(waiter, AddWaiter):
                waiter.target.added(waiter.token, waiter.index, CONNECTION_LOST, self.client)
            elif isinstance(waiter, RangeWaiter):
                waiter.failed(error)
            elif not waiter.done():
                waiter.set_exception(error)

    # ---- requests ----
    def send(self, frame: bytes) -> None:
        """Send ``frame`` with what else is sent in this turn of the loop."""
        if self.adds:  # after the adds sent before it
            self._take_adds()
        self.out.append(frame)
        self._flush_soon()

    def send_add(self, add: AddRequest) -> None:
        """Send an add: the adds of a turn of the loop are framed together, in C (frames.add_requests_v3/_v2),
        each entry copied from its record once."""
        self.adds.append(add)
        self._flush_soon()

    def send_reads(self, ledger_id: int, entry_ids: list[int], waiter: Waiter) -> Sequence[Key]:
        """Send plain reads of ``entry_ids`` in one go, their answers to ``waiter``; their keys."""
        if self.v3:
            first = self.txn + 1
            self.txn += len(entry_ids)
            txns = range(first, first + len(entry_ids))
            self.by_txn.update(dict.fromkeys(txns, waiter))
            self.send(frames.read_requests_v3(first, ledger_id, entry_ids))
            return txns
        keys = [(wire.READENTRY, ledger_id, entry_id) for entry_id in entry_ids]
        for key in keys:
            self.expect(key, waiter)
        self.send(wire.read_requests_v2(ledger_id, entry_ids))
        return keys

    async def request(
        self, operation: int, field: str, message: Any, timeout: float, what: str, high_priority: bool = False
    ) -> Answer:
        """One v3 request (``message`` in the Request's ``field``); its answer."""
        self.txn += 1
        header = pb.BKPacketHeader(version=pb.VERSION_THREE, operation=operation, txnId=self.txn)
        if high_priority:
            header.priority = wire.HIGH_PRIORITY
        request = pb.Request(header=header)
        getattr(request, field).CopyFrom(message)
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self.expect(self.txn, future)
        self.send(wire.encode_v3(request))
        return await self.wait(self.txn, future, timeout, what)

    async def wait(self, key: Key, future: asyncio.Future[Answer], timeout: float, what: str) -> Answer:
        """The answer ``future`` is given; OperationTimeout after ``timeout`` (its late answer is then dropped)."""
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            self.forget(key, future)
            raise OperationTimeout(f"{what} on bookie {self.client.bookie_id} timed out") from None
        except ServiceUnavailable as exc:
            raise ServiceUnavailable(f"{exc} ({what})") from None

    def expect(self, key: Key, waiter: Waiter) -> None:
        """Route the answer of ``key`` (v3: a txnId; v2: the ids of the request) to ``waiter``."""
        if isinstance(key, int):
            self.by_txn[key] = waiter
        else:
            waiters = self.by_key.get(key)
            if waiters is None:
                waiters = self.by_key[key] = collections.deque()
            waiters.append(waiter)

    def forget(self, key: Key, waiter: Waiter) -> None:
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

    def _flush_soon(self) -> None:
        if self.flush_handle is None and self.transport is not None:
            self.flush_handle = asyncio.get_running_loop().call_soon(self._flush)

    def _take_adds(self) -> None:
        adds, self.adds = self.adds, []  # taken first: adds it refuses are not framed again at every send
        self.out.append((frames.add_requests_v3 if self.v3 else frames.add_requests_v2)(adds))

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
                    item = frames.response_item_v2(wire.decode_response_v2(body))
                    if item is not None:  # anything else: nothing this client asks is answered so
                        self._answer_v2(item)
        except MalformedFrame as exc:
            self.fail(BKError(f"{self._where()} does not answer in BookKeeper's protocol ({exc})"))
        finally:
            del buffer[:offset]

    def _answers(self, items: list[ResponseItem]) -> None:
        """Each answer to whoever waits for it (what :meth:`_give` does, inline for v3: once per frame)."""
        if not self.v3:
            for item in items:
                self._answer_v2(item)
            return
        by_txn, client = self.by_txn, self.client
        for item in items:
            _, txn, status, _, _ = item  # once, not an attribute lookup each (a NamedTuple's cost ~15 ns apiece)
            waiter = by_txn.pop(txn, None)  # type: ignore[arg-type]  # v3: the key is the txnId
            if waiter is None:
                continue  # timed out and forgotten
            if type(waiter) is AddWaiter:
                waiter.target.added(waiter.token, waiter.index, status, client)
            elif type(waiter) is RangeWaiter:  # what RangeWaiter.answered does
                waiter.answers[txn] = item
                if waiter.wake is not None:
                    waiter.woken()
            elif not waiter.done():  # type: ignore[union-attr]  # a future
                waiter.set_result(item)  # type: ignore[union-attr]

    def _where(self) -> str:
        return f"bookie {self.client.bookie_id} at {self.address[0]}:{self.address[1]}"

    def _tls_answer(self) -> None:
        """The START_TLS answer, in the clear: v3 even on a v2 connection (BookKeeper's ResponseDecoder with TLS)."""
        assert self.tls_answer is not None
        try:
            bodies = wire.cut_frames(self.buffer)
            if not bodies:
                return
            if len(bodies) > 1 or self.buffer:
                raise MalformedFrame("more than the START_TLS answer before the TLS handshake")
            answer = wire.decode_v3_response(bodies[0])
        except MalformedFrame as exc:
            self.tls_answer.set_exception(BKError(f"bookie {self.client.bookie_id} answered START_TLS wrongly: {exc}"))
            return
        self.tls_answer.set_result(answer)

    def _v3(self, response: pb.Response) -> None:
        """A v3 answer that frames.py left to wire.py."""
        waiter = self.by_txn.pop(response.header.txnId, None)
        if waiter is None:
            return  # timed out and forgotten
        status = response.addResponse.status if response.HasField("addResponse") else response.status
        is_read = isinstance(waiter, RangeWaiter) or response.header.operation == pb.READ_ENTRY
        self._give(waiter, status, frames.read_item(response) if is_read else response)

    def _answer_v2(self, item: ResponseItem) -> None:
        """The answer to the oldest request of its key (v2 answers carry no request id)."""
        key = cast(V2Key, item.key)
        waiters = self.by_key.get(key)
        if not waiters:
            return
        waiter = waiters.popleft()
        if not waiters:
            del self.by_key[key]
        self._give(waiter, item.status, item)

    def _give(self, waiter: Waiter, status: int, answer: Answer) -> None:
        """An answer to its waiter: an add its status, a read its item (a range read takes read items only)."""
        if isinstance(waiter, AddWaiter):
            waiter.target.added(waiter.token, waiter.index, status, self.client)
        elif isinstance(waiter, RangeWaiter):
            if isinstance(answer, ResponseItem) and answer.kind == frames.READ:
                waiter.answered(answer)
        elif not waiter.done():
            waiter.set_result(answer)


def _ssl_reason(exc: ssl.SSLError) -> str:
    """OpenSSL's reason in words: ``certificate verify failed: certificate has expired``."""
    detail = getattr(exc, "verify_message", None)
    reason = (exc.reason or str(exc)).lower().replace("_", " ")
    return f"{reason}: {detail}" if detail else reason

"""BookKeeper's own wire protocol on the bookie port (proto/README.md): one asyncio ``Protocol`` per connection.

Per ``data_received``, every complete frame is cut from one buffer and decoded, v3 or v2, told apart per connection
as BookKeeper's ``RequestDecoder`` does: plain adds and reads by bookie/codec/frames.py (in C), the rest by
bookie/codec/wire.py. All the adds among them go to ledger storage as one batch (one journal write); once it is
durable, all their responses leave in one write. Plain reads are answered in the same pass, also in one write. What
waits (fence reads, LAC long polls, WRITE_LAC, FORCE_LEDGER...) runs as a task on the request handlers of
:class:`bookie.server.handlers.BookieHandlers` and answers when done: a BookKeeper client matches answers by txnId
(v3) or by operation and ids (v2), so they need not come in order.

Back-pressure, as BookKeeper's ``maxAddsInProgressLimit`` / ``maxReadsInProgressLimit`` and its response
back-pressure do it by turning off a channel's auto-read: a connection stops reading while it has more than
``MAX_ADDS_IN_PROGRESS`` adds or ``MAX_READS_IN_PROGRESS`` waiting reads in flight, or while its peer does not take
the answers (the transport's write buffer above ``WRITE_BUFFER_HIGH``); it reads again once all are below their
resume marks. What it does not read stays in the kernel's socket buffer, and TCP pushes back on the client. No queue
in the bookie grows with what a client sends. (BookKeeper's limits are 0, unbounded, by default; ours are always on.)

TLS, as BookKeeper negotiates it (``BookieRequestProcessor.processStartTLSRequestV3``): a v3 START_TLS request is
answered EOK in the clear, and the TLS handshake follows on the same connection (``loop.start_tls``); a bookie
without TLS answers EBADREQ and the connection goes on in the clear. The client sends nothing after START_TLS
until its answer, so bytes that follow it in the same read are a protocol error (the connection is closed: they
were neither read in the clear nor lost silently). Authentication and what a principal may read:
bookie/server/auth.py. With neither configured, the per-frame path is the one without them: the checks are made
once per pass, or only on the connections that need them.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import ssl
import time

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.codec import frames, wire
from bookie.codec.records import size_prefix
from bookie.errors import MalformedFrame
from bookie.server.handlers import status_of
from bookie.storage.ledger_storage import AddKey
from bookie.tls import ou_of_subject

log = logging.getLogger(__name__)

MAX_ADDS_IN_PROGRESS = 10_000  # per connection: ~10 MB of 1 KiB entries waiting for the journal
MAX_READS_IN_PROGRESS = 10_000  # per connection: fence reads and LAC long polls waiting
WRITE_BUFFER_HIGH = 4 << 20  # answers the peer has not taken yet
V2_ADD_HEADER = wire.packet_header(wire.V2_VERSION, wire.ADDENTRY, 0)
V2_READ_HEADER = wire.packet_header(wire.V2_VERSION, wire.READENTRY, 0)
BATCH_READ_OVERHEAD = 24 + 8 + 4  # BatchedReadEntryProcessor: the response's fixed part, counted against maxSize
FENCE, RECOVERY_ADD, PIGGYBACK = pb.ReadRequest.FENCE_LEDGER, pb.AddRequest.RECOVERY_ADD, pb.ReadRequest.ENTRY_PIGGYBACK
HIGH_PRIORITY = 100  # what the Java client puts in BKPacketHeader.priority of recovery traffic
HANDSHAKE_TIMEOUT = 10.0  # seconds: the Java client's startTLSTimeoutSecs
V2_EUA = wire.v2_status(pb.EUA)
# the request stats of the v3 operations that run as tasks (RequestStats: *_REQUEST, arrival to answer written)
REQUEST_STATS = {
    pb.WRITE_LAC: "WRITE_LAC_REQUEST",
    pb.READ_LAC: "READ_LAC_REQUEST",
    pb.FORCE_LEDGER: "FORCE_LEDGER_REQUEST",
    pb.GET_BOOKIE_INFO: "GET_BOOKIE_INFO_REQUEST",
    pb.GET_LIST_OF_ENTRIES_OF_LEDGER: "GET_LIST_OF_ENTRIES_OF_LEDGER_REQUEST",
}


SCANS = {True: frames.scan_requests_v3, False: frames.scan_requests_v2}  # by whether the connection speaks v3


def _read_request_stats(read: pb.ReadRequest) -> str:
    """A read that waits is a fence read or a long poll: each has request stats of its own (ReadEntryProcessorV3)."""
    return "READ_ENTRY_LONG_POLL_REQUEST" if read.HasField("previousLAC") else "READ_ENTRY_FENCE_REQUEST"


def _address(peer) -> str:
    return f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)


def _reply_header(header: pb.BKPacketHeader) -> pb.BKPacketHeader:
    """The header of an operation's response: version, operation and txnId of the request (PacketProcessorBaseV3)."""
    return pb.BKPacketHeader(version=pb.VERSION_THREE, operation=header.operation, txnId=header.txnId)


class _StartTls(Exception):
    def __init__(self, header: pb.BKPacketHeader) -> None:
        self.header = header


class _Adds:
    """The adds of one pass over the frames: records for one ``add_batch``, and who to answer."""

    __slots__ = ("answers", "keys", "records", "started", "submitted")

    def __init__(self, started: float) -> None:
        self.keys: dict[int, tuple] = {}  # ledgerId -> (masterKey, recovery, deferred sync)
        self.records: list[bytes] = []
        self.answers: list[tuple] = []  # (v3 request header or None for v2, ledgerId, entryId)
        self.started = started  # when their frames arrived
        self.submitted = started  # when they went to storage


class WireServer:
    """The bookie port's listener and its connections."""

    def __init__(self, bookie, handlers, max_frame_size: int):
        self.bookie = bookie
        self.tls = bookie.config.tls  # bookie.tls.Tls, or None: START_TLS is answered EBADREQ
        self.authorizer = bookie.config.authorizer
        self.read_requires_key = bookie.config.bkctlReadRequiresMasterKey  # the opt-in per-ledger read check
        self.handlers = handlers  # BookieHandlers
        self.storage = bookie.storage
        self.max_frame_size = max_frame_size
        self.connections: set[BookieConnection] = set()
        self.server: asyncio.AbstractServer | None = None

    async def start(self, host: str, port: int) -> None:
        loop = asyncio.get_running_loop()
        self.server = await loop.create_server(lambda: BookieConnection(self), host, port, reuse_address=True)

    async def stop(self, grace: float = 2.0) -> None:
        """Stop accepting; give adds in flight ``grace`` seconds to be answered; close every connection."""
        if self.server is None:
            return
        self.server.close()
        deadline = time.monotonic() + grace
        while any(c.adds_in_flight for c in self.connections) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        for connection in list(self.connections):
            connection.close()


class BookieConnection(asyncio.Protocol):
    def __init__(self, server: WireServer):
        self.server = server
        self.handlers = server.handlers
        self.storage = server.storage
        self.bookie = server.bookie
        self.buffer = bytearray()
        self.decoder = wire.RequestDecoder()
        self.transport: asyncio.Transport | None = None
        self.adds_in_flight = 0
        self.reads_in_flight = 0
        self.reading = True
        self.peer_slow = False
        self.tasks: set[asyncio.Task] = set()
        self.read_only = False
        self.reads = [0, 0, 0, 0.0]  # plain reads of this pass: ok, failed, bytes, seconds in storage
        self.lacs: dict[int, int] = {}  # the LACs of the ledgers this pass read
        self.started = 0.0  # this pass's
        self.stats = server.bookie.stats
        self.paused_for: str | None = None  # why it stopped reading: "adds", "reads" or "peer"
        self.paused_at = 0.0
        self.admitted = not server.authorizer.enabled  # authenticated (AuthHandler.ServerSideHandler)
        self.secure = False  # TLS done
        self.principal: str | None = None  # the client certificate's role, with BookieAuthZFactory
        # with bkctlReadRequiresMasterKey, for a principal without an admin role: the ledgers whose master key
        # this connection showed, the only ones it may read (None: it may read any, as in BookKeeper)
        self.proven: set[int] | None = None
        self.refusing_logged = False

    # ---- connection ----
    def connection_made(self, transport) -> None:
        self.transport = transport
        transport.set_write_buffer_limits(high=WRITE_BUFFER_HIGH)
        self.server.connections.add(self)

    def connection_lost(self, exc) -> None:
        """An expected event, one INFO line when it cut something short (as BookKeeper's "Client died before
        request could be completed"); the requests still waiting are cancelled, quietly."""
        self.server.connections.discard(self)
        in_flight = self.adds_in_flight + len(self.tasks)
        if (exc is not None or in_flight) and not self.bookie.shutting_down:
            peer = self.transport.get_extra_info("peername") if self.transport else None
            reason = f" ({exc})" if exc is not None else ""
            log.info("client %s went away%s with %d requests in flight", _address(peer), reason, in_flight)
        for task in self.tasks:
            task.cancel()
        self.transport = None

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def pause_writing(self) -> None:
        self.peer_slow = True
        self._pace()

    def resume_writing(self) -> None:
        self.peer_slow = False
        self._pace()

    def _pace(self) -> None:
        """Read while every bound holds; stop at a bound, start again below half of it. The time a connection
        stopped at the adds' or reads' bound is BookKeeper's ADD_ENTRY_BLOCKED_WAIT / READ_ENTRY_BLOCKED_WAIT (its
        request thread blocks, with the channel's auto-read off, until the semaphore lets the request in)."""
        if self.transport is None:
            return
        if self.reading:
            reason = (
                "peer"
                if self.peer_slow
                else "adds"
                if self.adds_in_flight >= MAX_ADDS_IN_PROGRESS
                else "reads"
                if self.reads_in_flight >= MAX_READS_IN_PROGRESS
                else None
            )
            if reason:
                self.reading = False
                self.paused_for, self.paused_at = reason, time.perf_counter()
                self.transport.pause_reading()
        elif (
            not self.peer_slow
            and self.adds_in_flight <= MAX_ADDS_IN_PROGRESS // 2
            and self.reads_in_flight <= MAX_READS_IN_PROGRESS // 2
        ):
            self.reading = True
            if self.paused_for in ("adds", "reads"):
                blocked = "ADD_ENTRY_BLOCKED_WAIT" if self.paused_for == "adds" else "READ_ENTRY_BLOCKED_WAIT"
                self.stats.op(blocked).event(time.perf_counter() - self.paused_at)
            self.paused_for = None
            self.transport.resume_reading()

    def _write(self, frames: list[bytes]) -> None:
        if frames and self.transport is not None and not self.transport.is_closing():
            self.transport.write(b"".join(frames))

    def _drop(self, reason: Exception) -> None:
        """Framing or decoding failed: BookKeeper closes such a connection (the bytes that follow mean nothing)."""
        peer = self.transport.get_extra_info("peername") if self.transport else None
        log.warning("closing the connection from %s: %s", _address(peer), reason)
        self.close()

    # ---- requests ----
    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        buffer += data
        if not self.admitted:
            try:
                bodies = wire.cut_frames(buffer, self.server.max_frame_size)
            except MalformedFrame as exc:
                self._drop(exc)
                return
            self._unadmitted(bodies)
            return
        out: list[bytes] = []
        self.started = started = time.perf_counter()
        adds = _Adds(started)
        self.read_only = self.bookie.read_only  # once per pass, not per add
        self.reads = reads = [0, 0, 0, 0.0]
        self.lacs = {}
        max_size, offset = self.server.max_frame_size, 0
        try:
            while True:
                # plain adds and reads through bookie/codec/frames.py, the rest one frame at a time through wire.py
                # (everything, on a connection whose reads are checked against the keys it showed)
                scan = frames.scan_none if self.proven is not None else SCANS[self.decoder.v3]
                offset, items, stop = scan(buffer, offset, max_size)
                if items:
                    adds = self._items(items, out, adds)
                if stop == frames.STOP_END:
                    break
                if stop != frames.STOP_OTHER:
                    raise frames.framing_error(buffer, offset, stop, max_size)
                body, offset = frames.next_frame(buffer, offset)
                request = self.decoder.decode(body)
                handle = self._v3 if isinstance(request, pb.Request) else self._v2
                adds = handle(request, out, adds)
        except MalformedFrame as exc:
            self._submit(adds)
            self._write(out)
            self._drop(exc)
            return
        except _StartTls as start:
            self._submit(adds)
            self._write(out)
            self._start_tls(start.header, trailing=offset < len(buffer))
            return
        finally:
            del buffer[:offset]
        self._submit(adds)
        self._write(out)
        if reads[0] or reads[1]:  # answered together: one latency, their arrival to the write
            self.stats.reads_answered(*reads, time.perf_counter() - started)
        self._pace()

    def _items(self, items: list, out: list[bytes], adds: _Adds) -> _Adds:
        """The plain reads and runs of adds that bookie/codec/frames.py decoded (its items). A run of reads is timed
        as a whole (the storage time of the pass's reads), not read by read."""
        answer_read, reads = self._answer_read, self.reads
        reading = 0.0  # since when the current run of reads is read; 0: not in one
        for item in items:
            if item[0] == frames.READ:
                if not reading:
                    reading = time.perf_counter()
                answer_read(item[1], item[2], item[3], out)
                continue
            if reading:
                reads[3] += time.perf_counter() - reading
                reading = 0.0
            adds = self._add(adds, *item[1:])
        if reading:
            reads[3] += time.perf_counter() - reading
        return adds

    def _answer_read(self, txn_id: int | None, ledger_id: int, entry_id: int, out: list[bytes]) -> None:
        """Answer a plain read of this pass into ``out`` (v3 with ``txn_id``, else v2), counted in ``self.reads``
        but not timed: the caller times the run of reads it is in. The LAC is read once per ledger and pass: one
        read a moment earlier is still a LAC the bookie had (it only grows)."""
        reads, lacs = self.reads, self.lacs
        try:
            body = self.storage.read_entry(ledger_id, entry_id)
            lac = lacs.get(ledger_id)
            if lac is None:
                lac = lacs[ledger_id] = self.storage.lac(ledger_id)
        except Exception as exc:  # noqa: BLE001 - every failure answers the request; status_of logs the unexpected
            reads[1] += 1
            status, body, lac = status_of(exc), None, None
        else:
            reads[0] += 1
            reads[2] += len(body)
            status = pb.EOK
        if txn_id is not None:
            out.append(frames.read_response_v3(txn_id, status, ledger_id, entry_id, body, lac))
        else:
            out.append(self._v2_read(status, ledger_id, entry_id, body))

    def _timed_read(self, txn_id: int | None, ledger_id: int, entry_id: int, out: list[bytes]) -> None:
        """:meth:`_answer_read` of a read that :meth:`_items` did not decode, timed alone."""
        began = time.perf_counter()
        self._answer_read(txn_id, ledger_id, entry_id, out)
        self.reads[3] += time.perf_counter() - began

    def _v3(self, request: pb.Request, out: list[bytes], adds: _Adds) -> _Adds:
        header = request.header
        operation = header.operation
        if header.version != pb.VERSION_THREE and operation in (pb.ADD_ENTRY, pb.READ_ENTRY):
            response = pb.Response(header=_reply_header(header), status=pb.EBADVERSION)
            out.append(wire.encode_v3(response))
        elif operation == pb.ADD_ENTRY and request.HasField("addRequest"):
            add = request.addRequest
            key = (add.masterKey, add.HasField("flag") and add.flag == RECOVERY_ADD, add.writeFlags & 1)
            answer, record = (header.txnId, add.ledgerId, add.entryId), size_prefix(add.body) + add.body
            adds = self._add(adds, [answer], {add.ledgerId: key}, record, header.priority >= HIGH_PRIORITY)
        elif self.proven is not None and (refused := self._unproven(request)) is not None:
            out.append(refused)
        elif operation == pb.READ_ENTRY and request.HasField("readRequest"):
            read = request.readRequest
            if read.HasField("previousLAC") or (read.HasField("flag") and read.flag == FENCE):
                self._later(
                    self.handlers.read_waiting(read),
                    header,
                    "readResponse",
                    read_wait=True,
                    request=_read_request_stats(read),
                )
            else:
                self._timed_read(header.txnId, read.ledgerId, read.entryId, out)
        elif operation == pb.AUTH:
            # BookKeeper with its default (disabled) auth: every connection is authenticated at once, and an AUTH
            # request is answered with the disabled plugin's empty token, whatever plugin it names
            message = pb.AuthMessage(authPluginName=wire.AUTH_DISABLED_PLUGIN, payload=b"")
            out.append(wire.encode_v3(pb.Response(header=header, status=pb.EOK, authResponse=message)))
        elif operation == pb.START_TLS and request.HasField("startTLSRequest") and self.server.tls and not self.secure:
            raise _StartTls(header)
        elif operation == pb.START_TLS:
            # processStartTLSRequestV3 without TLS configured (and ours on a connection already secure: a second
            # handshake inside the first is no use, and Java clients never ask it)
            out.append(wire.encode_v3(pb.Response(header=_reply_header(header), status=pb.EBADREQ)))
        elif (call := self._v3_operation(request)) is not None:
            self._later(*call)
        else:  # an operation BookKeeper does not serve (RANGE_*, BATCH_READ_ENTRY over v3) or without its message
            out.append(wire.encode_v3(pb.Response(header=header, status=pb.EBADREQ)))
        return adds

    def _v3_operation(self, request: pb.Request):
        """``(coroutine, header, response field)`` for the operations that may wait, or None."""
        header, handlers = request.header, self.handlers
        for operation, field, method, answer in (
            (pb.WRITE_LAC, "writeLacRequest", handlers.write_lac, "writeLacResponse"),
            (pb.READ_LAC, "readLacRequest", handlers.read_lac, "readLacResponse"),
            (pb.FORCE_LEDGER, "forceLedgerRequest", handlers.force_ledger, "forceLedgerResponse"),
            (pb.GET_BOOKIE_INFO, "getBookieInfoRequest", handlers.bookie_info, "getBookieInfoResponse"),
            (
                pb.GET_LIST_OF_ENTRIES_OF_LEDGER,
                "getListOfEntriesOfLedgerRequest",
                handlers.entries_of_ledger,
                "getListOfEntriesOfLedgerResponse",
            ),
        ):
            if header.operation == operation and request.HasField(field):
                return method(getattr(request, field)), header, answer, False, REQUEST_STATS[operation]
        return None

    @staticmethod
    def _v3_answer(header: pb.BKPacketHeader, field: str, response) -> bytes:
        # the envelope's status repeats the operation's, as a Java bookie's does
        message = pb.Response(header=_reply_header(header), status=response.status)
        getattr(message, field).CopyFrom(response)
        return wire.encode_v3(message)

    def _v2(self, request, out: list[bytes], adds: _Adds) -> _Adds:
        if isinstance(request, wire.AddRequestV2):
            key = (request.master_key, bool(request.flags & wire.FLAG_RECOVERY_ADD), 0)
            high = bool(request.flags & wire.FLAG_HIGH_PRIORITY)
            answer, record = (None, request.ledger_id, request.entry_id), size_prefix(request.body) + request.body
            return self._add(adds, [answer], {request.ledger_id: key}, record, high)
        if isinstance(request, wire.ReadRequestV2):
            if self.proven is not None and not self._may_read(request.ledger_id, request.master_key):
                out.append(wire.V2_RESPONSE.pack(24, V2_READ_HEADER, V2_EUA, request.ledger_id, request.entry_id))
            elif request.flags & wire.FLAG_DO_FENCING and request.master_key is not None:
                read = pb.ReadRequest(
                    ledgerId=request.ledger_id, entryId=request.entry_id, flag=FENCE, masterKey=request.master_key
                )
                self._later(
                    self.handlers.read_waiting(read), None, "v2", read_wait=True, request="READ_ENTRY_FENCE_REQUEST"
                )
            else:
                self._timed_read(None, request.ledger_id, request.entry_id, out)
        elif isinstance(request, wire.BatchReadRequestV2):
            if self.proven is not None and not self._may_read(request.ledger_id, request.master_key):
                refused = wire.BatchReadResponseV2(V2_EUA, request.ledger_id, request.entry_id, request.request_id)
                out.append(wire.encode_response_v2(refused))
            elif request.flags & wire.FLAG_DO_FENCING and request.master_key is not None:
                self._later(self._fenced_batch_read(request), None, "raw", read_wait=True)
            else:
                out.append(self._batch_read(request))
        elif isinstance(request, wire.AuthRequestV2):
            out.append(wire.encode_response_v2(wire.AuthResponseV2(wire.AUTH_DISABLED_PLUGIN, b"")))
        return adds

    @staticmethod
    def _v2_read(status: int, ledger_id: int, entry_id: int, body: bytes | None) -> bytes:
        """A plain v2 read's answer."""
        body = body or b""
        return wire.V2_RESPONSE.pack(24 + len(body), V2_READ_HEADER, wire.v2_status(status), ledger_id, entry_id) + body

    @staticmethod
    def _v2_read_answer(response: pb.ReadResponse) -> bytes:
        body = response.body if response.status == pb.EOK else b""
        head = wire.V2_RESPONSE.pack(
            24 + len(body), V2_READ_HEADER, wire.v2_status(response.status), response.ledgerId, response.entryId
        )
        return head + body

    def _batch_read(self, request: wire.BatchReadRequestV2) -> bytes:
        """BATCH_READ_ENTRY (BatchedReadEntryProcessor): consecutive entries from the first, until maxCount, or
        until the response would pass maxSize (never less than the first entry); an error on the first entry is the
        answer's rc, a later one ends the batch."""
        max_count = request.max_count if request.max_count > 0 else 1 << 31
        max_size = min(request.max_size, self.server.max_frame_size)
        entries: list[bytes] = []
        size, rc = BATCH_READ_OVERHEAD, wire.v2_status(pb.EOK)
        began, failed = time.perf_counter(), 0
        for entry_id in range(request.entry_id, request.entry_id + max_count):
            try:
                body = self.storage.read_entry(request.ledger_id, entry_id)
            except Exception as exc:  # noqa: BLE001 - every failure answers the request; status_of logs the unexpected
                if not entries:
                    rc = wire.v2_status(status_of(exc))
                failed = 1
                break
            size += len(body) + 4
            if entries and size > max_size:
                break
            entries.append(body)
        response = wire.BatchReadResponseV2(rc, request.ledger_id, request.entry_id, request.request_id, tuple(entries))
        now = time.perf_counter()
        ok = bool(entries)  # one request, however many entries it read
        self.stats.reads_answered(
            len(entries),
            failed,
            sum(map(len, entries)),
            now - began,
            now - self.started,
            requests=(int(ok), int(not ok)),
        )
        return wire.encode_response_v2(response)

    async def _fenced_batch_read(self, request: wire.BatchReadRequestV2) -> bytes:
        read = pb.ReadRequest(
            ledgerId=request.ledger_id, entryId=request.entry_id, flag=FENCE, masterKey=request.master_key
        )
        fenced = await self.handlers.read_waiting(read)
        if fenced.status not in (pb.EOK, pb.ENOENTRY):
            response = wire.BatchReadResponseV2(
                wire.v2_status(fenced.status), request.ledger_id, request.entry_id, request.request_id
            )
            return wire.encode_response_v2(response)
        return self._batch_read(request)

    # ---- adds ----
    def _add(self, adds: _Adds, answers: list[tuple], keys: dict[int, tuple], records: bytes, high_priority: bool):
        """Queue adds for this pass's batch: a run of them (frames.ADDS), as one add batch. ``answers``:
        ``(txnId or None for v2, ledgerId, entryId)`` of each; ``keys``: ``(masterKey, recovery, deferred sync)`` of
        each ledger; ``records``: the storage record of each entry."""
        if self.read_only and not (high_priority and not self.bookie.read_only_by_disk):
            # BookKeeper lets high-priority (recovery) adds through a read-only bookie whose disks have room
            self._write([frames.add_responses(answers, [pb.EREADONLY] * len(answers))])
            self.stats.add_refused(time.perf_counter() - adds.started, len(answers))
            return adds
        known = adds.keys
        for ledger_id, key in keys.items():
            if known.get(ledger_id, key) != key:
                self._submit(adds)  # one key per ledger and batch: these adds start a new batch
                adds = _Adds(adds.started)
                break
        adds.keys.update(keys)
        adds.records.append(records)
        adds.answers += answers
        return adds

    def _submit(self, adds: _Adds) -> None:
        if not adds.answers:
            return
        self.adds_in_flight += len(adds.answers)
        adds.submitted = time.perf_counter()
        records = b"".join(adds.records)
        keys = {
            ledger_id: AddKey(key, recovery=recovery, deferred_sync=deferred)
            for ledger_id, (key, recovery, deferred) in adds.keys.items()
        }
        future, refused = self.handlers.store_adds(keys, records)
        future.add_done_callback(lambda f: self._added(adds, f.result(), refused, len(records)))

    def _added(self, adds: _Adds, error, refused, size: int) -> None:
        self.adds_in_flight -= len(adds.answers)
        durable = time.perf_counter()
        statuses, failed = self.handlers.add_statuses(adds.answers, error, refused)
        if self.proven is not None:  # an add the bookie took showed the ledger's master key
            self.proven.update(a[1] for a, status in zip(adds.answers, statuses, strict=True) if status == pb.EOK)
        self._write([frames.add_responses(adds.answers, statuses)])
        self.stats.adds_answered(
            len(statuses) - failed, failed, durable - adds.submitted, time.perf_counter() - adds.started
        )
        self._pace()

    # ---- operations that wait ----
    def _later(self, work, header, field: str, read_wait: bool = False, request: str | None = None) -> None:
        """Run ``work`` (a coroutine of an operation response) as a task and write its answer when it is done:
        as a v3 ``field`` of a Response with ``header``; ``"v2"``: a v2 read response; ``"raw"``: frame bytes.
        ``request``: the RequestStats of the operation, from now to the answer written."""
        if read_wait:
            self.reads_in_flight += 1
        arrived = self.started
        task = asyncio.ensure_future(work)
        self.tasks.add(task)

        def done(task: asyncio.Task) -> None:
            self.tasks.discard(task)
            if read_wait:
                self.reads_in_flight -= 1
            if task.cancelled():
                return
            if (exc := task.exception()) is not None:
                log.error("request failed: %r", exc, exc_info=exc)
                self.close()
                return
            result = task.result()
            if field == "raw":
                self._write([result])
            elif field == "v2":
                self._write([self._v2_read_answer(result)])
            else:
                self._write([self._v3_answer(header, field, result)])
            if request is not None:
                self.stats.op(request).event(time.perf_counter() - arrived, result.status == pb.EOK)
            self._pace()

        task.add_done_callback(done)

    # ---- authentication and TLS (bookie/server/auth.py) ----
    def _peer(self) -> str:
        return _address(self.transport.get_extra_info("peername") if self.transport else None)

    def _unadmitted(self, frames: list) -> None:
        """AuthHandler.ServerSideHandler before authentication: START_TLS goes through; AUTH naming another
        plugin closes the connection (BookieAuthZFactory never answers its own); v3 requests and v2 adds and
        reads are answered EUA; anything else closes the connection."""
        out: list[bytes] = []
        plugin = self.server.authorizer.plugin
        remaining = iter(frames)
        for body in remaining:
            try:
                request = self.decoder.decode(body)
            except MalformedFrame as exc:
                self._write(out)
                self._drop(exc)
                return
            if isinstance(request, pb.Request):
                header = request.header
                if header.operation == pb.START_TLS and request.HasField("startTLSRequest"):
                    self._write(out)
                    if self.server.tls is None or self.secure:
                        self._write([wire.encode_v3(pb.Response(header=_reply_header(header), status=pb.EBADREQ))])
                        continue
                    self._start_tls(header, trailing=next(remaining, None) is not None or bool(self.buffer))
                    return
                if header.operation == pb.AUTH and request.HasField("authRequest"):
                    if request.authRequest.authPluginName != plugin:
                        log.error(
                            "Received message from incompatible auth plugin. Local = %s, Remote = %s, Channel = %s",
                            plugin,
                            request.authRequest.authPluginName,
                            self._peer(),
                        )
                        self._write(out)
                        self.close()
                        return
                    continue
                out.append(wire.encode_v3(pb.Response(header=header, status=pb.EUA)))
            elif isinstance(request, wire.AddRequestV2):
                out.append(wire.V2_RESPONSE.pack(24, V2_ADD_HEADER, V2_EUA, request.ledger_id, request.entry_id))
            elif isinstance(request, wire.ReadRequestV2):
                out.append(wire.V2_RESPONSE.pack(24, V2_READ_HEADER, V2_EUA, request.ledger_id, request.entry_id))
            elif isinstance(request, wire.AuthRequestV2) and request.plugin_name == plugin:
                continue
            else:
                self._write(out)
                self.close()
                return
        if out and not self.refusing_logged:
            self.refusing_logged = True
            log.warning(
                "refusing the requests of %s (EUA): not authenticated; this bookie serves TLS clients whose "
                "certificate has one of the roles %s",
                self._peer(),
                ", ".join(self.server.authorizer.authorized_roles),
            )
        self._write(out)

    def _start_tls(self, header: pb.BKPacketHeader, trailing: bool) -> None:
        """Answer START_TLS in the clear, then hand the connection to the TLS handshake."""
        if trailing:
            self._drop(MalformedFrame("bytes sent after START_TLS before its answer"))
            return
        if self.adds_in_flight or self.tasks:
            log.warning("START_TLS from %s with requests in flight: refused (EBADREQ)", self._peer())
            self._write([wire.encode_v3(pb.Response(header=_reply_header(header), status=pb.EBADREQ))])
            return
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        answer = pb.Response(header=_reply_header(header), status=pb.EOK, startTLSResponse=pb.StartTLSResponse())
        transport.write(wire.encode_v3(answer))  # written before the handshake: start_tls keeps the order
        self.transport = None  # nothing is written in the clear from now on
        self.tasks.add(asyncio.ensure_future(self._handshake(transport, header)))

    async def _handshake(self, transport, header: pb.BKPacketHeader) -> None:
        assert self.server.tls is not None
        peer = _address(transport.get_extra_info("peername"))
        try:
            secure = await asyncio.get_running_loop().start_tls(
                transport,
                self,
                self.server.tls.context(),
                server_side=True,
                ssl_handshake_timeout=HANDSHAKE_TIMEOUT,
            )
        except (ssl.SSLError, OSError, TimeoutError) as exc:
            log.warning("TLS handshake with %s failed: %s", peer, exc)
            transport.close()
            self.connection_lost(None)
            return
        finally:
            self.tasks.discard(asyncio.current_task())  # this task
        if secure is None:  # the connection went away during the handshake
            return
        self.transport, self.secure = secure, True
        secure.set_write_buffer_limits(high=WRITE_BUFFER_HIGH)
        authorizer = self.server.authorizer
        if authorizer.enabled:
            certificate = secure.get_extra_info("peercert")
            if not certificate:
                log.error("AuthZ failed: Certificate missing; host: %s", peer)
            else:
                self.principal = authorizer.principal(ou_of_subject(certificate.get("subject", ())), peer)
            if self.principal is None:
                # processStartTLSRequestV3: "TLS Handshake failed: Could not authenticate."; the connection stays,
                # and each of its requests gets EUA
                self._write([wire.encode_v3(pb.Response(header=header, status=pb.EIO))])
                return
            self.admitted = True
            if self.server.read_requires_key and not authorizer.is_admin(self.principal):
                self.proven = set()
        cipher = secure.get_extra_info("cipher")
        log.info(
            "connection from %s protected by %s%s",
            peer,
            cipher[0] if cipher else "TLS",
            f", authenticated as {self.principal}" if self.principal else "",
        )

    def _may_read(self, ledger_id: int, master_key: bytes | None) -> bool:
        """Whether this connection may read ``ledger_id`` (called only when ``proven`` is a set): it showed the
        ledger's master key before, or shows it now."""
        proven = self.proven
        if proven is None or ledger_id in proven:
            return True
        if master_key is None:
            return False
        known = self.storage.master_key(ledger_id)
        if known is not None and hmac.compare_digest(known, master_key):
            proven.add(ledger_id)
            return True
        return False

    def _unproven(self, request: pb.Request) -> bytes | None:
        """The EUA answer of a v3 request that reads a ledger this connection has not shown the key of, or None."""
        operation = request.header.operation
        if operation == pb.READ_ENTRY and request.HasField("readRequest"):
            read = request.readRequest
            key = read.masterKey if read.HasField("masterKey") else None
            if not self._may_read(read.ledgerId, key):
                return wire.read_response_v3(request.header.txnId, pb.EUA, read.ledgerId, read.entryId, None, None)
        elif operation == pb.WRITE_LAC and request.HasField("writeLacRequest"):
            self._may_read(request.writeLacRequest.ledgerId, request.writeLacRequest.masterKey)
        else:
            for op, field, answer in (
                (pb.READ_LAC, "readLacRequest", "readLacResponse"),
                (
                    pb.GET_LIST_OF_ENTRIES_OF_LEDGER,
                    "getListOfEntriesOfLedgerRequest",
                    "getListOfEntriesOfLedgerResponse",
                ),
            ):
                if operation == op and request.HasField(field):
                    ledger_id = getattr(request, field).ledgerId
                    if not self._may_read(ledger_id, None):
                        message = pb.Response(header=_reply_header(request.header), status=pb.EUA)
                        getattr(message, answer).status = pb.EUA
                        getattr(message, answer).ledgerId = ledger_id
                        return wire.encode_v3(message)
        return None

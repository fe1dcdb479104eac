"""The request processor of a connection (BookKeeper's ``BookieRequestProcessor``): v3 and v2 requests side by
side, dispatched by the operation table (bookie/server/wire/operations.py). Adds join the pass's batch
(bookie/server/wire/adds.py); plain reads are answered in the pass through the one read path
(bookie/server/wire/reads.py); what waits runs as a task on the request handlers
(:class:`bookie.server.handlers.BookieHandlers`) and answers when done: a BookKeeper client matches answers by txnId
(v3) or by operation and ids (v2), so they need not come in order."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.codec import frames, wire
from bookie.codec.records import size_prefix
from bookie.server.wire.adds import AddBatch, Adds
from bookie.server.wire.admission import Admission, StartTls, eua_v2
from bookie.server.wire.operations import OPERATIONS, read_request_stats, waits
from bookie.server.wire.reads import ReadCounts, batch_read, read_entry

RECOVERY_ADD = pb.AddRequest.RECOVERY_ADD
FENCE = pb.ReadRequest.FENCE_LEDGER


def v3_answer(header: pb.BKPacketHeader, field: str, response: Any) -> bytes:
    return wire.response_v3(header, response.status, field, response)


def v2_read_answer(response: pb.ReadResponse) -> bytes:
    """The v2 answer of a read a handler answered (a fence read)."""
    body = response.body if response.status == pb.EOK else b""
    return wire.read_response_v2(wire.v2_status(response.status), response.ledgerId, response.entryId, body)


def encoded(frame: bytes) -> bytes:
    """The answer of a task whose result is already its frame (a fenced batch read)."""
    return frame


class Connection(Protocol):
    """What the request processor needs of its connection (bookie/server/wire/connection.py)."""

    server: Any  # WireServer: max_frame_size, tls
    handlers: Any  # BookieHandlers
    storage: Any
    stats: Any
    admission: Admission
    adds: Adds

    def later(
        self,
        work: Coroutine[Any, Any, Any],
        answer: Callable[[Any], bytes],
        read_wait: bool = False,
        stats: str | None = None,
    ) -> None: ...


class RequestProcessor:
    """The requests of one connection, one pass (a ``data_received``) at a time: :meth:`begin` starts a pass."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.handlers = connection.handlers
        self.storage = connection.storage
        self.stats = connection.stats
        self.admission = connection.admission
        self.adds = connection.adds
        self.max_frame_size = connection.server.max_frame_size
        self.reads = ReadCounts()  # this pass's plain reads
        self.lacs: dict[int, int] = {}  # the LACs of the ledgers this pass read
        self.started = 0.0  # this pass's

    def begin(self, started: float) -> None:
        self.started = started
        self.reads = ReadCounts()
        self.lacs = {}

    # ---- what the C scan decoded ----
    def items(self, items: list[Any], out: list[bytes], batch: AddBatch) -> AddBatch:
        """The plain reads and runs of adds that bookie/codec/frames.py decoded (its items). A run of reads is timed
        as a whole (the storage time of the pass's reads), not read by read."""
        answer_read, reads = self.answer_read, self.reads
        reading = 0.0  # since when the current run of reads is read; 0: not in one
        for item in items:
            if item[0] == frames.READ:
                if not reading:
                    reading = time.perf_counter()
                answer_read(item[1], item[2], item[3], out)
                continue
            if reading:
                reads.seconds += time.perf_counter() - reading
                reading = 0.0
            batch = self.adds.queue(batch, *item[1:])
        if reading:
            reads.seconds += time.perf_counter() - reading
        return batch

    def answer_read(self, txn_id: int | None, ledger_id: int, entry_id: int, out: list[bytes]) -> None:
        """Answer a plain read of this pass into ``out`` (v3 with ``txn_id``, else v2), counted in ``self.reads``
        but not timed: the caller times the run of reads it is in."""
        status, body, lac = read_entry(self.storage, ledger_id, entry_id, self.lacs)
        reads = self.reads
        if body is None:
            reads.failed += 1
        else:
            reads.ok += 1
            reads.size += len(body)
        if txn_id is not None:
            out.append(frames.read_response_v3(txn_id, status, ledger_id, entry_id, body, lac))
        else:
            out.append(wire.read_response_v2(wire.v2_status(status), ledger_id, entry_id, body or b""))

    def timed_read(self, txn_id: int | None, ledger_id: int, entry_id: int, out: list[bytes]) -> None:
        """:meth:`answer_read` of a read that :meth:`items` did not decode, timed alone."""
        began = time.perf_counter()
        self.answer_read(txn_id, ledger_id, entry_id, out)
        self.reads.seconds += time.perf_counter() - began

    # ---- v3 ----
    def v3(self, request: pb.Request, out: list[bytes], batch: AddBatch) -> AddBatch:
        header = request.header
        code = header.operation
        if header.version != pb.VERSION_THREE and code in (pb.ADD_ENTRY, pb.READ_ENTRY):
            out.append(wire.response_v3(header, pb.EBADVERSION))
            return batch
        operation = OPERATIONS.get(code)
        if operation is None or not request.HasField(operation.request):
            if code == pb.AUTH:  # answered whatever it carries
                out.append(self._auth_answer(header))
            elif code == pb.START_TLS:
                out.append(wire.response_v3(header, pb.EBADREQ))
            else:  # an operation BookKeeper does not serve (RANGE_*, BATCH_READ_ENTRY over v3) or without its message
                out.append(wire.encode_v3(pb.Response(header=header, status=pb.EBADREQ)))
            return batch
        if code == pb.ADD_ENTRY:
            add = request.addRequest
            key = (add.masterKey, add.HasField("flag") and add.flag == RECOVERY_ADD, add.writeFlags & 1)
            answer, record = (header.txnId, add.ledgerId, add.entryId), size_prefix(add.body) + add.body
            high = header.priority >= wire.HIGH_PRIORITY
            batch = self.adds.queue(batch, [answer], {add.ledgerId: key}, record, high)
        elif self.admission.proven is not None and (refused := self.admission.refusal(request)) is not None:
            out.append(refused)
        elif code == pb.READ_ENTRY:
            read = request.readRequest
            if waits(read):
                answer_with = functools.partial(v3_answer, header, operation.response)
                self.connection.later(
                    self.handlers.read_waiting(read), answer_with, read_wait=True, stats=read_request_stats(read)
                )
            else:
                self.timed_read(header.txnId, read.ledgerId, read.entryId, out)
        elif code == pb.AUTH:
            out.append(self._auth_answer(header))
        elif code == pb.START_TLS:
            if self.connection.server.tls is not None and not self.admission.secure:
                raise StartTls(header)
            # processStartTLSRequestV3 without TLS configured (and ours on a connection already secure: a second
            # handshake inside the first is no use, and Java clients never ask it)
            out.append(wire.response_v3(header, pb.EBADREQ))
        else:
            assert operation.handler is not None
            work = getattr(self.handlers, operation.handler)(getattr(request, operation.request))
            answer_with = functools.partial(v3_answer, header, operation.response)
            self.connection.later(work, answer_with, stats=operation.stats)
        return batch

    @staticmethod
    def _auth_answer(header: pb.BKPacketHeader) -> bytes:
        # BookKeeper with its default (disabled) auth: every connection is authenticated at once, and an AUTH
        # request is answered with the disabled plugin's empty token, whatever plugin it names
        message = pb.AuthMessage(authPluginName=wire.AUTH_DISABLED_PLUGIN, payload=b"")
        return wire.encode_v3(pb.Response(header=header, status=pb.EOK, authResponse=message))

    # ---- v2 ----
    def v2(self, request: wire.RequestV2, out: list[bytes], batch: AddBatch) -> AddBatch:
        admission = self.admission
        if isinstance(request, wire.AddRequestV2):
            key = (request.master_key, bool(request.flags & wire.FLAG_RECOVERY_ADD), 0)
            high = bool(request.flags & wire.FLAG_HIGH_PRIORITY)
            answer, record = (None, request.ledger_id, request.entry_id), size_prefix(request.body) + request.body
            return self.adds.queue(batch, [answer], {request.ledger_id: key}, record, high)
        if isinstance(request, wire.ReadRequestV2):
            if admission.proven is not None and not admission.may_read(request.ledger_id, request.master_key):
                out.append(eua_v2(request))
            elif request.flags & wire.FLAG_DO_FENCING and request.master_key is not None:
                read = pb.ReadRequest(
                    ledgerId=request.ledger_id, entryId=request.entry_id, flag=FENCE, masterKey=request.master_key
                )
                work = self.handlers.read_waiting(read)
                self.connection.later(work, v2_read_answer, read_wait=True, stats="READ_ENTRY_FENCE_REQUEST")
            else:
                self.timed_read(None, request.ledger_id, request.entry_id, out)
        elif isinstance(request, wire.BatchReadRequestV2):
            if admission.proven is not None and not admission.may_read(request.ledger_id, request.master_key):
                out.append(eua_v2(request))
            elif request.flags & wire.FLAG_DO_FENCING and request.master_key is not None:
                self.connection.later(self._fenced_batch_read(request), encoded, read_wait=True)
            else:
                out.append(self._batch_read(request))
        elif isinstance(request, wire.AuthRequestV2):
            out.append(wire.encode_response_v2(wire.AuthResponseV2(wire.AUTH_DISABLED_PLUGIN, b"")))
        return batch

    def _batch_read(self, request: wire.BatchReadRequestV2) -> bytes:
        """A BATCH_READ_ENTRY's answer, its entries counted as reads of one request."""
        began = time.perf_counter()
        rc, entries, failed = batch_read(self.storage, request, self.max_frame_size)
        now = time.perf_counter()
        ok = bool(entries)
        self.stats.reads_answered(
            len(entries),
            int(failed),
            sum(map(len, entries)),
            now - began,
            now - self.started,
            requests=(int(ok), int(not ok)),
        )
        response = wire.BatchReadResponseV2(rc, request.ledger_id, request.entry_id, request.request_id, tuple(entries))
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

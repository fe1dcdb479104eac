"""The Bookie gRPC service: thin translation between protocol messages and ledger storage (spec/wire-protocol.md).

Adds arrive in batches on a long-lived stream; each batch is stored, journaled, and answered once durable, while
the stream keeps reading the next batches (answers go out in order). Reads, fence reads and LAC long polls are
unary; range reads stream chunks of entries.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import shutil
import struct
import time

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie._proto import bookkeeper_protocol_pb2_grpc as pb_grpc
from bookie.codec.availability import AvailabilityOfEntries
from bookie.codec.write_set import range_read_entries
from bookie.errors import BadRequest, BKError, BookieReadOnly, CorruptData, NoSuchEntry, Unauthorized
from bookie.storage.ledger_storage import AddKey

log = logging.getLogger(__name__)
SIZE = struct.Struct(">i")
GONE_QUIET = 5.0  # seconds


def _flag(message, value: int) -> bool:
    """Whether an optional enum ``flag`` is set to ``value`` (proto2: an unset enum reads as its first value)."""
    return message.HasField("flag") and message.flag == value


def cancellation_logged(method):
    """A gRPC handler whose cancellation (its client went away, or gave up waiting) is one INFO line, not a
    traceback; the cancellation goes on. (The wire server's handlers run without a context: their connection says
    it, bookie/server/protocol.py.)"""
    if inspect.isasyncgenfunction(method):
        @functools.wraps(method)
        async def stream(self, request, context):
            try:
                async for answer in method(self, request, context):
                    yield answer
            except asyncio.CancelledError:
                self.client_gone(context, method.__name__)
                raise
        return stream

    @functools.wraps(method)
    async def unary(self, request, context):
        try:
            return await method(self, request, context)
        except asyncio.CancelledError:
            self.client_gone(context, method.__name__)
            raise
    return unary


class ClientGoneFilter(logging.Filter):
    """For gRPC's own logger: an answer that could not be sent because the client had just gone (grpc checks
    ``client_closed`` before the transport noticed, and logs ExecuteBatchError with a traceback) is one INFO
    line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR and str(record.msg).startswith("Unexpected [ExecuteBatchError]"):
            method = record.getMessage().rpartition("[")[2].rstrip("]")
            record.msg, record.args, record.exc_info, record.exc_text = (
                "client went away while its %s answer was being sent", (method,), None, None)
            record.levelno, record.levelname, record.name = logging.INFO, "INFO", __name__
        return True


def status_of(exc: BaseException) -> int:
    """The BookKeeper status code for an error (EIO for anything without one)."""
    if isinstance(exc, CorruptData):
        log.error("corruption: %s", exc)
    elif not isinstance(exc, BKError):
        log.exception("unexpected error", exc_info=exc)
    return getattr(exc, "status", None) or pb.EIO


class BookieServicer(pb_grpc.BookieServicer):
    def __init__(self, bookie):
        self.bookie = bookie
        self.storage = bookie.storage
        self.stats = bookie.stats
        self._lac_waiters: dict[int, list[asyncio.Future]] = {}
        self.storage.on_lac_advanced = self._lac_advanced
        stats = self.stats  # metric children looked up once, not per batch
        self._adds_ok, self._adds_failed = stats.adds.labels("ok"), stats.adds.labels("failed")
        self._bytes_written, self._batch_latency = stats.bytes_written, stats.add_batch_latency
        self._reads_ok, self._reads_failed = stats.reads.labels("ok"), stats.reads.labels("failed")
        self._read_latency = stats.read_latency
        self._gone: set[str] = set()  # clients whose going away was logged in the last GONE_QUIET seconds

    # ---- helpers ----
    @staticmethod
    def _durable():
        """A future and the journal callback that resolves it from the journal thread."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()

        def resolve(error):
            if not future.done():
                future.set_result(error)

        return future, lambda error: loop.call_soon_threadsafe(resolve, error)

    def client_gone(self, context, what: str) -> None:
        """One line per client that went away, however many of its calls were cancelled with it (none when the
        bookie's own shutdown cancelled them)."""
        if context is None or self.bookie.shutting_down:
            return
        peer = context.peer()
        if peer not in self._gone:
            self._gone.add(peer)
            asyncio.get_running_loop().call_later(GONE_QUIET, self._gone.discard, peer)
            log.info("client %s went away: its %s call and any others were cancelled", peer, what)

    def _check_writable(self) -> None:
        if self.bookie.read_only:
            raise BookieReadOnly("bookie is read-only")

    def _lac_advanced(self, ledger_id: int) -> None:
        for waiter in self._lac_waiters.pop(ledger_id, ()):
            if not waiter.done():
                waiter.set_result(None)

    # ---- adds ----
    @cancellation_logged
    async def AddEntry(self, request, context):
        record = SIZE.pack(len(request.body)) + request.body
        batch = pb.AddBatch(batchId=0, entries=record)
        key = batch.keys.add(ledgerId=request.ledgerId, masterKey=request.masterKey, writeFlags=request.writeFlags)
        if request.HasField("flag"):
            key.flag = request.flag
        response = await self._add_batch(batch)
        if response.failed:
            return response.failed[0]
        return pb.AddResponse(status=pb.EOK, ledgerId=request.ledgerId, entryId=request.entryId)

    @cancellation_logged
    async def AddEntries(self, request_iterator, context):
        # Each batch is stored as it arrives (no task per batch); answers go out in order once durable.
        pending: asyncio.Queue = asyncio.Queue()

        async def receive():
            try:
                async for batch in request_iterator:
                    pending.put_nowait(self._submit(batch))
            except Exception:  # the request stream broke: its client went away (kept from "never retrieved")
                self.client_gone(context, "AddEntries")
            finally:
                pending.put_nowait(None)

        receiver = asyncio.ensure_future(receive())
        try:
            while (submitted := await pending.get()) is not None:
                yield await self._answer(*submitted)
        finally:
            receiver.cancel()

    def _submit(self, batch):
        """Store and journal a batch now; return what ``_answer`` needs once the journal says it is durable."""
        started = time.perf_counter()
        response = pb.AddBatchResponse(batchId=batch.batchId, count=0)
        keys = {
            k.ledgerId: AddKey(k.masterKey, recovery=_flag(k, pb.AddRequest.RECOVERY_ADD), deferred_sync=k.writeFlags & 1)
            for k in batch.keys
        }
        records = batch.entries
        try:
            self._check_writable()
        except BookieReadOnly as exc:
            future = asyncio.get_running_loop().create_future()
            future.set_result(exc)
            return response, records, future, 0, [], started
        return (response, records, *self.store_adds(keys, records), started)

    def store_adds(self, keys: dict[int, AddKey], records: bytes):
        """Store and journal add records (``int32 size | framed entry`` each) now: ``(future, added, refused)``, the
        future resolving to None once they are durable, or to the error that failed them all."""
        try:
            future, callback = self._durable()
            added, refused = self.storage.add_batch(keys, records, callback)
        except Exception as exc:  # the whole batch failed
            future = asyncio.get_running_loop().create_future()
            future.set_result(exc)
            added, refused = 0, []
        return future, added, refused

    def add_statuses(self, answers: list[tuple], error, refused, started: float, size: int) -> list[int]:
        """The status of each add of a batch (``answers``: ``(_, ledgerId, entryId)`` each, ``size`` bytes of
        records), counted in the metrics."""
        if error is not None:
            status = status_of(error)
            self._adds_failed.inc(len(answers))
            return [status] * len(answers)
        failed = {(ledger_id, entry_id): status_of(exc) for ledger_id, entry_id, exc in refused}
        self._adds_ok.inc(len(answers) - len(failed))
        if failed:
            self._adds_failed.inc(len(failed))
        self._bytes_written.inc(size)
        self._batch_latency.observe(time.perf_counter() - started)
        return [failed.get((ledger_id, entry_id), pb.EOK) for _, ledger_id, entry_id in answers] if failed \
            else [pb.EOK] * len(answers)

    async def _answer(self, response, records, future, added, refused, started) -> pb.AddBatchResponse:
        error = await future
        if error is not None:
            return self._fail_all(response, records, status_of(error))
        response.count = added + len(refused)
        for ledger_id, entry_id, exc in refused:
            response.failed.add(status=status_of(exc), ledgerId=ledger_id, entryId=entry_id)
        self._adds_ok.inc(added)
        if refused:
            self._adds_failed.inc(len(refused))
        self._bytes_written.inc(len(records))
        self._batch_latency.observe(time.perf_counter() - started)
        return response

    async def _add_batch(self, batch) -> pb.AddBatchResponse:
        return await self._answer(*self._submit(batch))

    def _fail_all(self, response, records: bytes, status: int) -> pb.AddBatchResponse:
        offset = 0
        while offset + 20 <= len(records):
            size, ledger_id, entry_id = struct.unpack_from(">iqq", records, offset)
            response.failed.add(status=status, ledgerId=ledger_id, entryId=entry_id)
            offset += 4 + max(size, 16)
        response.count = len(response.failed)
        self._adds_failed.inc(response.count)
        return response

    # ---- reads ----
    @cancellation_logged
    async def ReadEntry(self, request, context):
        started = time.perf_counter()
        response = pb.ReadResponse(status=pb.EOK, ledgerId=request.ledgerId, entryId=request.entryId)
        try:
            if _flag(request, pb.ReadRequest.FENCE_LEDGER):
                if not request.HasField("masterKey"):
                    raise Unauthorized("a fence read needs the master key")
                future, callback = self._durable()
                self.storage.fence(request.ledgerId, request.masterKey, callback)
                if (error := await future) is not None:
                    raise error
            if request.HasField("previousLAC"):
                return await self._long_poll(request, response)
        except Exception as exc:
            response.status = status_of(exc)
            self.stats.reads.labels("failed").inc()
            return response
        return self.read_now(request.ledgerId, request.entryId, response, started)

    def read_now(self, ledger_id: int, entry_id: int, response: pb.ReadResponse, started: float | None = None):
        """A plain read into ``response`` (status, body, maxLAC)."""
        status, body, lac = self.read_plain(ledger_id, entry_id, started)
        response.status = status
        if body is not None:
            response.body, response.maxLAC = body, lac
        return response

    def count_reads(self, ok: int, failed: int, seconds: float) -> None:
        """Plain reads answered together (one pass over a connection's frames): counted, and the pass's time
        observed once as their latency."""
        if ok:
            self._reads_ok.inc(ok)
        if failed:
            self._reads_failed.inc(failed)
        self._read_latency.observe(seconds)

    def read_plain(self, ledger_id: int, entry_id: int, started: float | None = None):
        """A plain read, counted in the metrics: ``(status, framed entry, LAC)``, entry and LAC None on failure."""
        started = started or time.perf_counter()
        try:
            body = self.storage.read_entry(ledger_id, entry_id)
            lac = self.storage.lac(ledger_id)
            self._reads_ok.inc()
            result = pb.EOK, body, lac
        except Exception as exc:
            self._reads_failed.inc()
            result = status_of(exc), None, None
        self._read_latency.observe(time.perf_counter() - started)
        return result

    async def _long_poll(self, request, response):
        ledger_id, previous = request.ledgerId, request.previousLAC
        piggyback = _flag(request, pb.ReadRequest.ENTRY_PIGGYBACK)
        if piggyback and request.entryId != -1:
            raise BadRequest("ENTRY_PIGGYBACK needs entryId -1")
        lac = self.storage.lac(ledger_id)
        if lac <= previous and request.timeOut > 0:
            waiter = asyncio.get_running_loop().create_future()
            self._lac_waiters.setdefault(ledger_id, []).append(waiter)
            try:
                await asyncio.wait_for(waiter, request.timeOut / 1000.0)
            except asyncio.TimeoutError:
                pass
            lac = self.storage.lac(ledger_id)
        response.maxLAC = lac
        response.entryId = -1
        if lac > previous and piggyback:
            try:
                response.body = self.storage.read_entry(ledger_id, previous + 1)
                response.entryId = previous + 1
            except NoSuchEntry:
                pass
        return response

    @cancellation_logged
    async def ReadEntries(self, request, context):
        ledger_id, first = request.ledgerId, request.firstEntryId
        limit = request.maxChunkBytes or (1 << 20)
        try:
            max_lac = self.storage.lac(ledger_id)
        except Exception as exc:
            yield pb.ReadRangeChunk(status=status_of(exc), ledgerId=ledger_id, firstEntryId=first)
            return
        wanted = range_read_entries(request)
        chunk, chunk_first, count = bytearray(), None, 0
        for entry_id in wanted:
            try:
                body = self.storage.read_entry(ledger_id, entry_id)
            except Exception as exc:
                if count:
                    yield pb.ReadRangeChunk(status=pb.EOK, ledgerId=ledger_id, firstEntryId=chunk_first, count=count,
                                            entries=bytes(chunk), maxLAC=max_lac)
                self.stats.reads.labels("failed").inc()
                yield pb.ReadRangeChunk(status=status_of(exc), ledgerId=ledger_id, firstEntryId=entry_id)
                return
            chunk_first = entry_id if chunk_first is None else chunk_first
            chunk += SIZE.pack(len(body)) + body
            count += 1
            if len(chunk) >= limit:
                self.stats.reads.labels("ok").inc(count)
                yield pb.ReadRangeChunk(status=pb.EOK, ledgerId=ledger_id, firstEntryId=chunk_first, count=count,
                                        entries=bytes(chunk), maxLAC=max_lac)
                chunk, chunk_first, count = bytearray(), None, 0
        if count:
            self.stats.reads.labels("ok").inc(count)
            yield pb.ReadRangeChunk(status=pb.EOK, ledgerId=ledger_id, firstEntryId=chunk_first, count=count,
                                    entries=bytes(chunk), maxLAC=max_lac)

    # ---- LAC, force, info ----
    @cancellation_logged
    async def WriteLac(self, request, context):
        response = pb.WriteLacResponse(status=pb.EOK, ledgerId=request.ledgerId)
        try:
            self._check_writable()
            future, callback = self._durable()
            self.storage.write_explicit_lac(request.ledgerId, request.masterKey, request.lac, request.body, callback)
            if (error := await future) is not None:
                raise error
        except Exception as exc:
            response.status = status_of(exc)
        return response

    async def ReadLac(self, request, context):
        response = pb.ReadLacResponse(status=pb.EOK, ledgerId=request.ledgerId)
        try:
            explicit = self.storage.explicit_lac(request.ledgerId)
            if explicit:
                response.lacBody = explicit
            try:
                response.lastEntryBody = self.storage.read_entry(request.ledgerId, -1)
            except NoSuchEntry:
                if not explicit:
                    raise
        except Exception as exc:
            response.status = status_of(exc)
        return response

    @cancellation_logged
    async def ForceLedger(self, request, context):
        future, callback = self._durable()
        self.storage.journal.log(b"", callback)
        error = await future
        return pb.ForceLedgerResponse(status=pb.EOK if error is None else status_of(error), ledgerId=request.ledgerId)

    async def GetBookieInfo(self, request, context):
        usage = shutil.disk_usage(self.bookie.config.ledger_dir)
        response = pb.GetBookieInfoResponse(status=pb.EOK)
        if request.requested & pb.GetBookieInfoRequest.TOTAL_DISK_CAPACITY:
            response.totalDiskCapacity = usage.total
        if request.requested & pb.GetBookieInfoRequest.FREE_DISK_SPACE:
            response.freeDiskSpace = usage.free
        return response

    def _entries_of(self, ledger_id: int) -> pb.GetListOfEntriesOfLedgerResponse:
        response = pb.GetListOfEntriesOfLedgerResponse(status=pb.EOK, ledgerId=ledger_id)
        try:
            entries = self.storage.entry_ids(ledger_id)
            response.availabilityOfEntriesOfLedger = AvailabilityOfEntries.from_entries(entries).encode()
        except Exception as exc:
            response.status = status_of(exc)
        return response

    async def GetListOfEntriesOfLedger(self, request, context):
        return self._entries_of(request.ledgerId)

    @cancellation_logged
    async def GetListOfEntriesOfLedgers(self, request, context):
        chunk, size = pb.ListOfEntriesOfLedgers(), 0
        for ledger_id in request.ledgerId:
            answer = self._entries_of(ledger_id)
            chunk.ledgers.append(answer)
            size += len(answer.availabilityOfEntriesOfLedger) + 32
            if len(chunk.ledgers) >= 500 or size >= 1 << 20:
                yield chunk
                chunk, size = pb.ListOfEntriesOfLedgers(), 0
                await asyncio.sleep(0)
        if chunk.ledgers:
            yield chunk



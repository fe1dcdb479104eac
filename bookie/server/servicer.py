"""The Bookie gRPC service: thin translation between protocol messages and ledger storage (proto/README.md).

Adds arrive in batches on a long-lived stream; each batch is stored, journaled, and answered once durable, while
the stream keeps reading the next batches (answers go out in order). Reads, fence reads and LAC long polls are
unary; range reads stream chunks of entries.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import time

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie._proto import bookkeeper_protocol_pb2_grpc as pb_grpc
from bookie.codec.availability import AvailabilityOfEntries
from bookie.codec.records import PREFIX, pack_record, records_in
from bookie.codec.write_set import range_read_entries
from bookie.errors import BadRequest, BKError, BookieReadOnly, CorruptData, Unauthorized
from bookie.storage.ledger_storage import AddKey

log = logging.getLogger(__name__)
GONE_QUIET = 5.0  # seconds
# RequestStats: an operation's processing stats -> its request stats (by default the name with _REQUEST)
REQUEST_STATS = {
    "READ_ENTRY_FENCE_READ": "READ_ENTRY_FENCE_REQUEST",
    "READ_ENTRY_LONG_POLL_READ": "READ_ENTRY_LONG_POLL_REQUEST",
}


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
                "client went away while its %s answer was being sent",
                (method,),
                None,
                None,
            )
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

    def _done(self, operation: str, context, started: float, response):
        """Record an operation's stats (RequestStats: ``operation``, its processing). Over gRPC also its request
        stats; the wire protocol records those once it has written the answer."""
        seconds, ok = time.perf_counter() - started, response.status == pb.EOK
        self.stats.op(operation).event(seconds, ok)
        if context is not None:
            self.stats.op(REQUEST_STATS.get(operation, operation + "_REQUEST")).event(seconds, ok)
        return response

    def _forget_waiter(self, ledger_id: int, waiter: asyncio.Future) -> None:
        waiters = self._lac_waiters.get(ledger_id)
        if waiters is not None and waiter in waiters:
            waiters.remove(waiter)
            if not waiters:
                del self._lac_waiters[ledger_id]

    def _lac_advanced(self, ledger_id: int) -> None:
        for waiter in self._lac_waiters.pop(ledger_id, ()):
            if not waiter.done():
                waiter.set_result(None)

    # ---- adds ----
    @cancellation_logged
    async def AddEntry(self, request, context):
        batch = pb.AddBatch(batchId=0, entries=pack_record(request.body))
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
            # whatever broke the request stream, its client went away: said once, and never left in the task
            except Exception:  # noqa: BLE001 - (an unretrieved task error is logged as "never retrieved")
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
            k.ledgerId: AddKey(
                k.masterKey, recovery=_flag(k, pb.AddRequest.RECOVERY_ADD), deferred_sync=k.writeFlags & 1
            )
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
        """Store and journal add records (bookie/codec/records.py) now: ``(future, added, refused)``, the
        future resolving to None once they are durable, or to the error that failed them all."""
        try:
            future, callback = self._durable()
            added, refused = self.storage.add_batch(keys, records, callback)
        except Exception as exc:  # noqa: BLE001 - the whole batch failed, with the status of whatever failed it
            future = asyncio.get_running_loop().create_future()
            future.set_result(exc)
            added, refused = 0, []
        return future, added, refused

    @staticmethod
    def add_statuses(answers: list[tuple], error, refused) -> tuple[list[int], int]:
        """The status of each add of a batch (``answers``: ``(_, ledgerId, entryId)`` each), and how many failed."""
        if error is not None:
            return [status_of(error)] * len(answers), len(answers)
        failed = {(ledger_id, entry_id): status_of(exc) for ledger_id, entry_id, exc in refused}
        if not failed:
            return [pb.EOK] * len(answers), 0
        return [failed.get((ledger_id, entry_id), pb.EOK) for _, ledger_id, entry_id in answers], len(failed)

    async def _answer(self, response, records, future, added, refused, started) -> pb.AddBatchResponse:
        submitted = time.perf_counter()
        error = await future
        if error is not None:
            return self._fail_all(response, records, status_of(error), started)
        response.count = added + len(refused)
        for ledger_id, entry_id, exc in refused:
            response.failed.add(status=status_of(exc), ledgerId=ledger_id, entryId=entry_id)
        now = time.perf_counter()
        self.stats.adds_answered(added, len(refused), now - submitted, now - started)
        return response

    async def _add_batch(self, batch) -> pb.AddBatchResponse:
        return await self._answer(*self._submit(batch))

    def _fail_all(self, response, records: bytes, status: int, started: float) -> pb.AddBatchResponse:
        for _, _, ledger_id, entry_id in records_in(records):  # as far as they parse: a bad batch fails too
            response.failed.add(status=status, ledgerId=ledger_id, entryId=entry_id)
        response.count = len(response.failed)
        seconds = time.perf_counter() - started
        if status == pb.EREADONLY:  # refused before storage
            self.stats.add_refused(seconds, response.count)
        else:
            self.stats.adds_answered(0, response.count, seconds, seconds)
        return response

    # ---- reads ----
    @cancellation_logged
    async def ReadEntry(self, request, context):
        """A plain read, a fence read (READ_ENTRY_FENCE_*: the wait for the fence to be durable, then the read)
        or a LAC long poll (READ_ENTRY_LONG_POLL_*), with the stats of each (ReadEntryProcessorV3)."""
        started = time.perf_counter()
        response = pb.ReadResponse(status=pb.EOK, ledgerId=request.ledgerId, entryId=request.entryId)
        fence = _flag(request, pb.ReadRequest.FENCE_LEDGER)
        try:
            if fence:
                if not request.HasField("masterKey"):
                    raise Unauthorized("a fence read needs the master key")
                future, callback = self._durable()
                self.storage.fence(request.ledgerId, request.masterKey, callback)
                waited = time.perf_counter()
                error = await future
                self.stats.op("READ_ENTRY_FENCE_WAIT").event(time.perf_counter() - waited, error is None)
                if error is not None:
                    raise error
            if request.HasField("previousLAC"):
                return self._done(
                    "READ_ENTRY_LONG_POLL_READ", context, started, await self._long_poll(request, response)
                )
        except Exception as exc:  # noqa: BLE001 - every failure answers the request; status_of logs the unexpected
            response.status = status_of(exc)
            operation = (
                "READ_ENTRY_FENCE_READ"
                if fence
                else "READ_ENTRY_LONG_POLL_READ"
                if request.HasField("previousLAC")
                else "READ_ENTRY"
            )
            return self._done(operation, context, started, response)
        # plain reads come here over gRPC only: the wire protocol answers them itself
        return self._done(
            "READ_ENTRY_FENCE_READ" if fence else "READ_ENTRY",
            context,
            started,
            self.read_now(request.ledgerId, request.entryId, response),
        )

    def read_now(self, ledger_id: int, entry_id: int, response: pb.ReadResponse):
        """A read into ``response`` (status, body, maxLAC), counted as the bookie's (BOOKIE_READ_ENTRY)."""
        status, body, lac = self.read_plain(ledger_id, entry_id)
        response.status = status
        if body is not None:
            response.body, response.maxLAC = body, lac
        return response

    def read_plain(self, ledger_id: int, entry_id: int):
        """A read counted as the bookie's: ``(status, framed entry, LAC)``, entry and LAC None on failure."""
        started = time.perf_counter()
        try:
            body = self.storage.read_entry(ledger_id, entry_id)
            lac = self.storage.lac(ledger_id)
        except Exception as exc:  # noqa: BLE001 - every failure answers the request; status_of logs the unexpected
            self.stats.entries_read(0, 1, 0, time.perf_counter() - started)
            return status_of(exc), None, None
        self.stats.entries_read(1, 0, len(body), time.perf_counter() - started)
        return pb.EOK, body, lac

    async def _long_poll(self, request, response):
        ledger_id, previous = request.ledgerId, request.previousLAC
        piggyback = _flag(request, pb.ReadRequest.ENTRY_PIGGYBACK)
        if piggyback and request.entryId != -1:
            raise BadRequest("ENTRY_PIGGYBACK needs entryId -1")
        started = time.perf_counter()
        lac = self.storage.lac(ledger_id)
        if lac <= previous and request.timeOut > 0:
            waiter = asyncio.get_running_loop().create_future()
            self._lac_waiters.setdefault(ledger_id, []).append(waiter)
            waiting = time.perf_counter()
            self.stats.op("READ_ENTRY_LONG_POLL_PRE_WAIT").event(waiting - started)
            try:
                await asyncio.wait_for(waiter, request.timeOut / 1000.0)
                advanced = True
            except TimeoutError:
                advanced = False
            finally:  # timed out or cancelled (the client went away): no waiter stays behind for a quiet ledger
                self._forget_waiter(ledger_id, waiter)
            self.stats.op("READ_ENTRY_LONG_POLL_WAIT").event(time.perf_counter() - waiting, advanced)
            lac = self.storage.lac(ledger_id)
        response.maxLAC = lac
        response.entryId = -1
        if lac > previous and piggyback:
            status, body, _ = self.read_plain(ledger_id, previous + 1)
            if body is not None:
                response.body = body
                response.entryId = previous + 1
            elif status == pb.ENOENTRY:  # best effort: striping may leave it on another bookie
                self.stats.read_last_entry_no_entry.inc()
        return response

    @cancellation_logged
    async def ReadEntries(self, request, context):
        """Ours (a range read over gRPC): each entry counts as a read, each chunk's as answered together."""
        ledger_id, first = request.ledgerId, request.firstEntryId
        limit = request.maxChunkBytes or (1 << 20)
        try:
            max_lac = self.storage.lac(ledger_id)
        except Exception as exc:  # noqa: BLE001 - every failure answers the request; status_of logs the unexpected
            yield pb.ReadRangeChunk(status=status_of(exc), ledgerId=ledger_id, firstEntryId=first)
            return
        wanted = range_read_entries(request)
        chunk, chunk_first, count, started = bytearray(), None, 0, time.perf_counter()

        def counted(failed: int = 0) -> None:
            seconds = time.perf_counter() - started
            self.stats.reads_answered(count, failed, len(chunk) - PREFIX * count, seconds, seconds)

        def entries() -> pb.ReadRangeChunk:
            return pb.ReadRangeChunk(
                status=pb.EOK,
                ledgerId=ledger_id,
                firstEntryId=chunk_first,
                count=count,
                entries=bytes(chunk),
                maxLAC=max_lac,
            )

        for entry_id in wanted:
            try:
                body = self.storage.read_entry(ledger_id, entry_id)
            except Exception as exc:  # noqa: BLE001 - every failure answers the request; status_of logs the unexpected
                counted(1)
                if count:
                    yield entries()
                yield pb.ReadRangeChunk(status=status_of(exc), ledgerId=ledger_id, firstEntryId=entry_id)
                return
            chunk_first = entry_id if chunk_first is None else chunk_first
            chunk += pack_record(body)
            count += 1
            if len(chunk) >= limit:
                counted()
                yield entries()
                chunk, chunk_first, count, started = bytearray(), None, 0, time.perf_counter()
        if count:
            counted()
            yield entries()

    # ---- LAC, force, info ----
    @cancellation_logged
    async def WriteLac(self, request, context):
        started = time.perf_counter()
        response = pb.WriteLacResponse(status=pb.EOK, ledgerId=request.ledgerId)
        try:
            self._check_writable()
            future, callback = self._durable()
            self.storage.write_explicit_lac(request.ledgerId, request.masterKey, request.lac, request.body, callback)
            if (error := await future) is not None:
                raise error
        except Exception as exc:  # noqa: BLE001 - every failure answers the request; status_of logs the unexpected
            response.status = status_of(exc)
        return self._done("WRITE_LAC", context, started, response)

    async def ReadLac(self, request, context):
        started = time.perf_counter()
        response = pb.ReadLacResponse(status=pb.EOK, ledgerId=request.ledgerId)
        try:
            explicit = self.storage.explicit_lac(request.ledgerId)
            if explicit:
                response.lacBody = explicit
            status, body, _ = self.read_plain(request.ledgerId, -1)
            if body is not None:
                response.lastEntryBody = body
            elif status != pb.ENOENTRY or not explicit:
                response.status = status
        except Exception as exc:  # noqa: BLE001 - every failure answers the request; status_of logs the unexpected
            response.status = status_of(exc)
        return self._done("READ_LAC", context, started, response)

    @cancellation_logged
    async def ForceLedger(self, request, context):
        started = time.perf_counter()
        future, callback = self._durable()
        self.storage.force(request.ledgerId, callback)
        self.stats.force_ledger_ops.inc()
        error = await future
        response = pb.ForceLedgerResponse(
            status=pb.EOK if error is None else status_of(error), ledgerId=request.ledgerId
        )
        return self._done("FORCE_LEDGER", context, started, response)

    async def GetBookieInfo(self, request, context):
        started = time.perf_counter()
        dirs = self.bookie.ledger_dirs  # BookieImpl.getTotalDiskSpace / getTotalFreeSpace: each filesystem once
        response = pb.GetBookieInfoResponse(status=pb.EOK)
        if request.requested & pb.GetBookieInfoRequest.TOTAL_DISK_CAPACITY:
            response.totalDiskCapacity = dirs.total_space()
        if request.requested & pb.GetBookieInfoRequest.FREE_DISK_SPACE:
            response.freeDiskSpace = dirs.free_space()
        return self._done("GET_BOOKIE_INFO", context, started, response)

    def _entries_of(self, ledger_id: int) -> pb.GetListOfEntriesOfLedgerResponse:
        started = time.perf_counter()
        response = pb.GetListOfEntriesOfLedgerResponse(status=pb.EOK, ledgerId=ledger_id)
        try:
            entries = self.storage.entry_ids(ledger_id)
            response.availabilityOfEntriesOfLedger = AvailabilityOfEntries.from_entries(entries).encode()
        except Exception as exc:  # noqa: BLE001 - every failure answers the request; status_of logs the unexpected
            response.status = status_of(exc)
        self.stats.bookie_list_entries.event(time.perf_counter() - started, response.status == pb.EOK)
        return response

    async def GetListOfEntriesOfLedger(self, request, context):
        started = time.perf_counter()
        return self._done("GET_LIST_OF_ENTRIES_OF_LEDGER", context, started, self._entries_of(request.ledgerId))

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

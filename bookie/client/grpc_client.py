"""A :class:`~bookie.client.bookie_client.BookieClient` over our gRPC data service (on a bookie's bkctl-admin port),
toward our bookies when BKCTL_DATA_TRANSPORT=grpc (bookie/client/config.py): an asynchronous connection to one
bookie, shared by every ledger handle.

Adds: one long-lived ``AddEntries`` stream. Adds queued during one turn of the event loop (or until ~1 MB) go out
as one ``AddBatch`` message, and each answer acknowledges a whole batch — a Python gRPC message costs about the same
whatever its size. A broken stream fails every add in flight with ``CONNECTION_LOST``, which the handle
treats like any bookie failure (an ensemble change).

Reads: unary ``ReadEntry`` (plain, fence, long poll), ``ReadLac``, and streamed ``ReadEntries``. grpc's stubs are
untyped: this module is the typed boundary. Requests are built and answers read here, into the interface's
results; transport errors become the core's exceptions (:func:`bookie.client.channel.translate_rpc_error`);
BookKeeper status codes are left to the caller.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import grpc

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie._proto import bookkeeper_protocol_pb2_grpc as pb_grpc
from bookie.client.bookie_client import (
    CONNECTION_LOST,
    EOK,
    AddTarget,
    EntryChunk,
    EntryRead,
    LacPoll,
    LacRead,
    LedgerEntries,
    RangeStopped,
    Stripe,
    TokenT,
)
from bookie.client.channel import OPTIONS, translate_rpc_error
from bookie.client.wire_client import entry_read, lac_poll, lac_read
from bookie.codec.records import PREFIX, records_in

log = logging.getLogger(__name__)
MAX_BATCH_BYTES = 1 << 20
RECOVERY_PRIORITY = 100

# One add waiting for its batch's answer: (target, token, ensemble index, ledger id). The target's own token type.
_AddWaiter = tuple[AddTarget[Any], Any, int, int]


class GrpcBookieClient:
    """The data operations on one bookie over our gRPC data service (a BookieClient)."""

    def __init__(self, bookie_id: str, address: tuple[str, int]) -> None:
        self.bookie_id = bookie_id
        self._channel = grpc.aio.insecure_channel(f"{address[0]}:{address[1]}", options=OPTIONS)
        self.stub = pb_grpc.BookieStub(self._channel)
        self._stream: Any = None  # the AddEntries call (grpc.aio.StreamStreamCall), while it lasts
        self._outbox: asyncio.Queue[pb.AddBatch | None] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._records: list[bytes] = []
        self._waiters: list[_AddWaiter] = []
        self._keys: dict[int, tuple[bytes, bool]] = {}
        self._size = 0
        self._flush_handle: asyncio.Handle | None = None
        self._inflight: dict[int, list[_AddWaiter]] = {}
        self._next_batch = 0
        self.closed = False

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
        """See :meth:`BookieClient.add`: queued into the next batch."""
        if self._stream is None:
            self._open_stream()
        known = self._keys.get(ledger_id)
        if known is not None and known != (master_key, recovery):
            self._flush()  # one key per ledger and batch
        self._keys[ledger_id] = (master_key, recovery)
        self._records.append(record)
        self._waiters.append((target, token, index, ledger_id))
        self._size += len(record)
        if self._size >= MAX_BATCH_BYTES:
            self._flush()
        elif self._flush_handle is None:
            self._flush_handle = asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        if not self._records:
            return
        batch_id = self._next_batch
        self._next_batch += 1
        batch = pb.AddBatch(batchId=batch_id, entries=b"".join(self._records))
        recovery = False
        for ledger_id, (master_key, is_recovery) in self._keys.items():
            key = batch.keys.add(ledgerId=ledger_id, masterKey=master_key)
            if is_recovery:
                key.flag = pb.AddRequest.RECOVERY_ADD
                recovery = True
        if recovery:
            batch.priority = RECOVERY_PRIORITY
        self._inflight[batch_id] = self._waiters
        self._records, self._waiters, self._keys, self._size = [], [], {}, 0
        self._outbox.put_nowait(batch)

    def _open_stream(self) -> None:
        self._stream = call = self.stub.AddEntries()
        outbox: asyncio.Queue[pb.AddBatch | None] = asyncio.Queue()
        self._outbox = outbox
        self._tasks = [asyncio.ensure_future(self._write(call, outbox)), asyncio.ensure_future(self._read(call))]

    async def _write(self, call: Any, outbox: asyncio.Queue[pb.AddBatch | None]) -> None:
        try:
            while (batch := await outbox.get()) is not None:
                await call.write(batch)
            await call.done_writing()
        except (grpc.aio.AioRpcError, asyncio.InvalidStateError, grpc.aio.UsageError):
            pass  # the reader sees the broken stream and fails what is in flight

    async def _read(self, call: Any) -> None:
        try:
            async for answer in call:
                waiters = self._inflight.pop(answer.batchId, ())
                failed = {(f.ledgerId, f.entryId): f.status for f in answer.failed}
                for target, token, index, ledger_id in waiters:
                    status = failed.get((ledger_id, token.entry_id), EOK) if failed else EOK
                    target.added(token, index, status, self)
        except grpc.aio.AioRpcError as exc:
            if not self.closed:
                log.warning("add stream to bookie %s broke: %s", self.bookie_id, exc.code().name)
        except asyncio.CancelledError:
            pass
        finally:
            self._lose_stream(call)

    def _lose_stream(self, call: Any) -> None:
        if self._stream is not call:
            return
        self._stream = None
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        lost = [w for waiters in self._inflight.values() for w in waiters] + self._waiters
        self._inflight, self._records, self._waiters, self._keys, self._size = {}, [], [], {}, 0
        for target, token, index, _ in lost:
            target.added(token, index, CONNECTION_LOST, self)

    # ---- reads ----
    async def _read_entry(self, request: pb.ReadRequest, timeout: float, what: str) -> pb.ReadResponse:
        try:
            return await self.stub.ReadEntry(request, timeout=timeout)
        except grpc.aio.AioRpcError as exc:
            raise translate_rpc_error(exc, self.bookie_id, what) from None

    async def read_entry(
        self, ledger_id: int, entry_id: int, timeout: float, what: str, fence_key: bytes | None = None
    ) -> EntryRead:
        """See :meth:`BookieClient.read_entry`."""
        request = pb.ReadRequest(ledgerId=ledger_id, entryId=entry_id)
        if fence_key is not None:
            request.flag = pb.ReadRequest.FENCE_LEDGER
            request.masterKey = fence_key
        return entry_read(await self._read_entry(request, timeout, what))

    async def long_poll_lac(self, ledger_id: int, previous: int, wait: float, timeout: float) -> LacPoll:
        """See :meth:`BookieClient.long_poll_lac`."""
        request = pb.ReadRequest(ledgerId=ledger_id, entryId=-1, previousLAC=previous, timeOut=int(wait * 1000))
        return lac_poll(await self._read_entry(request, timeout, f"long poll ledger {ledger_id}"))

    async def read_lac(self, ledger_id: int, timeout: float) -> LacRead:
        """See :meth:`BookieClient.read_lac`."""
        try:
            answer = await self.stub.ReadLac(pb.ReadLacRequest(ledgerId=ledger_id), timeout=timeout)
        except grpc.aio.AioRpcError as exc:
            raise translate_rpc_error(exc, self.bookie_id, f"read LAC of ledger {ledger_id}") from None
        return lac_read(answer)

    async def read_range(
        self,
        ledger_id: int,
        first_entry_id: int,
        last_entry_id: int,
        timeout: float,
        stripe: Stripe | None = None,
        high_priority: bool = False,
    ) -> AsyncIterator[EntryChunk | RangeStopped]:
        """See :meth:`BookieClient.read_range`: one list per streamed message (an await per entry cost more than
        parsing it)."""
        request = pb.ReadRangeRequest(ledgerId=ledger_id, firstEntryId=first_entry_id, lastEntryId=last_entry_id)
        if stripe is not None:
            request.ensembleSize = stripe.ensemble_size
            request.writeQuorumSize = stripe.write_quorum_size
            request.bookieIndex = stripe.bookie_index
            if stripe.also_held_by is not None:
                request.alsoHeldByIndex = stripe.also_held_by
        if high_priority:
            request.priority = RECOVERY_PRIORITY
        try:
            async for chunk in self.stub.ReadEntries(request, timeout=timeout):
                if chunk.status != EOK:
                    yield RangeStopped(chunk.firstEntryId, chunk.status)
                    return
                data: bytes = chunk.entries
                yield [(entry_id, data[at + PREFIX : at + PREFIX + size]) for at, size, _, entry_id in records_in(data)]
        except grpc.aio.AioRpcError as exc:
            raise translate_rpc_error(exc, self.bookie_id, f"range read of ledger {ledger_id}") from None

    async def list_entries(self, ledger_ids: list[int], timeout: float) -> AsyncIterator[LedgerEntries]:
        """See :meth:`BookieClient.list_entries`: many ledgers in one call."""
        request = pb.GetListOfEntriesOfLedgersRequest(ledgerId=ledger_ids)
        try:
            async for chunk in self.stub.GetListOfEntriesOfLedgers(request, timeout=timeout):
                for answer in chunk.ledgers:
                    yield LedgerEntries(answer.ledgerId, answer.status, answer.availabilityOfEntriesOfLedger)
        except grpc.aio.AioRpcError as exc:
            raise translate_rpc_error(exc, self.bookie_id, f"list of entries of {len(ledger_ids)} ledgers") from None

    async def close(self) -> None:
        """See :meth:`BookieClient.close`."""
        self.closed = True
        if self._stream is not None:
            self._flush()
            self._outbox.put_nowait(None)
        for task in self._tasks:
            task.cancel()
        await self._channel.close()

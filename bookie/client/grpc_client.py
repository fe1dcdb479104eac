"""Our gRPC data service (on a bookie's bkctl-admin port), kept beside BookKeeper's protocol for side-by-side
measurements (BKCTL_DATA_TRANSPORT=grpc): an asynchronous connection to one bookie, shared by every ledger handle.

Adds: one long-lived ``AddEntries`` stream. Adds queued during one turn of the event loop (or until ~1 MB) go out
as one ``AddBatch`` message, and each answer acknowledges a whole batch — a Python gRPC message costs about the same
whatever its size (DESIGN.md). Each add carries a *target* (the ledger handle) and a *token* (its pending add); the
target's ``added(token, index, status, client)`` is called once per add. A broken stream fails every add in flight
with ``CONNECTION_LOST``, which the handle treats like any bookie failure (an ensemble change).

Reads: unary ``ReadEntry`` (plain, fence, long poll), ``ReadLac``, and streamed ``ReadEntries``. Transport errors
become the core's exceptions here; BookKeeper status codes are left to the caller.
"""

from __future__ import annotations

import asyncio
import logging
import struct

import grpc

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie._proto import bookkeeper_protocol_pb2_grpc as pb_grpc
from bookie.client.channel import OPTIONS, translate_rpc_error
from bookie.client.wire_client import CONNECTION_LOST

log = logging.getLogger(__name__)
MAX_BATCH_BYTES = 1 << 20
SIZE = struct.Struct(">i")
ENTRY_ID = struct.Struct(">q")
RECOVERY_PRIORITY = 100


class GrpcBookieClient:
    def __init__(self, bookie_id: str, address: tuple[str, int]):
        self.bookie_id = bookie_id
        self._channel = grpc.aio.insecure_channel(f"{address[0]}:{address[1]}", options=OPTIONS)
        self.stub = pb_grpc.BookieStub(self._channel)
        self._stream: grpc.aio.StreamStreamCall | None = None
        self._outbox: asyncio.Queue | None = None
        self._tasks: list[asyncio.Task] = []
        self._records: list[bytes] = []
        self._waiters: list[tuple] = []
        self._keys: dict[int, tuple[bytes, bool]] = {}
        self._size = 0
        self._flush_handle: asyncio.Handle | None = None
        self._inflight: dict[int, list[tuple]] = {}
        self._next_batch = 0
        self.closed = False

    # ---- adds ----
    def add(self, ledger_id: int, master_key: bytes, recovery: bool, record: bytes, target, token, index: int):
        """Queue one add record (``int32 size | framed entry``)."""
        if self._stream is None:
            self._open_stream()
        known = self._keys.get(ledger_id)
        if known is not None and known != (master_key, recovery):
            self._flush()  # one key per ledger and batch
        self._keys[ledger_id] = (master_key, recovery)
        self._records.append(record)
        self._waiters.append((target, token, index))
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
        self._outbox = outbox = asyncio.Queue()
        self._tasks = [asyncio.ensure_future(self._write(call, outbox)), asyncio.ensure_future(self._read(call))]

    async def _write(self, call, outbox: asyncio.Queue) -> None:
        try:
            while (batch := await outbox.get()) is not None:
                await call.write(batch)
            await call.done_writing()
        except (grpc.aio.AioRpcError, asyncio.InvalidStateError, grpc.aio.UsageError):
            pass  # the reader sees the broken stream and fails what is in flight

    async def _read(self, call) -> None:
        try:
            async for answer in call:
                waiters = self._inflight.pop(answer.batchId, ())
                failed = {(f.ledgerId, f.entryId): f.status for f in answer.failed}
                for target, token, index in waiters:
                    status = failed.get((target.ledger_id, token.entry_id), 0) if failed else 0
                    target.added(token, index, status, self)
        except grpc.aio.AioRpcError as exc:
            if not self.closed:
                log.warning("add stream to bookie %s broke: %s", self.bookie_id, exc.code().name)
        except asyncio.CancelledError:
            pass
        finally:
            self._lose_stream(call)

    def _lose_stream(self, call) -> None:
        if self._stream is not call:
            return
        self._stream = None
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        lost = [w for waiters in self._inflight.values() for w in waiters] + self._waiters
        self._inflight, self._records, self._waiters, self._keys, self._size = {}, [], [], {}, 0
        for target, token, index in lost:
            target.added(token, index, CONNECTION_LOST, self)

    # ---- reads ----
    async def read_entry(self, request: pb.ReadRequest, timeout: float, what: str) -> pb.ReadResponse:
        try:
            return await self.stub.ReadEntry(request, timeout=timeout)
        except grpc.aio.AioRpcError as exc:
            raise translate_rpc_error(exc, self.bookie_id, what) from None

    async def read_lac(self, ledger_id: int, timeout: float) -> pb.ReadLacResponse:
        try:
            return await self.stub.ReadLac(pb.ReadLacRequest(ledgerId=ledger_id), timeout=timeout)
        except grpc.aio.AioRpcError as exc:
            raise translate_rpc_error(exc, self.bookie_id, f"read LAC of ledger {ledger_id}") from None

    async def read_range(self, request: pb.ReadRangeRequest, timeout: float):
        """Yield lists of ``(entryId, framed entry)``, one per message, in order; then, if the bookie stopped early,
        ``[(entryId, status)]`` for the entry it could not read (status an int). Lists, not entries: an await per
        entry cost more than parsing it."""
        unpack_size, unpack_id = SIZE.unpack_from, ENTRY_ID.unpack_from
        try:
            async for chunk in self.stub.ReadEntries(request, timeout=timeout):
                if chunk.status != pb.EOK:
                    yield [(chunk.firstEntryId, chunk.status)]
                    return
                data, offset, end, entries = chunk.entries, 0, len(chunk.entries), []
                while offset < end:
                    size = unpack_size(data, offset)[0]
                    body = data[offset + 4 : offset + 4 + size]
                    entries.append((unpack_id(body, 8)[0], body))
                    offset += 4 + size
                yield entries
        except grpc.aio.AioRpcError as exc:
            raise translate_rpc_error(exc, self.bookie_id, f"range read of ledger {request.ledgerId}") from None

    async def list_entries(self, ledger_ids: list[int], timeout: float):
        """GET_LIST_OF_ENTRIES_OF_LEDGER for many ledgers in one call: yield ``(ledgerId, status, encoded)``."""
        request = pb.GetListOfEntriesOfLedgersRequest(ledgerId=ledger_ids)
        try:
            async for chunk in self.stub.GetListOfEntriesOfLedgers(request, timeout=timeout):
                for answer in chunk.ledgers:
                    yield answer.ledgerId, answer.status, answer.availabilityOfEntriesOfLedger
        except grpc.aio.AioRpcError as exc:
            raise translate_rpc_error(exc, self.bookie_id, f"list of entries of {len(ledger_ids)} ledgers") from None

    async def close(self) -> None:
        self.closed = True
        if self._outbox is not None and self._stream is not None:
            self._flush()
            self._outbox.put_nowait(None)
        for task in self._tasks:
            task.cancel()
        await self._channel.close()

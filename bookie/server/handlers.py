"""The bookie's request handlers: thin translation between BookKeeper's protocol messages and ledger storage, for
what the wire server (bookie/server/wire/) does not answer in its own pass: storing a batch of adds, fence
reads, LAC long polls, WRITE_LAC, READ_LAC, FORCE_LEDGER, GET_BOOKIE_INFO and GET_LIST_OF_ENTRIES_OF_LEDGER. Each
takes a request message and returns its response (a coroutine where it waits), with the operation's stats.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.codec.availability import AvailabilityOfEntries
from bookie.errors import BadRequest, BookieReadOnly, Unauthorized
from bookie.server.wire.reads import Read, read_entry, status_of
from bookie.storage.ledger_storage import AddKey

log = logging.getLogger(__name__)
Durable = asyncio.Future[BaseException | None]  # resolves once a journal write is durable: None, or its error
_Response = TypeVar("_Response", bound=Any)


def _flag(message: pb.ReadRequest, value: int) -> bool:
    """Whether an optional enum ``flag`` is set to ``value`` (proto2: an unset enum reads as its first value)."""
    return bool(message.HasField("flag") and message.flag == value)


class BookieHandlers:
    def __init__(self, bookie: Any) -> None:
        self.bookie = bookie
        self.storage = bookie.storage
        self.stats = bookie.stats
        self._lac_waiters: dict[int, list[asyncio.Future[None]]] = {}
        self.storage.on_lac_advanced = self._lac_advanced

    # ---- helpers ----
    @staticmethod
    def _on_loop(durable: Callable[[BaseException | None], None]) -> Callable[[BaseException | None], object]:
        """The journal callback that runs ``durable`` on this loop, the first time the journal calls it (it calls a
        DEFERRED_SYNC add's twice when the fsync after its write fails)."""
        loop = asyncio.get_running_loop()
        called = False

        def once(error: BaseException | None) -> None:
            nonlocal called
            if not called:
                called = True
                durable(error)

        return lambda error: loop.call_soon_threadsafe(once, error)

    @classmethod
    def _durable(cls) -> tuple[Durable, Callable[[BaseException | None], object]]:
        """A future and the journal callback that resolves it from the journal thread."""
        future: Durable = asyncio.get_running_loop().create_future()

        def resolve(error: BaseException | None) -> None:
            if not future.done():  # cancelled with the request that awaited it
                future.set_result(error)

        return future, cls._on_loop(resolve)

    def _check_writable(self) -> None:
        if self.bookie.read_only:
            raise BookieReadOnly("bookie is read-only")

    def _done(self, operation: str, started: float, response: _Response) -> _Response:
        """Record an operation's stats (RequestStats: ``operation``, its processing; the wire server records its
        request stats once it has written the answer)."""
        self.stats.op(operation).event(time.perf_counter() - started, response.status == pb.EOK)
        return response

    def _forget_waiter(self, ledger_id: int, waiter: asyncio.Future[None]) -> None:
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
    def store_adds(
        self, keys: dict[int, AddKey], records: bytes, durable: Callable[[BaseException | None], None]
    ) -> list[tuple[int, int, BaseException]]:
        """Store and journal add records (bookie/codec/records.py) now; the adds refused. ``durable`` runs on the
        loop once they are durable (None) or with the error that failed them all: called in the loop turn that
        learns it, with no future between, so that the answers leave in that turn."""
        callback = self._on_loop(durable)
        refused: list[tuple[int, int, BaseException]]
        try:
            _, refused = self.storage.add_batch(keys, records, callback)
            return refused
        except Exception as exc:  # noqa: BLE001 - the whole batch failed, with the status of whatever failed it
            callback(exc)
            return []

    @staticmethod
    def add_statuses(
        answers: list[tuple[int | None, int, int]],
        error: BaseException | None,
        refused: list[tuple[int, int, BaseException]],
    ) -> tuple[list[int], int]:
        """The status of each add of a batch (``answers``: ``(_, ledgerId, entryId)`` each), and how many failed."""
        if error is not None:
            return [status_of(error)] * len(answers), len(answers)
        failed = {(ledger_id, entry_id): status_of(exc) for ledger_id, entry_id, exc in refused}
        if not failed:
            return [pb.EOK] * len(answers), 0
        return [failed.get((ledger_id, entry_id), pb.EOK) for _, ledger_id, entry_id in answers], len(failed)

    # ---- reads ----
    async def read_waiting(self, request: pb.ReadRequest) -> pb.ReadResponse:
        """A read that waits: a fence read (READ_ENTRY_FENCE_*: the wait for the fence to be durable, then the read)
        or a LAC long poll (READ_ENTRY_LONG_POLL_*), with the stats of each (ReadEntryProcessorV3). The wire server
        answers plain reads in its own pass."""
        started = time.perf_counter()
        response = pb.ReadResponse(status=pb.EOK, ledgerId=request.ledgerId, entryId=request.entryId)
        fence, poll = _flag(request, pb.ReadRequest.FENCE_LEDGER), request.HasField("previousLAC")
        operation = "READ_ENTRY_LONG_POLL_READ" if poll and not fence else "READ_ENTRY_FENCE_READ"
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
            if poll:
                return self._done("READ_ENTRY_LONG_POLL_READ", started, await self._long_poll(request, response))
        except Exception as exc:  # noqa: BLE001 - every failure answers the request; status_of logs the unexpected
            response.status = status_of(exc)
            return self._done(operation, started, response)
        status, body, lac = self.read_plain(request.ledgerId, request.entryId)
        response.status = status
        if body is not None:
            response.body, response.maxLAC = body, lac
        return self._done(operation, started, response)

    def read_plain(self, ledger_id: int, entry_id: int) -> Read:
        """A read counted as the bookie's: ``(status, framed entry, LAC)``, entry and LAC None on failure."""
        started = time.perf_counter()
        status, body, lac = read_entry(self.storage, ledger_id, entry_id)
        seconds = time.perf_counter() - started
        if body is None:
            self.stats.entries_read(0, 1, 0, seconds)
        else:
            self.stats.entries_read(1, 0, len(body), seconds)
        return status, body, lac

    async def _long_poll(self, request: pb.ReadRequest, response: pb.ReadResponse) -> pb.ReadResponse:
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

    # ---- LAC, force, info ----
    async def write_lac(self, request: pb.WriteLacRequest) -> pb.WriteLacResponse:
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
        return self._done("WRITE_LAC", started, response)

    async def read_lac(self, request: pb.ReadLacRequest) -> pb.ReadLacResponse:
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
        return self._done("READ_LAC", started, response)

    async def force_ledger(self, request: pb.ForceLedgerRequest) -> pb.ForceLedgerResponse:
        started = time.perf_counter()
        future, callback = self._durable()
        self.storage.force(request.ledgerId, callback)
        self.stats.force_ledger_ops.inc()
        error = await future
        response = pb.ForceLedgerResponse(
            status=pb.EOK if error is None else status_of(error), ledgerId=request.ledgerId
        )
        return self._done("FORCE_LEDGER", started, response)

    async def bookie_info(self, request: pb.GetBookieInfoRequest) -> pb.GetBookieInfoResponse:
        started = time.perf_counter()
        dirs = self.bookie.ledger_dirs  # BookieImpl.getTotalDiskSpace / getTotalFreeSpace: each filesystem once
        response = pb.GetBookieInfoResponse(status=pb.EOK)
        if request.requested & pb.GetBookieInfoRequest.TOTAL_DISK_CAPACITY:
            response.totalDiskCapacity = dirs.total_space()
        if request.requested & pb.GetBookieInfoRequest.FREE_DISK_SPACE:
            response.freeDiskSpace = dirs.free_space()
        return self._done("GET_BOOKIE_INFO", started, response)

    async def entries_of_ledger(
        self, request: pb.GetListOfEntriesOfLedgerRequest
    ) -> pb.GetListOfEntriesOfLedgerResponse:
        started = time.perf_counter()
        response = pb.GetListOfEntriesOfLedgerResponse(status=pb.EOK, ledgerId=request.ledgerId)
        try:
            entries = self.storage.entry_ids(request.ledgerId)
            response.availabilityOfEntriesOfLedger = AvailabilityOfEntries.from_entries(entries).encode()
        except Exception as exc:  # noqa: BLE001 - every failure answers the request; status_of logs the unexpected
            response.status = status_of(exc)
        self.stats.bookie_list_entries.event(time.perf_counter() - started, response.status == pb.EOK)
        return self._done("GET_LIST_OF_ENTRIES_OF_LEDGER", started, response)

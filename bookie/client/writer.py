"""Writing a ledger (BookKeeper: client/LedgerHandle.java, PendingAddOp.java): striping over the ensemble, acks counted
per entry, completions in entry-id order, LAC piggy-back, ensemble change on a bookie failure or timeout, and close.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque

from bookie.client.bookie_client import CONNECTION_LOST, EBADREQ, EFENCED, EOK, EUA, BookieClient, refused_because
from bookie.client.context import ClientContext
from bookie.client.placement import replacement
from bookie.codec.digest import Digester
from bookie.codec.entry import frame_entry
from bookie.codec.records import pack_record
from bookie.errors import (
    BKError,
    EntryTooLarge,
    LedgerClosed,
    LedgerFenced,
    MetadataVersionConflict,
    NotEnoughBookies,
    Unauthorized,
    error_for_status,
)
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState, Segment

log = logging.getLogger(__name__)


class PendingAdd:
    __slots__ = ("acks", "count", "entry_id", "future", "length", "record", "sent_at")

    def __init__(self, entry_id: int, record: bytes, length: int, future: asyncio.Future[int], now: float) -> None:
        self.entry_id, self.record, self.length, self.future, self.sent_at = entry_id, record, length, future, now
        self.acks = 0  # bitmask of ensemble indexes that acknowledged
        self.count = 0


class LedgerWriter:
    """The writable handle's core, living on the client's event loop."""

    def __init__(
        self,
        client: ClientContext,
        ledger_id: int,
        metadata: LedgerMetadata,
        version: int,
        password: bytes,
        master_key: bytes,
        recovery: bool = False,
    ) -> None:
        self.client = client
        self.ledger_id = ledger_id
        self.metadata, self.version = metadata, version
        self.digester = Digester(metadata.digest_type or client.config.digest_type, password)
        self.master_key = master_key
        self.recovery = recovery
        self.ensemble = list(metadata.segments[-1].bookies)
        self.E, self.WQ, self.AQ = metadata.ensemble_size, metadata.write_quorum_size, metadata.ack_quorum_size
        self.bookies = [client.bookie(b) for b in self.ensemble]
        self.last_add_pushed = self.lac = -1
        self.length = self.lac_length = 0
        self.pending: deque[PendingAdd] = deque()
        self.error: BKError | None = None
        self.closed = False
        self._failing: set[int] = set()
        self._replaced: set[str] = set()
        self._changing = False
        self._change: asyncio.Future[None] | None = None
        self._loop = asyncio.get_running_loop()
        self._timer = asyncio.ensure_future(self._watch_timeouts())

    # ---- adds ----
    def append(self, data: bytes) -> asyncio.Future[int]:
        """Add an entry; the future resolves to its entry id once AQ bookies have it and all earlier ones are done."""
        if self.error is not None:
            raise self.error
        if self.closed:
            raise LedgerClosed(f"ledger {self.ledger_id} is closed")
        if len(data) > self.client.config.max_entry_size:
            raise EntryTooLarge(
                f"entry of {len(data)} bytes is over the {self.client.config.max_entry_size}-byte limit; "
                "nothing written"
            )
        entry_id = self.last_add_pushed = self.last_add_pushed + 1
        self.length += len(data)
        framed = frame_entry(self.digester, self.ledger_id, entry_id, self.lac, self.length, data)
        add = PendingAdd(entry_id, pack_record(framed), self.length, self._loop.create_future(), self._loop.time())
        self.pending.append(add)
        self._send(add)
        return add.future

    def _why(self) -> str:
        """Why the bookies that failed did, where their connections know (a TLS handshake that failed)."""
        reasons = {b.failure for b in self.bookies} - {None}
        return f" ({'; '.join(sorted(str(r) for r in reasons))})" if reasons else ""

    def _send(self, add: PendingAdd, only: set[int] | None = None) -> None:
        for w in range(self.WQ):
            index = (add.entry_id + w) % self.E
            if (only is None or index in only) and index not in self._failing:
                self.bookies[index].add(self.ledger_id, self.master_key, self.recovery, add.record, self, add, index)

    def added(self, add: PendingAdd, index: int, status: int, bookie: BookieClient) -> None:
        """One bookie's answer for one add (called by the bookie's client: an AddTarget)."""
        if add.future.done() or self.bookies[index] is not bookie:
            return  # already completed or failed, or an answer from a bookie replaced since
        if status == EOK:
            bit = 1 << index
            if not add.acks & bit:
                add.acks |= bit
                add.count += 1
                if add.count >= self.AQ and add is self.pending[0]:
                    self._complete()
        elif status in (EFENCED, EUA):
            self._fail(
                error_for_status(
                    status,
                    f"ledger {self.ledger_id}: bookie {bookie.bookie_id} says "
                    + (
                        "fenced: the ledger was recovered"
                        if status == EFENCED
                        else refused_because(self.client.tls is not None)
                    ),
                )
            )
        elif status == EBADREQ:
            self._fail(BKError(f"ledger {self.ledger_id}: bookie {bookie.bookie_id} refused entry {add.entry_id}"))
        else:
            if index not in self._failing and self.error is None:  # once per failure, not once per add in flight
                reason = "connection lost" if status == CONNECTION_LOST else f"status {status}"
                log.warning("ledger %d: bookie %s failed (%s)", self.ledger_id, bookie.bookie_id, reason)
            self._bookie_failed(index)

    def _complete(self) -> None:
        if self._changing:
            return  # never while an ensemble change is in progress
        pending, aq = self.pending, self.AQ
        while pending and pending[0].count >= aq:
            add = pending.popleft()
            self.lac, self.lac_length = add.entry_id, add.length
            add.future.set_result(add.entry_id)

    def _fail(self, error: BKError) -> None:
        if self.error is None:
            self.error = error
        while self.pending:
            add = self.pending.popleft()
            if not add.future.done():
                add.future.set_exception(self.error)

    # ---- failures, timeouts and ensemble change ----
    def _bookie_failed(self, index: int) -> None:
        if self.error is not None or index in self._failing:
            return
        self._failing.add(index)
        if not self._changing:
            self._changing = True
            self._change = asyncio.ensure_future(self._change_ensemble())  # held: the loop's reference is weak

    async def _watch_timeouts(self) -> None:
        timeout = self.client.config.add_entry_timeout
        while not self.closed and self.error is None:
            await asyncio.sleep(min(0.25, timeout / 4))
            now = self._loop.time()
            for add in list(self.pending):
                if now - add.sent_at < timeout:
                    break
                for w in range(self.WQ):
                    index = (add.entry_id + w) % self.E
                    if not add.acks & (1 << index):
                        log.warning(
                            "ledger %d: add %d timed out on bookie %s",
                            self.ledger_id,
                            add.entry_id,
                            self.ensemble[index],
                        )
                        self._bookie_failed(index)

    async def _change_ensemble(self) -> None:
        try:
            while self._failing and self.error is None:
                indexes = set(self._failing)
                writable = await self.client.writable_bookies()
                ensemble = list(self.ensemble)
                for index in sorted(indexes):
                    self._replaced.add(ensemble[index])
                    ensemble[index] = replacement(writable, ensemble, index, self._replaced)
                await asyncio.to_thread(self._write_segment, ensemble)
                log.info("ledger %d: ensemble changed at entry %d: %s", self.ledger_id, self.lac + 1, ensemble)
                self.ensemble = ensemble
                for index in indexes:
                    self.bookies[index] = self.client.bookie(ensemble[index])
                self._failing -= indexes
                now = self._loop.time()
                for add in self.pending:  # re-send to the replacements; their predecessors' acks no longer count
                    for index in indexes:
                        if add.acks & (1 << index):
                            add.acks &= ~(1 << index)
                            add.count -= 1
                    add.sent_at = now
                    self._send(add, indexes)
        except BKError as exc:
            self._fail(
                exc
                if not isinstance(exc, NotEnoughBookies)
                else NotEnoughBookies(f"ledger {self.ledger_id}: cannot replace a failed bookie: {exc}{self._why()}")
            )
        finally:
            self._changing = False
            if self.error is None:
                self._complete()

    def _write_segment(self, ensemble: list[str]) -> None:
        """CAS the metadata: a new segment at LAC+1 (or the last one replaced, if it already starts there)."""
        ledgers, md, version = self.client.ledgers, self.metadata, self.version
        first = self.lac + 1
        while True:
            if md.state == LedgerState.CLOSED:
                raise LedgerClosed(f"ledger {self.ledger_id} was closed by someone else")
            if md.state == LedgerState.IN_RECOVERY:
                raise LedgerFenced(f"ledger {self.ledger_id} is being recovered: the writer is fenced")
            segments = list(md.segments)
            if segments[-1].first_entry_id == first:
                segments[-1] = Segment(first, tuple(ensemble))
            else:
                segments.append(Segment(first, tuple(ensemble)))
            changed = md.with_changes(segments=tuple(segments))
            try:
                self.version = ledgers.write(self.ledger_id, changed, version)
                self.metadata = changed
                return
            except MetadataVersionConflict:
                md, version = ledgers.read(self.ledger_id)

    # ---- close ----
    async def close(self, despite_failure: bool = False) -> LedgerMetadata:
        """Wait for every pending add, then CAS the metadata to CLOSED at the LAC.

        A failed writer raises its error instead, unless ``despite_failure``: then it closes at the last
        acknowledged entry, so that what was acknowledged stays readable (a failure path never loses it).
        """
        if self.pending:
            await asyncio.gather(*(a.future for a in list(self.pending)), return_exceptions=True)
        self.closed = True
        self._timer.cancel()
        if self.error is not None and not despite_failure and not isinstance(self.error, (LedgerFenced, Unauthorized)):
            raise self.error
        return await asyncio.to_thread(self._write_closed)

    def _write_closed(self) -> LedgerMetadata:
        ledgers, md, version = self.client.ledgers, self.metadata, self.version
        while True:
            if md.state == LedgerState.CLOSED:
                if (md.last_entry_id, md.length) == (self.lac, self.lac_length):
                    return md
                raise LedgerClosed(
                    f"ledger {self.ledger_id} was closed by someone else at entry {md.last_entry_id} "
                    f"(this writer's LAC is {self.lac})"
                )
            if md.state == LedgerState.IN_RECOVERY and not self.recovery:
                raise LedgerFenced(f"ledger {self.ledger_id} was recovered by someone else: the writer is fenced")
            closed = md.with_changes(state=LedgerState.CLOSED, last_entry_id=self.lac, length=self.lac_length)
            try:
                self.version = ledgers.write(self.ledger_id, closed, version)
                self.metadata = closed
                return closed
            except MetadataVersionConflict:
                md, version = ledgers.read(self.ledger_id)

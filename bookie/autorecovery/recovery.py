"""Autorecovery (BookKeeper: replication/Auditor.java, ReplicationWorker.java): an auditor that marks a lost bookie's
ledgers under-replicated, and replication workers that re-replicate marked ledgers — every `autorecovery run` process is
a worker and stands in the auditor election (the lowest vote audits).

Auditor: a bookie named in ledger metadata but no longer registered is lost. Once lost for
``lostBookieRecoveryDelay`` seconds (at once when several are lost together), every ledger naming it is marked
with it as the missing replica. It audits when the registrations change, when `trigger-audit` rewrites the delay,
and every ``audit_interval``.

Worker: takes a marker's lock (ephemeral: it dies with the worker), re-replicates what the ledger has on lost
bookies — an open ledger only after ``open_grace`` from the marking, then fenced and closed first — and removes the
marker. A ledger that fails keeps its lock for ``failed_lock_grace`` before others may try again. While it copies,
it says how far it is (entries and bytes, of the bytes estimated) in a record beside the lock
(bookie/meta/replication_progress.py), which `bkctl autorecovery status` shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import random
import time

from bookie.client.rereplication import BookieRecovery
from bookie.errors import BKError, NoSuchLedger
from bookie.meta.replication_progress import Progress, ReplicationProgress
from bookie.meta.underreplication import UnderReplicationManager

log = logging.getLogger(__name__)
PROGRESS_EVERY = 1.0  # seconds between writes of a worker's progress to ZooKeeper
_UNSEEN = object()  # the delay znode's version before the first audit: its existence is no trigger


class _LockedRecovery(BookieRecovery):
    """A worker's re-replication of one ledger, whose metadata swap happens only while the worker still holds the
    ledger's lock: lost with an expired session, or released as stale (`list-under-replicated --fix`) while this
    worker was cut off, it may be another's now, a bookie's GC among them, which frees the target's copy of a ledger
    whose metadata does not name it yet."""

    def __init__(self, core, lost: set[str], ur: UnderReplicationManager):
        super().__init__(core, lost)
        self.ur = ur

    def _swap(self, ledger_id: int, first: int, last: int, lost: str, position: int, target: str):
        if not self.ur.holds_lock(ledger_id):
            raise BKError(f"ledger {ledger_id}: its re-replication lock is no longer this worker's; not swapped")
        return super()._swap(ledger_id, first, last, lost, position, target)


class AutoRecovery:
    def __init__(
        self,
        core,
        name: str,
        poll: float = 1.0,
        open_grace: float = 30.0,
        failed_lock_grace: float = 60.0,
        audit_interval: float = 3600.0,
    ):
        self.core = core
        self.name = name
        self.poll, self.open_grace, self.failed_lock_grace = poll, open_grace, failed_lock_grace
        self.audit_interval = audit_interval
        self.ur = UnderReplicationManager(core.store)
        self.progress = ReplicationProgress(core.store)
        self._vote: str | None = None
        self._registered: frozenset[str] | None = None
        self._trigger_version = _UNSEEN
        self._lost_since: dict[str, float] = {}  # lost, not yet marked: since when
        self._marked: set[str] = set()
        self._next_audit = 0.0
        self._held_failed: dict[int, float] = {}  # ledger -> when to release its lock after a failure

    async def run(self, stop: asyncio.Event) -> None:
        await asyncio.to_thread(self.ur.ensure_layout)
        self._vote = await asyncio.to_thread(self.ur.vote, self.name)
        log.info("autorecovery %s: vote %s", self.name, self._vote)
        while not stop.is_set():
            try:
                if await self.is_auditor():
                    await self.audit()
                if await asyncio.to_thread(self.ur.is_enabled):
                    await self.replicate()
                await self._release_failed()
            except BKError as exc:
                log.warning("autorecovery round failed: %s", exc)
            try:
                await asyncio.wait_for(stop.wait(), self.poll)
            except TimeoutError:
                pass

    async def is_auditor(self) -> bool:
        if self._vote is None or await asyncio.to_thread(self.core.store.exists, self._vote) is None:
            self._vote = await asyncio.to_thread(self.ur.vote, self.name)  # our vote expired with a session
        elected = await asyncio.to_thread(self.ur.auditor)
        return elected is not None and elected[0] == self._vote

    # ---- auditor ----
    async def audit(self) -> None:
        registered = frozenset(b.bookie_id for b in await asyncio.to_thread(self.core.registry.list, True, True))
        delay_node = await asyncio.to_thread(self.core.store.exists, f"{self.ur.root}/lostBookieRecoveryDelay")
        trigger = delay_node.mzxid if delay_node else None
        triggered = self._trigger_version is not _UNSEEN and trigger != self._trigger_version
        now = time.monotonic()
        due = registered != self._registered or triggered or now >= self._next_audit or self._lost_since
        self._registered, self._trigger_version = registered, trigger
        if not due:
            return
        self._next_audit = now + self.audit_interval
        ledgers = await asyncio.to_thread(lambda: list(self.core.ledgers.iter_ledgers()))
        lost = {b for _, md in ledgers for s in md.segments for b in s.bookies} - registered
        self._marked &= lost  # a bookie that came back, or is no longer named, may be lost (and marked) anew
        newly_lost = lost - self._marked - self._lost_since.keys()
        self._lost_since = {b: self._lost_since.get(b, now) for b in lost - self._marked}
        delay = await asyncio.to_thread(self.ur.lost_bookie_recovery_delay)
        if triggered:
            ready = set(lost)  # trigger-audit: every lost bookie, now
        elif len(self._lost_since) > 1:
            ready = set(self._lost_since)  # several bookies lost at once: no waiting
        else:
            ready = {b for b, since in self._lost_since.items() if now - since >= delay}
        if held := sorted(newly_lost - ready):  # as BookKeeper's Auditor says it ("Delaying bookie audit by")
            log.info("auditor: delaying the audit of lost bookies %s by %s s (lostBookieRecoveryDelay)", held, delay)
        if not ready:
            return
        marked = 0
        for ledger_id, md in ledgers:
            missing = sorted(ready & {b for s in md.segments for b in s.bookies})
            if missing:
                await asyncio.to_thread(self.ur.mark, ledger_id, missing)
                marked += 1
        self._marked |= ready
        for bookie_id in ready:
            self._lost_since.pop(bookie_id, None)
        log.info("auditor: marked %d ledgers of lost bookies %s", marked, sorted(ready))

    # ---- replication worker ----
    async def replicate(self) -> None:
        ids = await asyncio.to_thread(lambda: list(self.ur.iter_ledger_ids()))
        random.shuffle(ids)  # workers spread over the markers
        registered = {b.bookie_id for b in await asyncio.to_thread(self.core.registry.list, True, True)}
        for ledger_id in ids:
            if ledger_id in self._held_failed or not await asyncio.to_thread(self.ur.try_lock, ledger_id, self.name):
                continue
            try:
                done = await self._replicate_ledger(ledger_id, registered)
            except BKError as exc:
                log.warning("re-replication of ledger %d failed: %s", ledger_id, exc)
                self._held_failed[ledger_id] = time.monotonic() + self.failed_lock_grace
                continue
            if done:
                await asyncio.to_thread(self.ur.unmark, ledger_id)
                log.info("ledger %d re-replicated", ledger_id)
            await asyncio.to_thread(self.ur.release_lock, ledger_id)

    async def _replicate_ledger(self, ledger_id: int, registered: set[str]) -> bool:
        marker = await asyncio.to_thread(self.ur.get, ledger_id)
        try:
            md, _ = await asyncio.to_thread(self.core.ledgers.read, ledger_id)
        except NoSuchLedger:
            return True  # deleted: nothing to re-replicate
        lost = {b for s in md.segments for b in s.bookies} - registered
        if not lost:
            return True  # the bookie came back, or someone else replaced it
        if not md.is_closed and lost & set(md.segments[-1].bookies):
            marked_at = (marker.ctime or 0) / 1000 if marker else 0
            if time.time() - marked_at < self.open_grace:
                return False  # its writer may still change the ensemble itself
        recovery = _LockedRecovery(self.core, lost, self.ur)
        total = recovery.bytes_to_copy([(ledger_id, md)])
        progress = await asyncio.to_thread(self.progress.start, ledger_id, self.name, total)
        reporter = _Reporter(self.progress, progress)
        recovery.progress = reporter.counted
        try:
            report = await recovery.run([(ledger_id, md)])
        finally:
            reporter.cancel()
            with contextlib.suppress(BKError):
                await asyncio.to_thread(self.progress.finish, ledger_id)
        if report.failed:
            raise BKError(report.failed[ledger_id])
        return True

    async def _release_failed(self) -> None:
        now = time.monotonic()
        for ledger_id, when in list(self._held_failed.items()):
            if now >= when:
                await asyncio.to_thread(self.ur.release_lock, ledger_id)
                del self._held_failed[ledger_id]


class _Reporter:
    """Counts the entries and bytes a worker's copy reports and writes them (bookie/meta/replication_progress.py)
    off the event loop, one write at a time, at most every ``PROGRESS_EVERY`` seconds: what is counted meanwhile
    is written at the end of that second, so a copy that waits shows what it had copied."""

    def __init__(self, records: ReplicationProgress, progress: Progress) -> None:
        self.records, self.progress = records, progress
        self.written = time.monotonic()
        self.due: asyncio.Handle | asyncio.Future[None] | None = None  # the write planned, or under way
        self.over = False

    def counted(self, kind: str, n: int) -> None:
        if kind != "bytes":
            return
        self.progress.entries += 1
        self.progress.copied += n
        if self.due is None:
            self._plan()

    def _plan(self) -> None:
        wait = max(0.0, self.written + PROGRESS_EVERY - time.monotonic())
        self.due = asyncio.get_running_loop().call_later(wait, self._write)

    def _write(self) -> None:
        self.written = time.monotonic()
        sent = dataclasses.replace(self.progress)
        self.due = asyncio.ensure_future(asyncio.to_thread(self._update, sent))
        self.due.add_done_callback(lambda _: self._written(sent))

    def _written(self, sent: Progress) -> None:
        self.due = None
        if self.progress.entries != sent.entries and not self.over:  # counted while it was written
            self._plan()

    def cancel(self) -> None:
        """The copy is over: no write after the record is removed."""
        self.over = True
        if isinstance(self.due, asyncio.Handle):
            self.due.cancel()

    def _update(self, progress: Progress) -> None:
        try:
            self.records.update(progress)
        except BKError as exc:  # finished meanwhile, or ZooKeeper away: the next write says it
            log.debug("progress of ledger %d not written: %s", progress.ledger_id, exc)

"""Moving a ledger segment's replica from a live bookie to another: what `bookie drain`, `cluster rebalance` and
`cluster repair-placement` are made of (BookKeeper: LedgerFragmentReplicator and MetadataUpdateLoop, as its
ReplicationWorker runs them; BP-56's migration).

One move, of the replica at ``position`` of segment ``index`` of a ledger, from bookie S to bookie T:
1. the ledger's re-replication lock is taken (``underreplication/locks/urL%010d``, the ephemeral znode BookKeeper's
   ReplicationWorker holds): no garbage collector, ours or BookKeeper's, collects T's fresh copy as over-replicated
   while the metadata does not name T yet, and no replication worker changes the ledger meanwhile. `bookie recover`
   takes no lock (nor does BookKeeper's): the swap finds its segment by its first entry, never by its index (a
   recovery's split shifts them), and refuses a T that joined the segment meanwhile;
2. the entries S holds by the write-set rule are read from S (and, what S cannot give, from the other replicas),
   digests checked, and written to T with RECOVERY_ADD, as re-replication does (bookie/client/rereplication.py);
3. they are read back from T: every one must be there;
4. T takes S's place in the segment by a versioned compare-and-set, re-applied on a conflict (a writer's ensemble
   change), and a no-op when S is no longer there; only while the lock is still this session's (lost with an
   expired session, it may be a collector's), and, once begun, finished before the lock is let go.
Only closed segments move: the ledger is closed, or the segment is not its last (a writer never adds to it again).
A live writer's last segment is never touched and a ledger is never fenced: a drained bookie, read-only, makes its
writers move off by ensemble change. S keeps its copy until its garbage collector finds the ledger closed and no
segment naming it (``gcOverreplicatedLedgerWaitTime``), so a reader holding the old metadata still finds the
entries there. An interrupted copy keeps what T acknowledged (the segment is split there, as ``bookie recover``
does); a crash anywhere leaves the metadata naming S or T, never a replica that lacks the entries, and a rerun
resumes from the metadata.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Set
from dataclasses import dataclass, field
from typing import Any

from bookie.client.core import ClientCore
from bookie.client.placement import replacement
from bookie.client.rereplication import (
    LEDGERS_AT_ONCE,
    BookieRecovery,
    RecoverReport,
    TargetRefused,
    replica_bytes,
    segment_at,
)
from bookie.errors import BKError, CorruptData, NoSuchLedger, NotEnoughBookies
from bookie.meta.ledger_metadata import LedgerMetadata
from bookie.meta.movement import MovementLock
from bookie.meta.underreplication import UnderReplicationManager

__all__ = ["Move", "MoveReport", "MovementLock", "ReplicaMover", "movable", "replica_bytes"]

log = logging.getLogger(__name__)
LOCK_WAIT = 60.0  # seconds a move waits for a held re-replication lock (a killed bkctl's session expiring)
LOCK_RETRY = 1.0


@dataclass(frozen=True, order=True)
class Move:
    """Move the replica ``source`` holds of the segment starting at ``first_entry_id`` to ``target``."""

    ledger_id: int
    first_entry_id: int
    source: str
    target: str

    def doc(self) -> dict[str, Any]:
        return {
            "ledgerId": self.ledger_id,
            "firstEntryId": self.first_entry_id,
            "from": self.source,
            "to": self.target,
        }


@dataclass
class MoveReport(RecoverReport):
    moved: list[Move] = field(default_factory=list)
    skipped: list[Move] = field(default_factory=list)  # planned, but the metadata changed: nothing to do
    open: list[int] = field(default_factory=list)  # an open ledger's last segment names a source
    busy: list[int] = field(default_factory=list)  # re-replication lock held by someone else past LOCK_WAIT

    @property
    def complete(self) -> bool:
        return not (self.failed or self.open or self.busy)

    def doc(self) -> dict[str, Any]:
        return {
            "moved": [m.doc() for m in self.moved],
            "skipped": [m.doc() for m in self.skipped],
            "open": sorted(self.open),
            "busy": sorted(self.busy),
            "failed": {str(k): v for k, v in sorted(self.failed.items())},
            "entries": self.entries,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 3),
            "mbPerSec": round(self.bytes / self.seconds / 1e6, 1) if self.seconds else 0.0,
        }


def movable(md: LedgerMetadata, index: int) -> bool:
    """The segment is closed: no writer adds to it again (the ledger is closed, or a later segment exists)."""
    return md.is_closed or index < len(md.segments) - 1


class ReplicaMover(BookieRecovery):
    """Moves replicas off live bookies; one mover per run (its report is the run's)."""

    def __init__(
        self,
        core: ClientCore,
        rate: float | None = None,
        progress: Callable[[str, int], None] = lambda kind, n: None,
        owner: str = "bkctl",
        lock_wait: float = LOCK_WAIT,
    ) -> None:
        """``rate``: bytes a second over all moves; ``progress(kind, n)`` with kind "bytes", "fragments",
        "moves" and "ledgers"; ``owner``: who the re-replication locks name."""
        super().__init__(core, set(), rate=rate, progress=progress)  # nothing unreadable: a live source is read
        self.read_back = True  # the target returns every entry copied before the metadata names it
        self.owner, self.lock_wait = owner, lock_wait
        self.locks = UnderReplicationManager(core.store)
        self.report: MoveReport = MoveReport()

    # ---- runs ----
    async def run(self, moves: Iterable[Move]) -> MoveReport:  # type: ignore[override]
        """Make the planned moves, ``LEDGERS_AT_ONCE`` ledgers at a time."""
        by_ledger: dict[int, list[Move]] = {}
        for move in moves:
            by_ledger.setdefault(move.ledger_id, []).append(move)
        return await self._ledgers(by_ledger, lambda lid, md: self._planned(lid, md, by_ledger[lid]))

    async def drain(
        self, sources: set[str], load: Mapping[str, int] | None = None, ledger_ids: list[int] | None = None
    ) -> MoveReport:
        """Move every closed segment's replica on ``sources`` to a writable bookie the placement policy picks (racks
        first, then the least ``load``: bytes each bookie holds, added to as replicas are placed on it)."""
        self.lost = set(sources)  # what _target keeps out of every ensemble
        loads = dict(load or {})
        corrupt: dict[int, str] = {}

        def unreadable(exc: CorruptData) -> None:
            if exc.ledger_id is not None:
                corrupt[exc.ledger_id] = str(exc)

        found = await asyncio.to_thread(self.affected, ledger_ids, unreadable)

        async def ledger(ledger_id: int, md: LedgerMetadata) -> None:
            for index in range(len(md.segments)):
                for position in range(len(md.segments[index].bookies)):
                    if md.segments[index].bookies[position] not in sources:  # as the moves so far left it
                        continue
                    if not movable(md, index):
                        self._open(ledger_id)
                        continue
                    refused: set[str] = set()
                    while True:  # a target that refuses the copy is replaced by another, if there is one
                        target = await self._target_by_load(md, index, position, loads, refused)
                        try:
                            md = await self._move(ledger_id, md, index, position, target)
                            break
                        except TargetRefused as exc:
                            log.warning("ledger %d: %s; another bookie will take it", ledger_id, exc)
                            refused.add(target)
                            md, _ = await asyncio.to_thread(self.core.ledgers.read, ledger_id)
                            if index >= len(md.segments) or md.segments[index].bookies[position] not in sources:
                                break  # changed meanwhile (a recovery): the next round looks again

        report = await self._ledgers({lid: [] for lid, _ in found}, ledger)
        report.failed.update(corrupt)
        return report

    async def _ledgers(
        self, ledger_ids: Mapping[int, object], work: Callable[[int, LedgerMetadata], Any]
    ) -> MoveReport:
        report = self.report = MoveReport(ledgers=sorted(ledger_ids))
        started = time.monotonic()
        window = asyncio.Semaphore(LEDGERS_AT_ONCE)

        async def one(ledger_id: int) -> None:
            async with window:
                try:
                    await self._locked(ledger_id, work)
                except (TimeoutError, BKError) as exc:
                    log.warning("ledger %d: replicas not moved: %s", ledger_id, exc)
                    report.failed[ledger_id] = str(exc) or type(exc).__name__
                self.progress("ledgers", 1)

        await asyncio.gather(*(one(lid) for lid in sorted(ledger_ids)))
        report.seconds = time.monotonic() - started
        return report

    async def _locked(self, ledger_id: int, work: Callable[[int, LedgerMetadata], Any]) -> None:
        """Run ``work`` on the ledger's current metadata, holding its re-replication lock."""
        deadline = time.monotonic() + self.lock_wait
        while not await asyncio.to_thread(self.locks.try_lock, ledger_id, self.owner):
            if time.monotonic() >= deadline:
                self.report.busy.append(ledger_id)
                return
            await asyncio.sleep(LOCK_RETRY)
        try:
            try:
                md, _ = await asyncio.to_thread(self.core.ledgers.read, ledger_id)
            except NoSuchLedger:
                return  # deleted meanwhile: nothing to move
            await work(ledger_id, md)
        finally:
            await asyncio.to_thread(self.locks.release_lock, ledger_id)

    async def _planned(self, ledger_id: int, md: LedgerMetadata, moves: list[Move]) -> None:
        for move in moves:
            index = segment_at(md, move.first_entry_id)
            bookies = md.segments[index].bookies if index is not None else ()
            if index is None or move.source not in bookies or move.target in bookies:
                self.report.skipped.append(move)
            elif not movable(md, index):
                self._open(ledger_id)
            else:
                md = await self._move(ledger_id, md, index, bookies.index(move.source), move.target)

    def _open(self, ledger_id: int) -> None:
        if ledger_id not in self.report.open:
            self.report.open.append(ledger_id)

    # ---- one move ----
    async def _move(self, ledger_id: int, md: LedgerMetadata, index: int, position: int, target: str) -> LedgerMetadata:
        segment = md.segments[index]
        source = segment.bookies[position]
        try:
            md = await self._fragment(ledger_id, md, index, position, md.password or b"", self.report, target)
        except NoSuchLedger:
            return md
        now = segment_at(md, segment.first_entry_id)
        if now is None or md.segments[now].bookies[position] != target:
            raise BKError(f"segment {segment.first_entry_id} changed during the move of {source}'s replica")
        self.report.moved.append(Move(ledger_id, segment.first_entry_id, source, target))
        self.progress("moves", 1)
        return md

    def _swap(self, ledger_id: int, first: int, last: int, lost: str, position: int, target: str) -> LedgerMetadata:
        """The swap, only while this mover still holds the ledger's re-replication lock: a lock lost with an expired
        ZooKeeper session may be another's now (a GC collecting the target's copy as over-replicated)."""
        if not self.locks.holds_lock(ledger_id):
            raise BKError(f"ledger {ledger_id}: its re-replication lock was lost (ZooKeeper session expired?)")
        return super()._swap(ledger_id, first, last, lost, position, target)

    async def _target_by_load(
        self, md: LedgerMetadata, index: int, position: int, loads: dict[str, int], refused: Set[str]
    ) -> str:
        """The placement policy's pick (racks first, then the least loaded), never a source nor a bookie that
        refused this replica; NotEnoughBookies, naming the refusals, when none is left."""
        writable = [b for b in await self._writable_bookies() if b.bookie_id not in self.lost | refused]
        if not writable:
            raise NotEnoughBookies("no writable bookie to move replicas to")
        try:
            target = replacement(writable, list(md.segments[index].bookies), position, self.lost | refused, load=loads)
        except NotEnoughBookies as exc:
            if not refused:
                raise
            raise NotEnoughBookies(f"{exc}: {', '.join(sorted(refused))} refused it") from None
        loads[target] = loads.get(target, 0) + replica_bytes(md, index, position)
        return target

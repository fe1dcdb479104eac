"""`bookie decommission`: what a stopped bookie held re-replicated, pass after pass, until no ledger names it, saying
where it is: ledgers and bytes as they move (the progress callback), and, once nothing has moved for
``stall_after`` seconds, the ledgers that block it and why (admin/stuck.py's reasons), instead of waiting in
silence as BookKeeper's decommission does (apache/bookkeeper#3338, #3887; apache/pulsar#21607).

A ledger that fails is tried again in the next pass, ``RETRY_AFTER`` seconds later and twice as long after each
pass that moved nothing (up to ``RETRY_MAX``): a bookie may come back or join meanwhile. The deadline ends the
wait; the copies under way keep what their targets acknowledged (bookie/client/rereplication.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from admin.stuck import Stuck, explain
from bookie.client.core import ClientCore
from bookie.client.rereplication import BookieRecovery, RecoverReport
from bookie.errors import BKError
from bookie.meta.ledger_metadata import LedgerMetadata

RETRY_AFTER = 5.0  # seconds before failed ledgers are tried again
RETRY_MAX = 60.0
MOVING = frozenset({"bytes", "fragments", "recovered"})  # the progress kinds that are progress
WHO_WOULD_DO_IT = frozenset({"disabled", "no-worker", "no-auditor", "delayed"})  # admin.stuck's, about autorecovery


@dataclass
class DecommissionReport:
    bookie_id: str
    ledgers: int = 0  # naming the bookie when it started
    estimated_bytes: int = 0  # what their replicas on it hold, from the metadata
    rounds: list[RecoverReport] = field(default_factory=list)
    blockers: list[Stuck] = field(default_factory=list)  # at the last stall, or when the deadline came
    errors: dict[int, str] = field(default_factory=dict)  # the last failure of each ledger that still names it
    done: bool = False  # no ledger names the bookie
    timed_out: bool = False
    under_way: BookieRecovery | None = None  # the pass being made, not in ``rounds`` yet

    def doc(self) -> dict[str, Any]:
        rounds = self.rounds + ([self.under_way.report] if self.under_way is not None else [])
        recovered = sorted({lid for r in rounds for lid in r.recovered})
        return {
            "bookieId": self.bookie_id,
            "decommissioned": self.done,
            "timedOut": self.timed_out,
            "ledgers": self.ledgers,
            "estimatedBytes": self.estimated_bytes,
            "recovered": recovered,
            "entries": sum(r.entries for r in rounds),
            "bytes": sum(r.bytes for r in rounds),
            "blockers": [self.blocker_doc(b) for b in self.blockers],
            "rounds": [r.doc() for r in rounds],
        }

    def blocker_doc(self, stuck: Stuck) -> dict[str, Any]:
        return stuck.doc() | {"lastError": self.errors.get(stuck.ledger_id)}


class Decommission:
    """One decommission of ``bookie_id``; ``progress(kind, n)`` as :class:`BookieRecovery` calls it (the kinds of
    every pass), ``on_stall(report)`` each time nothing has moved for ``stall_after`` seconds, with
    ``report.blockers`` just found (from the client's event loop)."""

    def __init__(
        self,
        core: ClientCore,
        bookie_id: str,
        stall_after: float,
        progress: Callable[[str, int], None] = lambda kind, n: None,
        on_stall: Callable[[DecommissionReport], None] = lambda report: None,
    ) -> None:
        self.core, self.bookie_id, self.stall_after = core, bookie_id, stall_after
        self.progress, self.on_stall = progress, on_stall
        self.report = DecommissionReport(bookie_id)
        self.moved_at = time.monotonic()
        self._stall_reported = False  # since the last movement
        self._pending: set[int] = set()  # the ledgers of the pass under way, or of the next
        self.recovery: BookieRecovery | None = None

    def affected(self, ledger_ids: list[int] | None = None) -> list[tuple[int, LedgerMetadata]]:
        """The ledgers naming the bookie now (of ``ledger_ids``; None: all), and (the first time) the totals the
        progress starts from (blocking)."""
        recovery = BookieRecovery(self.core, {self.bookie_id})
        ledgers = recovery.affected(ledger_ids)
        if not self.report.ledgers:
            self.report.ledgers, self.report.estimated_bytes = len(ledgers), recovery.bytes_to_copy(ledgers)
        return ledgers

    def _moved(self, kind: str, n: int) -> None:
        if kind in MOVING:
            self.moved_at = time.monotonic()
            self._stall_reported = False
        self.progress(kind, n)

    async def run(self, ledgers: list[tuple[int, LedgerMetadata]], timeout: float) -> DecommissionReport:
        """Pass after pass over ``ledgers`` (from :meth:`affected`) and whatever names the bookie after each, until
        none does or ``timeout`` seconds are over (``report.timed_out``, with the blockers of that moment)."""
        report = self.report
        deadline = time.monotonic() + timeout
        self.moved_at = time.monotonic()
        retry = RETRY_AFTER
        while ledgers:
            self.recovery = BookieRecovery(self.core, {self.bookie_id}, progress=self._moved)
            self._pending = {lid for lid, _ in ledgers}
            moved_before = self.moved_at
            report.under_way = self.recovery
            task = asyncio.ensure_future(self.recovery.run(ledgers))
            finished = await self._wait(task, deadline)
            report.rounds.append(self.recovery.report)
            report.under_way = None
            if not finished:
                return report
            failed = task.result().failed
            report.errors = dict(failed)
            # after failures, only those are read again (a stopped bookie joins no new ensemble); a pass without
            # any, or failed ledgers that no longer name it, get a look at every ledger before it is done
            ledgers = await asyncio.to_thread(self.affected, sorted(failed) or None)
            if failed and not ledgers:
                ledgers = await asyncio.to_thread(self.affected)
            elif ledgers and failed:
                if self.moved_at > moved_before:
                    retry = RETRY_AFTER
                self.recovery, self._pending = None, {lid for lid, _ in ledgers}
                if not await self._wait(asyncio.ensure_future(asyncio.sleep(retry)), deadline):
                    return report
                retry = min(2 * retry, RETRY_MAX)
        report.done, report.blockers = True, []
        return report

    async def _wait(self, task: asyncio.Future[Any], deadline: float) -> bool:
        """Wait for ``task``, reporting the blockers when nothing moves for ``stall_after`` seconds; False when the
        deadline came first (the task cancelled, ``report.timed_out`` and its blockers set)."""
        while True:
            now = time.monotonic()
            if now >= deadline:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                self.report.timed_out = True
                self.report.blockers = await self._blockers()
                return False
            stall_at = self.moved_at + self.stall_after
            if not self._stall_reported and now >= stall_at:
                self._stall_reported = True
                self.report.blockers = await self._blockers()
                self.on_stall(self.report)
                continue
            wake = deadline if self._stall_reported else min(deadline, stall_at)
            try:
                done, _ = await asyncio.wait([task], timeout=max(0.0, wake - now))
            except asyncio.CancelledError:  # interrupted: the copies under way keep what their targets acknowledged
                task.cancel()
                raise
            if done:
                return True

    async def _blockers(self) -> list[Stuck]:
        """Why each ledger not done yet does not move."""
        pending = set(self._pending)
        if self.recovery is not None:
            self.report.errors |= self.recovery.report.failed
            pending -= set(self.recovery.report.recovered)
        try:
            found = await explain(self.core, sorted(pending))
        except BKError as exc:  # the list is still worth having, unclassified
            seen, again = f"not classified ({exc})", "run the decommission again"
            return [Stuck(lid, "unknown", seen, 0, None, again, False) for lid in sorted(pending)]
        return [self._ours(stuck) for stuck in found]

    def _ours(self, stuck: Stuck) -> Stuck:
        """A reason about who would re-replicate the ledger (autorecovery) is none here, the decommission does it:
        what its own copy met instead."""
        if stuck.reason not in WHO_WOULD_DO_IT:
            return stuck
        error = self.report.errors.get(stuck.ledger_id)
        if error is not None:
            return dataclasses.replace(
                stuck, reason="unknown", detail=f"its copy failed: {error}", fix="tried again; see the error"
            )
        return dataclasses.replace(
            stuck,
            reason="in-progress",
            detail=f"being copied by this decommission, nothing copied for {self.stall_after:g} s",
            fix="wait; a bookie it reads from or writes to may be slow or paused (`bkctl cluster check`)",
        )

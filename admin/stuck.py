"""Why each under-replicated ledger is stuck, and the safe fix (`bkctl autorecovery list-under-replicated --explain`).

Every ledger gets ONE reason from :data:`REASONS`, the first that holds in that order (the root cause before what it
hides), with a one-line detail and the fix in words an operator can act on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from bookie.client.core import ClientCore
from bookie.errors import NoSuchLedger
from bookie.meta.underreplication import UnderReplicationManager

REASONS: tuple[str, ...] = (
    "deleted",  # a marker left for a ledger that no longer exists
    "lost",  # every replica of some entry is gone
    "no-eligible-bookie",  # the placement policy has no bookie to copy to
    "stale-lock",  # locked by a worker whose ZooKeeper session is gone
    "in-progress",  # a live worker holds the lock
    "empty",  # nothing to copy; BookKeeper's workers skip it forever (apache/bookkeeper#3220)
    "disabled",  # autorecovery is disabled
    "no-worker",  # no autorecovery process runs
    "no-auditor",  # nothing marks it: no auditor elected
    "delayed",  # waiting for a grace period (lostBookieRecoveryDelay, an open ledger's grace)
    "unknown",  # none of these: what was seen is in the detail
)


@dataclass(frozen=True)
class Stuck:
    """One ledger, why it does not get re-replicated, and what fixes it."""

    ledger_id: int
    reason: str  # one of REASONS
    detail: str  # one line: the entries lost, the constraint, the holder, until when...
    bytes: int  # the ledger's bytes (0 when unknown)
    marked_at: int | None  # ms since epoch; None for a ledger that is not marked
    fix: str
    safe_fix: bool  # whether --fix applies it

    def doc(self) -> dict[str, Any]:
        return {
            "ledgerId": self.ledger_id,
            "reason": self.reason,
            "detail": self.detail,
            "bytes": self.bytes,
            "markedAt": self.marked_at,
            "fix": self.fix,
            "safeFix": self.safe_fix,
        }


async def explain(core: ClientCore, ledger_ids: Iterable[int] | None = None) -> list[Stuck]:
    """Why each ledger is stuck, by ledger id. ``ledger_ids`` None: every ledger marked under-replicated; else those
    ledgers, marked or not (a decommission asks why its own ledgers do not move)."""
    ur = UnderReplicationManager(core.store)
    if ledger_ids is None:
        ids = await asyncio.to_thread(lambda: list(ur.iter_ledger_ids()))
    else:
        ids = sorted(set(ledger_ids))
    out = []
    for ledger_id in ids:
        marker = await asyncio.to_thread(ur.get, ledger_id)
        marked_at = marker.ctime if marker is not None else None
        try:
            md, _ = await asyncio.to_thread(core.ledgers.read, ledger_id)
        except NoSuchLedger:
            out.append(
                Stuck(
                    ledger_id,
                    "deleted",
                    "the ledger's metadata is gone",
                    0,
                    marked_at,
                    f"remove the marker: bkctl autorecovery list-under-replicated --explain --fix (ledger {ledger_id})",
                    marker is not None,
                )
            )
            continue
        seen = f"state {md.state.name}, {len(md.segments)} segments"
        out.append(Stuck(ledger_id, "unknown", seen, md.length, marked_at, "look at the autorecovery logs", False))
    return out

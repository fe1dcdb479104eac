"""`bookie decommission`: bookie/client/decommission.py's passes, with the ledgers that block it classified by the
reasons of admin/stuck/ (`autorecovery list-under-replicated --explain`), each with its fix."""

from __future__ import annotations

import dataclasses

from admin.stuck import Stuck, explain
from bookie.client import decommission as passes
from bookie.client.decommission import BookieBack, DecommissionReport
from bookie.errors import BKError

__all__ = ["BookieBack", "Decommission", "DecommissionReport"]
WHO_WOULD_DO_IT = frozenset({"disabled", "no-worker", "no-auditor", "delayed"})  # admin.stuck's, about autorecovery


class Decommission(passes.Decommission):
    """One decommission, its blockers classified."""

    async def _blockers(self) -> list[Stuck]:
        """Why each ledger not done yet does not move."""
        pending = self.pending()
        try:
            found = await explain(self.core, pending)
        except BKError as exc:  # the list is still worth having, unclassified
            seen, again = f"not classified ({exc})", "run the decommission again"
            return [Stuck(lid, "unknown", seen, 0, None, again, False) for lid in pending]
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

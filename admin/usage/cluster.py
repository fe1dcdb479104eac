"""``bkctl cluster usage``: every bookie's storage explained (admin/usage/explain.py), side by side, with the gap
between what each holds and what the metadata says it should hold split by cause.

A bookie's gap is its entry logs' bytes less its expected bytes. Causes, each the bytes its ledgers hold in the
bookie's entry logs:

| cause             | bytes                                                                                     |
|-------------------|-------------------------------------------------------------------------------------------|
| deleted           | ledgers deleted in the metadata, not yet collected by the bookie                          |
| not-in-metadata   | ledgers neither the metadata nor the bookie's index has (dead entries compaction has not taken) |
| not-owned         | replicas the bookie no longer owns (gcOverreplicatedLedgerWaitTime)                       |
| other             | the rest: entry-log headers and ledgers maps, open ledgers' estimates, entries superseded |

With Pulsar's metadata, ``pulsarOrphans`` also gives the bytes each bookie holds of ledgers Pulsar no longer
references (what ``bkctl pulsar orphans --delete`` would free). They are not in the gap: the ledgers' metadata still
has them, so the bookie is expected to hold them.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

from admin.usage.explain import Explanation, document
from admin.usage.ledgers import State

CAUSES = {State.DELETED: "deleted", State.NOT_IN_METADATA: "not-in-metadata", State.NOT_OWNED: "not-owned"}


@dataclass
class BookieUsage:
    """One bookie's line: its explanation, and its registration state (writable, read-only)."""

    explained: Explanation
    state: str
    orphans: Collection[int] | None = None  # ledgers Pulsar no longer references; None: Pulsar's metadata not read

    @property
    def gap_by_cause(self) -> dict[str, int]:
        causes = dict.fromkeys([*CAUSES.values(), "other"], 0)
        for usage in self.explained.ledgers.values():
            cause = CAUSES.get(usage.facts.state)
            if cause is not None:
                causes[cause] += usage.held
        gap = self.explained.entry_log_bytes - self.explained.expected_bytes
        causes["other"] = gap - sum(causes.values())
        return causes

    @property
    def orphan_bytes(self) -> int | None:
        if self.orphans is None:
            return None
        return sum(self.explained.ledgers[lid].held for lid in self.orphans if lid in self.explained.ledgers)

    def doc(self, logs: int | None) -> dict[str, Any]:
        """The bookie's ``bookie usage`` document, with its state, its gap by cause and its Pulsar orphans' bytes."""
        return {
            **document(self.explained, logs),
            "state": self.state,
            "gapByCause": self.gap_by_cause,
            "pulsarOrphanBytes": self.orphan_bytes,
        }


def by_gap(bookies: Iterable[BookieUsage]) -> list[BookieUsage]:
    """Largest gap first."""
    return sorted(bookies, key=lambda b: (-(b.explained.entry_log_bytes - b.explained.expected_bytes), b.state))


def totals(bookies: list[BookieUsage]) -> dict[str, Any]:
    """The cluster's sums."""
    causes: dict[str, int] = {}
    for bookie in bookies:
        for cause, size in bookie.gap_by_cause.items():
            causes[cause] = causes.get(cause, 0) + size
    orphans = [b.orphan_bytes for b in bookies]
    return {
        "bookies": len(bookies),
        "entryLogBytes": sum(b.explained.entry_log_bytes for b in bookies),
        "liveBytes": sum(b.explained.live_bytes for b in bookies),
        "expectedBytes": sum(b.explained.expected_bytes for b in bookies),
        "gapBytes": sum(b.explained.entry_log_bytes - b.explained.expected_bytes for b in bookies),
        "reclaimableBytes": sum(b.explained.reclaim.reclaimed for b in bookies),
        "gapByCause": causes,
        "pulsarOrphanBytes": None if any(o is None for o in orphans) else sum(o or 0 for o in orphans),
    }

"""Draining live bookies (``bkctl bookie drain``): which replicas leave them and where to, then the moves, made by
the replica mover (bookie/client/move.py) while the bookies serve.

The bookies are made read-only first (bkctl does it, through their admin services): no new ensemble names them, and
the writer of an open ledger whose last segment names one changes its ensemble at its next add, which closes that
segment; it then moves like the others. An open ledger whose writer stays idle cannot move: only its writer (an add,
or closing it) or a recovery open (``bkctl ledger recover``, which fences it and so breaks a live writer) finishes
it. A drain never fences: it lists those ledgers.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bookie.client.move import Move, MoveReport, ReplicaMover, movable, replica_bytes
from bookie.client.placement import replacement
from bookie.errors import NotEnoughBookies
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.ledger_metadata import LedgerMetadata
from bookie.meta.registration import RegisteredBookie
from bookie.meta.store import MetadataStore

POLL_INTERVAL = 1.0  # seconds between looks at the ledgers left, while their writers move off


@dataclass(frozen=True)
class PlannedMove:
    """A closed segment's replica on a drained bookie, its estimated bytes, and where the plan sends it."""

    ledger_id: int
    first_entry_id: int
    source: str
    bytes: int
    target: str | None  # None: no writable bookie can take it (placement)

    def doc(self) -> dict[str, Any]:
        return {
            "ledgerId": self.ledger_id,
            "firstEntryId": self.first_entry_id,
            "from": self.source,
            "to": self.target,
            "bytes": self.bytes,
        }


@dataclass
class DrainPlan:
    sources: list[str]
    moves: list[PlannedMove]
    open: dict[int, list[str]]  # ledger -> the drained bookies its open last segment names (they wait for writers)
    load: dict[str, int]  # bytes each other writable bookie holds now
    load_from: dict[str, str]  # how each was known: "storage" (its storage view) or "metadata" (estimated)

    @property
    def ledgers(self) -> int:
        return len({m.ledger_id for m in self.moves} | set(self.open))

    @property
    def bytes(self) -> int:
        return sum(m.bytes for m in self.moves)

    def by_target(self) -> dict[str, int]:
        """Bytes each target would get."""
        totals: dict[str, int] = {}
        for move in self.moves:
            if move.target is not None:
                totals[move.target] = totals.get(move.target, 0) + move.bytes
        return totals

    def unplaceable(self) -> str | None:
        """Why some replica has nowhere to go (None when each has a target): said before anything is done."""
        stuck = sorted({m.ledger_id for m in self.moves if m.target is None})
        if not stuck:
            return None
        shown = ", ".join(map(str, stuck[:5])) + (", ..." if len(stuck) > 5 else "")
        return (
            f"{len(stuck)} ledgers have a replica no writable bookie can take (every other one is in its segment or "
            f"drained): ledger {shown}; add bookies, or drain fewer at once"
        )

    def doc(self) -> dict[str, Any]:
        return {
            "bookies": self.sources,
            "moves": [m.doc() for m in self.moves],
            "open": [{"ledgerId": lid, "bookies": bookies} for lid, bookies in sorted(self.open.items())],
            "totals": {
                "ledgers": self.ledgers,
                "segments": len(self.moves),
                "bytes": self.bytes,
                "byTarget": self.by_target(),
            },
            "load": [{"bookieId": b, "bytes": n, "from": self.load_from[b]} for b, n in sorted(self.load.items())],
            "dryRun": True,
        }


def scan(
    store: MetadataStore, sources: set[str], on_corrupt: Callable[[Exception], None]
) -> tuple[dict[int, LedgerMetadata], dict[str, int]]:
    """One pass over every ledger's metadata: those naming the ``sources``, and the bytes each bookie holds by the
    metadata (the estimate for a bookie that has no storage view: a Java bookie; open ledgers count 0). Metadata
    that cannot be parsed goes to ``on_corrupt`` and is skipped."""
    naming: dict[int, LedgerMetadata] = {}
    estimate: dict[str, int] = {}
    for ledger_id, md in LedgerManager(store).iter_ledgers(on_corrupt=on_corrupt):
        for index, segment in enumerate(md.segments):
            for position, bookie_id in enumerate(segment.bookies):
                estimate[bookie_id] = estimate.get(bookie_id, 0) + replica_bytes(md, index, position)
            if sources.intersection(segment.bookies):
                naming[ledger_id] = md
    return naming, estimate


def plan(
    naming: dict[int, LedgerMetadata],
    sources: set[str],
    writable: list[RegisteredBookie],
    load: dict[str, int],
    load_from: dict[str, str],
) -> DrainPlan:
    """What a drain would move and where: each closed segment's replica on a source goes where the mover would send
    it (bookie.client.placement's ``replacement`` with the load, counting what the plan already sent each bookie)."""
    planned = dict(load)
    moves, still_open = [], {}
    for ledger_id, md in sorted(naming.items()):
        for index, segment in enumerate(md.segments):
            named = [(p, b) for p, b in enumerate(segment.bookies) if b in sources]
            if named and not movable(md, index):
                still_open[ledger_id] = sorted({b for _, b in named})
                continue
            ensemble = list(segment.bookies)  # as the moves before this one leave it
            for position, source in named:
                size = replica_bytes(md, index, position)
                try:
                    chosen = replacement(writable, ensemble, position, sources, load=planned)
                except NotEnoughBookies:
                    moves.append(PlannedMove(ledger_id, segment.first_entry_id, source, size, None))
                    continue
                ensemble[position] = chosen
                planned[chosen] = planned.get(chosen, 0) + size
                moves.append(PlannedMove(ledger_id, segment.first_entry_id, source, size, chosen))
    return DrainPlan(sorted(sources), moves, still_open, load, load_from)


@dataclass
class DrainReport:
    """What a drain did over its rounds: the closed segments, then those that closed while it waited for writers."""

    moved: list[Move] = field(default_factory=list)
    open: list[int] = field(default_factory=list)  # as the last round left them (each round retries them all)
    busy: list[int] = field(default_factory=list)  # locked by another process past the mover's wait
    failed: dict[int, str] = field(default_factory=dict)
    kept_until: dict[int, int] = field(default_factory=dict)
    entries: int = 0
    bytes: int = 0
    seconds: float = 0.0

    def add(self, report: MoveReport) -> None:
        self.moved += report.moved
        self.failed |= report.failed
        self.kept_until |= report.kept_until
        self.open = sorted(set(report.open) - set(report.failed))
        self.busy = sorted(set(self.busy) | set(report.busy))
        self.entries += report.entries
        self.bytes += report.bytes
        self.seconds += report.seconds

    def doc(self) -> dict[str, Any]:
        """MoveReport's document, over every round (``open`` aside: the caller says what finishes each)."""
        return {
            "moved": [m.doc() for m in self.moved],
            "ledgersMoved": len({m.ledger_id for m in self.moved}),
            "busy": self.busy,
            "failed": {str(k): v for k, v in sorted(self.failed.items())},
            "entries": self.entries,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 3),
            "mbPerSec": round(self.bytes / self.seconds / 1e6, 1) if self.seconds else 0.0,
        }


async def drain(
    mover: ReplicaMover,
    sources: set[str],
    load: dict[str, int],
    wait: float,
    report: DrainReport,
    writers_move: bool = True,
) -> DrainReport:
    """Move every closed segment off the ``sources``; then, when their writers move off (the sources are read-only:
    ``writers_move``), for up to ``wait`` seconds, the open ledgers' segments as they close. A ledger whose
    re-replication lock another process holds is waited for by the mover (a killed drain's, until its session
    expires), then left ``busy``. ``report`` holds each round as it ends."""
    report.add(await mover.drain(sources, load))
    deadline = time.monotonic() + wait
    while writers_move and report.open and time.monotonic() < deadline:
        await asyncio.sleep(POLL_INTERVAL)
        report.add(await mover.drain(sources, load, ledger_ids=report.open))
    return report


def still_named(store: MetadataStore, sources: set[str]) -> tuple[dict[int, list[str]], list[int]]:
    """After the moves, one more look at every ledger: those whose open last segment names a source (with those
    sources: they wait for their writers), and those with a closed segment still naming one (written or changed
    while the drain ran: a rerun moves them). Unreadable metadata is skipped: the drain's own pass reported it."""
    still_open: dict[int, list[str]] = {}
    closed: list[int] = []
    for ledger_id, md in LedgerManager(store).iter_ledgers(on_corrupt=lambda exc: None):
        if any(sources.intersection(s.bookies) for index, s in enumerate(md.segments) if movable(md, index)):
            closed.append(ledger_id)
        named = sorted(sources.intersection(md.segments[-1].bookies)) if md.segments else []
        if not md.is_closed and named:
            still_open[ledger_id] = named
    return still_open, closed


SUMMARY_FIELDS = {
    "bookies": "one object per bookie drained: bookieId, readOnly (it was made read-only), why (why not; else null)",
    "complete": "no ledger names the bookies any more (exit 0)",
    "moved": "one object per replica moved: ledgerId, firstEntryId (its segment), from, to",
    "ledgersMoved": "how many ledgers had replicas moved",
    "busy": "ledgers whose re-replication lock another process held past the wait: run the drain again",
    "failed": "ledger id (a string) to why its replicas were not moved (exit 1)",
    "entries": "entries copied",
    "bytes": "bytes copied",
    "seconds": "time spent moving",
    "mbPerSec": "bytes copied a second, in MB",
    "open": "open ledgers whose last segment still names the bookies (exit 3): ledgerId, bookies, finish (what "
    "finishes it: its writer's next add or closing it, or `bkctl ledger recover`, which fences it)",
    "left": "ledgers with a closed segment that names the bookies still, written or changed while the drain ran "
    "(exit 3): run the drain again",
    "nextSteps": "when complete, the commands to run next: check-impact, then decommission once the bookie is stopped",
}


def summary(
    states: list[dict[str, Any]], report: DrainReport, still_open: dict[int, list[str]], left: list[int]
) -> dict[str, Any]:
    """The document a drain ends with (``SUMMARY_FIELDS``): the bookies' read-only states, what moved, what is
    left and what to do next."""
    complete = not (still_open or left or report.busy or report.failed)
    sources = [s["bookieId"] for s in states]
    return {
        "bookies": states,
        "complete": complete,
        **report.doc(),
        "open": [{"ledgerId": lid, "bookies": b, "finish": finish(lid)} for lid, b in sorted(still_open.items())],
        "left": sorted(set(left) - set(report.failed) - set(report.busy)),
        "nextSteps": next_steps(sources) if complete else [],
    }


def finish(ledger_id: int) -> str:
    """What finishes an open ledger a drain left."""
    return (
        f"its writer's next add (or closing it) moves it off; `bkctl ledger recover {ledger_id}` closes it now "
        "but fences it: a live writer fails"
    )


def next_steps(sources: list[str]) -> list[str]:
    steps = [f"bkctl cluster check-impact --bookie {' --bookie '.join(sources)}"]
    steps += [f"stop bookie {b}, then: bkctl bookie decommission {b} (nothing left to copy)" for b in sources]
    return steps

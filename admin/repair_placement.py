"""Repair placement (BP-54's repair, run by an operator): plan replica moves that make every segment that fails
the rack-aware check adhere, and run them with the replica mover (bookie.client.move).

A segment is planned when :func:`~admin.check.placement.segment_verdict` says FAIL, as ``cluster check`` sees it
(racks from bookie.meta.registration: the rack mapping, the registration, the default rack), and it can move: the
ledger is closed, or the segment is not the last (``movable``). Its repair is
:func:`admin.check.repair.plan_segment`'s: the fewest changed positions, targets among the writable bookies, the
emptiest first. A segment with no repair (too few racks or bookies), or an open ledger's last segment, is listed
with why. Everything is planned again from the metadata on every run, so a run that stopped is resumed by running
it again.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from admin.check.placement import FAIL, segment_verdict
from admin.check.repair import plan_segment
from bookie.client.move import Move, movable, replica_bytes
from bookie.errors import NoSuchLedger
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.ledger_metadata import LedgerMetadata
from bookie.meta.registration import DEFAULT_RACK, WRITABLE, RegisteredBookie

OPEN_SEGMENT = "the ledger is open and this is its last segment: it is repaired once the writer closes it"


@dataclass(frozen=True)
class PlannedMove:
    move: Move
    bytes: int
    source_rack: str
    target_rack: str

    def doc(self) -> dict:
        return {
            **self.move.doc(),
            "fromRack": self.source_rack,
            "toRack": self.target_rack,
            "bytes": self.bytes,
        }


@dataclass(frozen=True)
class Unrepairable:
    ledger_id: int
    segment: int  # first entry id
    bookies: tuple[str, ...]
    closed: bool  # the ledger is closed: `cluster check` reports it
    reason: str

    def doc(self) -> dict:
        return {
            "ledgerId": self.ledger_id,
            "firstEntryId": self.segment,
            "bookies": list(self.bookies),
            "ledgerClosed": self.closed,
            "reason": self.reason,
        }


@dataclass
class PlacementPlan:
    checked_ledgers: int = 0
    failing_segments: int = 0
    moves: list[PlannedMove] = field(default_factory=list)
    unrepairable: list[Unrepairable] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        return sum(m.bytes for m in self.moves)

    @property
    def check_clean_after(self) -> bool:
        """Whether ``cluster check`` finds no placement failure once the moves are made: no closed ledger keeps a
        failing segment (the check skips open ledgers)."""
        return not any(u.closed for u in self.unrepairable)

    def doc(self) -> dict:
        return {
            "checkedLedgers": self.checked_ledgers,
            "failingSegments": self.failing_segments,
            "moves": [m.doc() for m in self.moves],
            "bytes": self.bytes,
            "unrepairable": [u.doc() for u in self.unrepairable],
        }


def plan_repairs(
    ledgers: LedgerManager, registered: list[RegisteredBookie], ledger_ids: list[int] | None = None
) -> PlacementPlan:
    """The moves that repair the placement of every ledger (or of ``ledger_ids``). Blocking: it reads every
    ledger's metadata. Each bookie's load (bytes of the replicas the ledgers put on it) steers targets to the
    emptiest bookies of a rack."""
    rack_of: dict[str, str] = defaultdict(lambda: DEFAULT_RACK, {b.bookie_id: b.rack for b in registered})
    cluster_racks = len({b.rack for b in registered}) or 1
    writable = {b.bookie_id: b.rack for b in registered if b.state == WRITABLE}
    load: dict[str, int] = defaultdict(int)
    failing = []
    seen = set()
    for ledger_id, md in ledgers.iter_ledgers(ledger_ids):
        seen.add(ledger_id)
        for index, segment in enumerate(md.segments):
            for position, bookie_id in enumerate(segment.bookies):
                load[bookie_id] += replica_bytes(md, index, position)
            if segment_verdict(segment.bookies, md.write_quorum_size, rack_of, cluster_racks) == FAIL:
                failing.append((ledger_id, md, index))
    if ledger_ids is not None and len(seen) < len(set(ledger_ids)):
        missing = sorted(set(ledger_ids) - seen)
        raise NoSuchLedger(f"ledger {', '.join(map(str, missing))} does not exist")
    plan = PlacementPlan(checked_ledgers=len(seen), failing_segments=len(failing))
    for ledger_id, md, index in failing:
        segment = md.segments[index]
        if not movable(md, index):
            plan.unrepairable.append(
                Unrepairable(ledger_id, segment.first_entry_id, segment.bookies, False, OPEN_SEGMENT)
            )
            continue

        def cost(position: int, md: LedgerMetadata = md, index: int = index) -> int:
            return replica_bytes(md, index, position)

        repair = plan_segment(
            segment.bookies, md.write_quorum_size, rack_of, cluster_racks, writable, cost=cost, load=load
        )
        if not repair.changes:
            plan.unrepairable.append(
                Unrepairable(ledger_id, segment.first_entry_id, segment.bookies, md.is_closed, repair.reason or "")
            )
        for position, target in sorted(repair.changes.items()):
            source = segment.bookies[position]
            move = Move(ledger_id, segment.first_entry_id, source, target)
            plan.moves.append(PlannedMove(move, replica_bytes(md, index, position), rack_of[source], writable[target]))
    return plan

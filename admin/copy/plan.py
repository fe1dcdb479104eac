"""What a copy will do, decided before anything is written: the source's ledgers (selected, and open ones left out
or read up to their LAC, as the export plans them), what each ledger id is in the target, and Spark tasks of whole
ledgers (one ledger is never split across writers).

A ledger id in the target is one of:

- absent: the ledger is copied;
- a finished copy: CLOSED, without the copy's marker, with the source's last entry, length, custom metadata, digest
  type, password and quorum sizes (for a source ledger still open: closed at or below its LAC now, since a closed
  copy is never extended): skipped, which makes a copy resumable;
- an unfinished copy: OPEN and marked ``bkctl.copy=<runId>`` by a run that did not finish: deleted and copied again;
- anything else: foreign. The copy is refused before anything is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from admin.export.plan import EntryRange, ExportPlan, Partition, PlannedLedger, Selection, pack, plan_export
from bookie.client.replay import ledger_differs
from bookie.errors import CorruptData
from bookie.meta.ledger_metadata import LedgerMetadata

MARKER_KEY = "bkctl.copy"
ABSENT, COPIED, UNFINISHED, FOREIGN = "absent", "copied", "unfinished", "foreign"


def target_state(ledger: PlannedLedger, target: LedgerMetadata | None) -> tuple[str, str]:
    """``(state, why)`` of the id of ``ledger`` in the target, whose metadata there is ``target`` (None: absent)."""
    if target is None:
        return ABSENT, ""
    source = ledger.metadata
    # another ledger is never taken for a copy of this one, finished or not (another run's, from another cluster)
    differs = ledger_differs(target, source, ledger.password, MARKER_KEY)
    if differs:
        return FOREIGN, differs
    if MARKER_KEY in target.custom_metadata:
        if not target.is_closed:
            return UNFINISHED, ""
        return FOREIGN, f"closed, but marked {MARKER_KEY}"
    if not target.is_closed:
        return FOREIGN, f"{target.state.name} in the target"
    if source.is_closed and (target.last_entry_id, target.length) != (ledger.last_entry_id, ledger.length):
        return FOREIGN, (
            f"closed at entry {target.last_entry_id} ({target.length} bytes), the source at entry "
            f"{ledger.last_entry_id} ({ledger.length} bytes)"
        )
    if not source.is_closed and target.last_entry_id > ledger.last_entry_id:
        return FOREIGN, f"closed at entry {target.last_entry_id}, past the source's LAC {ledger.last_entry_id}"
    return COPIED, ""


@dataclass
class CopyPlan:
    source: ExportPlan  # the selected ledgers, and the open ones left out
    to_copy: list[PlannedLedger]
    tasks: list[Partition]  # each: whole ledgers, one range per ledger
    copied: list[int] = field(default_factory=list)  # finished copies in the target: skipped
    unfinished: dict[int, bytes] = field(default_factory=dict)  # ledger id -> the marker of the run that left it
    foreign: dict[int, str] = field(default_factory=dict)  # ledger id -> why it is not a copy of the source's
    stale: list[int] = field(default_factory=list)  # copied earlier while open, below the source's LAC now

    @property
    def entries(self) -> int:
        return sum(ledger.entries for ledger in self.to_copy)

    @property
    def bytes(self) -> int:
        return sum(ledger.length for ledger in self.to_copy)

    def doc(self) -> dict:
        return {
            "ledgers": len(self.source.ledgers),
            "copy": len(self.to_copy),
            "redo": len(self.unfinished),
            "skipped": len(self.copied),
            "leftOpen": self.source.left_open,
            "entries": self.entries,
            "bytes": self.bytes,
            "tasks": len(self.tasks),
        }


def plan_copy(
    source_bk,
    target_bk,
    selection: Selection | None,
    custom_metadata: dict[str, bytes],
    include_open: bool,
    partition_bytes: int,
) -> CopyPlan:
    """The plan of copying the selected ledgers of ``source_bk``'s cluster into ``target_bk``'s; metadata reads
    only (and READ_LAC of open source ledgers with ``include_open``). InvalidArgument for an id the target's ledger
    manager cannot store."""
    source = plan_export(source_bk, selection, custom_metadata, include_open, partition_bytes)
    manager = target_bk.core.ledgers
    for ledger in source.ledgers:
        manager.path(ledger.ledger_id)
    unreadable: dict[int | None, CorruptData] = {}
    found = dict(
        manager.iter_ledgers(
            [ledger.ledger_id for ledger in source.ledgers],
            on_corrupt=lambda exc: unreadable.setdefault(exc.ledger_id, exc),
        )
    )
    plan = CopyPlan(source, [], [])
    for ledger in source.ledgers:
        lid = ledger.ledger_id
        if lid in unreadable:
            plan.foreign[lid] = f"its metadata cannot be read: {unreadable[lid]}"
            continue
        target = found.get(lid)
        state, why = target_state(ledger, target)
        if state == FOREIGN:
            plan.foreign[lid] = why
        elif state == COPIED:
            plan.copied.append(lid)
            if target is not None and target.last_entry_id < ledger.last_entry_id:
                plan.stale.append(lid)
        else:
            if state == UNFINISHED and target is not None:
                plan.unfinished[lid] = target.custom_metadata[MARKER_KEY]
            plan.to_copy.append(ledger)
    whole = [EntryRange(ledger, 0, ledger.last_entry_id, ledger.length) for ledger in plan.to_copy]
    plan.tasks = pack(whole, partition_bytes)
    return plan

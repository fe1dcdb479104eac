"""Measure the cluster for a rebalance: the registered bookies, each writable one's storage view (its admin
service's ``storage usage``, as ``bkctl cluster usage`` gathers them), the metadata of the ledgers they hold, and
from those the planner's inputs; and the ``-o json`` document of a plan."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from admin.bookie_admin import STORAGE_USAGE_TIMEOUT, fan_out
from admin.rebalance.inputs import Inputs, gather
from admin.rebalance.plan import Plan, plan
from admin.usage.sources import ledgers_naming
from bookie.client.move import Move
from bookie.errors import AdminServiceMissing, BKError
from bookie.meta.registration import WRITABLE, BookieRegistry, RegisteredBookie
from bookie.meta.store import MetadataStore


@dataclass
class Cluster:
    inputs: Inputs
    racks: dict[str, str]  # every registered bookie's rack, as `cluster check` takes them
    read_only: list[str] = field(default_factory=list)  # registered read-only: left out
    unreachable: dict[str, str] = field(default_factory=dict)  # writable, did not answer: left out

    def stored(self) -> dict[str, int]:
        return {b.bookie_id: b.stored for b in self.inputs.bookies}


def measure(store: MetadataStore, tls=None, warn: Callable[[str], None] = lambda _: None) -> Cluster:
    """The writable bookies that answer (or report no storage: a Java bookie, counted from the metadata) and
    their replicas. A bookie that does not answer is left out and said so through ``warn``."""
    registered: list[RegisteredBookie] = BookieRegistry(store).list(writable=True, readonly=True)
    racks = {b.bookie_id: b.rack for b in registered}
    writable = [b for b in registered if b.state == WRITABLE]
    views: dict[str, Any] = {}
    unreachable = {}
    for outcome in fan_out(writable, "storage usage", lambda admin: admin.storage_usage(), STORAGE_USAGE_TIMEOUT, tls):
        if outcome.error is None:
            views[outcome.bookie_id] = outcome.result
        elif isinstance(outcome.error, AdminServiceMissing):
            views[outcome.bookie_id] = None
            warn(f"{outcome.bookie_id} reports no storage usage: its stored bytes are estimated from the metadata")
        else:
            unreachable[outcome.bookie_id] = str(outcome.error)
            warn(f"{outcome.bookie_id} left out of the rebalance: {outcome.error}")
    held = {lid for view in views.values() if view is not None for log in view.logs for lid in log.ledgers}
    held |= {lid for view in views.values() if view is not None for lid in view.local_ledgers}
    metadata = ledgers_naming(store, list(views), held, lambda exc: warn(str(exc)))
    inputs = gather(list(views), views, metadata)
    read_only = sorted(b.bookie_id for b in registered if b.state != WRITABLE)
    return Cluster(inputs, racks, read_only, unreachable)


def plan_of(cluster: Cluster, target: float, max_moves: int | None = None) -> Plan:
    """The plan for the cluster as measured."""
    inputs = cluster.inputs
    return plan(inputs.bookies, inputs.replicas, cluster.racks, target, max_moves, inputs.not_owned)


def why(plan: Plan, cluster: Cluster) -> str:
    """Why the plan ends short of the target, in words (empty when it does not), with the open ledgers' part."""
    if plan.within_target:
        return ""
    fullest = max(plan.after, key=lambda b: (plan.after[b] / plan.capacity[b], b))
    held_open = cluster.inputs.open_bytes.get(fullest, 0)
    if held_open:
        return f"{plan.detail}; open ledgers hold {held_open} bytes on it: their last segment moves once closed"
    return plan.detail


def document(plan: Plan, cluster: Cluster, dry_run: bool) -> dict[str, Any]:
    """The ``-o json`` document (docs/rebalance.md); a run adds ``run``, ``measuredBytes`` and ``spread.measured``."""
    inputs = cluster.inputs
    return {
        "dryRun": dry_run,
        "target": plan.target,
        "withinTarget": plan.within_target,
        "reason": {"kind": plan.reason, "detail": why(plan, cluster) or None},
        "spread": {"before": round(plan.spreads[0], 2), "planned": round(plan.spreads[1], 2)},
        "bookies": [
            {
                "bookieId": b.bookie_id,
                "capacityBytes": b.capacity,
                "storedBytes": b.stored,
                "predictedBytes": plan.after[b.bookie_id],
                "estimated": b.bookie_id in inputs.estimated,
                "capacityAssumed": b.bookie_id in inputs.capacity_assumed,
                "openBytes": inputs.open_bytes.get(b.bookie_id, 0),
            }
            for b in sorted(inputs.bookies, key=lambda b: b.bookie_id)
        ],
        "moves": [
            {**Move(m.ledger_id, m.first_entry_id, m.source, m.target).doc(), "bytes": m.bytes} for m in plan.moves
        ],
        "movedBytes": plan.bytes,
        "openLedgers": inputs.open_ledgers,
        "readOnly": cluster.read_only,
        "unreachable": [{"bookieId": b, "error": e} for b, e in sorted(cluster.unreachable.items())],
    }


def failures(report: Any) -> BKError | None:
    """The moves that failed, as the error to exit with (None when none did; a busy ledger is exit 3, as in
    drain and repair-placement: the target is not reached, run it again)."""
    if report.failed:
        listed = "; ".join(f"ledger {lid}: {reason}" for lid, reason in sorted(report.failed.items()))
        return BKError(f"{len(report.failed)} ledgers could not be moved ({listed}); run it again to retry")
    return None

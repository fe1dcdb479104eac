"""Why a bookie's space is held: reasons, each with the bytes it holds. A byte may be held for several reasons (a
deleted ledger's bytes in the active log): each reason says what it holds, they do not add up to the disk.

| reason                | bytes                                                                               |
|-----------------------|-------------------------------------------------------------------------------------|
| live                  | live ledgers' bytes, one reason per owner (``owner``: a Pulsar topic, cursor, schema; null) |
| deleted-ledgers       | deleted in the metadata, not yet collected: the next GC run (``nextRunTime``) forgets them |
| not-in-metadata       | ledgers neither the metadata nor the index has: dead bytes compaction has not taken   |
| no-index              | ledgers the bookie owns whose entries its index lacks (entries with no index entry)   |
| not-owned             | replicas the bookie no longer owns: freed gcOverreplicatedLedgerWaitTime after a look |
| above-threshold       | dead bytes in sealed logs whose usage is not under the major threshold (``logs``)    |
| stalled-log           | dead bytes of a log whose last compaction failed (``logId``, ``error``)               |
| active-log            | dead bytes in the log being written: compacted only once rolled (``logId``)          |
| compaction-suspended  | what that kind's compaction would reclaim, suspended (``kind``)                      |
| compaction-disabled   | what that kind's compaction would reclaim, disabled by its threshold or interval     |
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from admin.usage.ledgers import LIVE, LedgerUsage, State
from admin.usage.logs import LogUsage
from admin.usage.reclaim import reclaimable
from bookie.storage.usage import GcView


@dataclass(frozen=True)
class Reason:
    reason: str
    bytes: int
    detail: str
    extra: dict[str, Any] = field(default_factory=dict)

    def doc(self) -> dict[str, Any]:
        return {"reason": self.reason, "bytes": self.bytes, "detail": self.detail, **self.extra}


def plural(n: int, noun: str) -> str:
    """``1 ledger``, ``2 ledgers``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _when(epoch_s: float) -> str:
    """``2026-11-28T15:20:00Z, in 9 min``."""
    at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch_s))
    wait = epoch_s - time.time()
    return f"{at}, in {wait / 60:.0f} min" if wait >= 60 else f"{at}, within a minute"


def _by_state(ledgers: Mapping[int, LedgerUsage], state: State) -> tuple[int, list[int]]:
    found = [u for u in ledgers.values() if u.facts.state == state and u.held]
    return sum(u.held for u in found), [u.facts.ledger_id for u in found]


def reasons(ledgers: Mapping[int, LedgerUsage], logs: list[LogUsage], gc: GcView) -> list[Reason]:
    """Every reason that holds bytes, in the order of the table above (live ones largest first)."""
    found: list[Reason] = []
    owners: dict[str | None, int] = defaultdict(int)
    for usage in ledgers.values():
        if usage.facts.state in LIVE and usage.held:
            owners[usage.facts.owner] += usage.held
    for owner, size in sorted(owners.items(), key=lambda item: -item[1]):
        whose = f"of {owner}" if owner else "with no Pulsar owner"
        found.append(Reason("live", size, f"live ledgers {whose}", {"owner": owner}))

    size, ids = _by_state(ledgers, State.DELETED)
    if size:
        when = (
            f"the next GC run ({_when(gc.next_run)}) forgets them"
            if gc.next_run is not None
            else "the bookie's next GC run forgets them"
        )
        found.append(
            Reason(
                "deleted-ledgers",
                size,
                f"{plural(len(ids), 'ledger')} deleted in the metadata: {when}; their logs go once nothing live is "
                "left in them, or by compaction",
                {"ledgers": ids, "nextRunTime": round(gc.next_run * 1000) if gc.next_run is not None else None},
            )
        )
    for state, detail in (
        (State.NOT_IN_METADATA, "in no metadata and no index: dead bytes compaction has not taken yet"),
        (State.NO_INDEX, "the bookie owns them, but its index has none of their entries"),
    ):
        size, ids = _by_state(ledgers, state)
        if size:
            found.append(Reason(str(state), size, f"{plural(len(ids), 'ledger')}: {detail}", {"ledgers": ids}))
    size, ids = _by_state(ledgers, State.NOT_OWNED)
    if size:
        wait = gc.overreplicated_wait_ms
        when = (
            f"freed by the first GC run {wait / 3_600_000:g} h (gcOverreplicatedLedgerWaitTime) after the last look"
            if wait > 0
            else "never freed: gcOverreplicatedLedgerWaitTime <= 0"
        )
        found.append(
            Reason(
                "not-owned",
                size,
                f"{plural(len(ids), 'replica')} this bookie no longer owns (no ensemble names it): {when}",
                {"ledgers": ids},
            )
        )

    sealed = [log for log in logs if not log.active]
    above = [log for log in sealed if log.gc.live_ledgers and log.gc.usage >= gc.major_threshold and log.dead]
    if above:
        found.append(
            Reason(
                "above-threshold",
                sum(log.dead for log in above),
                f"{plural(len(above), 'log')} whose usage is not under the major threshold {gc.major_threshold:g}: "
                "compaction leaves them",
                {"logs": [{"logId": log.log_id, "usage": round(log.gc.usage, 4)} for log in above]},
            )
        )
    for log in sealed:
        if log.stalled:
            found.append(
                Reason(
                    "stalled-log",
                    log.dead,
                    f"log {log.log_id:x}: its last compaction failed: {log.stalled}",
                    {"logId": log.log_id, "error": log.stalled},
                )
            )
    for log in logs:
        if log.active and log.dead:
            found.append(
                Reason(
                    "active-log",
                    log.dead,
                    f"log {log.log_id:x} is being written: it cannot be compacted until it is rolled",
                    {"logId": log.log_id},
                )
            )
    for kind, threshold, interval in (
        ("major", gc.major_threshold, gc.major_interval_s),
        ("minor", gc.minor_threshold, gc.minor_interval_s),
    ):
        would = reclaimable([log.gc for log in logs], threshold)  # were it running
        compacting = would.reclaimed - sum(log.size for log in logs if log.key in would.deleted)
        if kind in gc.suspended:
            found.append(
                Reason(
                    "compaction-suspended",
                    compacting,
                    f"{kind} compaction is suspended (a full disk, or an operator)",
                    {"kind": kind},
                )
            )
        elif threshold <= 0 or interval <= 0:
            found.append(
                Reason(
                    "compaction-disabled",
                    compacting,
                    f"{kind} compaction is disabled ({kind}CompactionThreshold {threshold:g}, "
                    f"{kind}CompactionInterval {interval:g} s)",
                    {"kind": kind},
                )
            )
    return found

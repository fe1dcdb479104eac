"""One bookie's storage explained: a :class:`StorageView` against the metadata of the ledgers it concerns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from admin.usage.expected import expected_on, names
from admin.usage.ledgers import LIVE, LedgerFacts, LedgerUsage, State, facts
from admin.usage.logs import LogUsage, gc_logs
from admin.usage.reasons import Reason, reasons
from admin.usage.reclaim import LogKey, Reclaim, reclaimable
from bookie.meta.ledger_metadata import LedgerMetadata
from bookie.storage.usage import KINDS, DirView, StorageView


@dataclass
class Explanation:
    bookie_id: str
    view: StorageView
    ledgers: dict[int, LedgerUsage]
    logs: list[LogUsage]  # largest first
    minor: Reclaim
    major: Reclaim
    at_threshold: Reclaim | None  # --threshold
    reasons: list[Reason]

    @property
    def entry_log_bytes(self) -> int:
        return sum(log.size for log in self.logs)

    @property
    def live_bytes(self) -> int:
        return sum(log.live for log in self.logs)

    @property
    def expected_bytes(self) -> int:
        return sum(u.expected.bytes for u in self.ledgers.values() if u.expected is not None)

    @property
    def bytes_by_kind(self) -> dict[str, int]:
        return {kind: sum(d.bytes.get(kind, 0) for d in self.view.dirs) for kind in KINDS}

    @property
    def reclaim(self) -> Reclaim:
        """At --threshold when given, else at the bookie's major threshold (the JSON's ``reclaimableBytes``)."""
        return self.at_threshold or self.major


def explain(
    view: StorageView,
    metadata: Mapping[int, LedgerMetadata],
    bookie_id: str | None = None,
    now: float = 0.0,
    threshold: float | None = None,
) -> Explanation:
    """``metadata``: the metadata of every ledger whose ensembles name the bookie and of every ledger the view
    holds, when it exists (a ledger missing from it is not in the metadata store). ``bookie_id``: when the view
    does not name the bookie (directories read offline without a cookie). ``now``: epoch seconds, for the logs'
    ages; ``threshold``: also what a compaction at that threshold would reclaim."""
    bookie = view.bookie_id or bookie_id
    if bookie is None:
        raise ValueError("the bookie's id is needed to compare its storage with the metadata")
    held: dict[int, dict[LogKey, int]] = {}
    for log in view.logs:
        for ledger_id, size in log.ledgers.items():
            held.setdefault(ledger_id, {})[log.directory, log.log_id] = size
    ledgers = {}
    for ledger_id in sorted({*held, *view.local_ledgers, *(i for i, md in metadata.items() if names(md, bookie))}):
        md = metadata.get(ledger_id)
        in_logs = held.get(ledger_id, {})
        expected = (
            expected_on(md, bookie, view.local_ledgers.get(ledger_id), sum(in_logs.values()))
            if md is not None and names(md, bookie)
            else None
        )
        ledgers[ledger_id] = LedgerUsage(
            facts(ledger_id, md, bookie, ledger_id in view.local_ledgers), expected, in_logs
        )
    by_gc = gc_logs(view, metadata)
    logs = [
        LogUsage(
            log.log_id,
            log.directory,
            log.size,
            sorted(((ledgers[lid].facts, size) for lid, size in log.ledgers.items()), key=lambda item: -item[1]),
            max(0.0, now - log.modified) if log.modified else 0.0,
            log.active,
            log.stalled,
            by_gc[log.directory, log.log_id],
        )
        for log in sorted(view.logs, key=lambda log: (-log.size, log.log_id, log.directory))
    ]
    gc = view.gc
    minor = reclaimable(by_gc.values(), gc.minor_threshold, gc.minor_interval_s > 0)
    major = reclaimable(by_gc.values(), gc.major_threshold, gc.major_interval_s > 0)
    at = reclaimable(by_gc.values(), threshold) if threshold is not None else None
    explained = Explanation(bookie, view, ledgers, logs, minor, major, at, [])
    explained.reasons = reasons(ledgers, logs, gc)
    return explained


def dirs_doc(dirs: list[DirView]) -> list[dict]:
    return [
        {
            "path": d.path,
            "kind": d.kind,
            "bytes": dict(d.bytes),
            "diskSize": d.disk_size,
            "diskFree": d.disk_free,
            "writable": d.writable,
        }
        for d in dirs
    ]


def ledger_doc(ledger: LedgerFacts, size: int) -> dict:
    return {"ledgerId": ledger.ledger_id, "bytes": size, "state": str(ledger.state), "owner": ledger.owner}


def log_doc(log: LogUsage) -> dict:
    return {
        "logId": log.log_id,
        "directory": log.directory,
        "bytes": log.size,
        "liveBytes": log.live,
        "deadBytes": log.dead,
        "usage": round(log.gc.usage, 4),
        "active": log.active,
        "ageSeconds": round(log.age_s),
        "stalled": log.stalled or None,
        "ledgers": [ledger_doc(ledger, size) for ledger, size in log.ledgers],
    }


def document(explained: Explanation, logs: int | None = None) -> dict:
    """The ``-o json`` document of one bookie (docs/bookie.md describes it); ``logs``: only the largest N."""
    view = explained.view
    return {
        "bookieId": explained.bookie_id,
        "source": view.source,
        "storage": view.storage,
        "readOnly": view.read_only,
        "bytesByKind": explained.bytes_by_kind,
        "dirs": dirs_doc(view.dirs),
        "entryLogBytes": explained.entry_log_bytes,
        "liveBytes": explained.live_bytes,
        "deadBytes": explained.entry_log_bytes - explained.live_bytes,
        "expectedBytes": explained.expected_bytes,
        "expectedLedgers": sum(1 for u in explained.ledgers.values() if u.expected is not None),
        "gapBytes": explained.entry_log_bytes - explained.expected_bytes,
        "reclaimableBytes": explained.reclaim.reclaimed,
        "reclaim": {
            "minor": explained.minor.doc(),
            "major": explained.major.doc(),
            **({"threshold": explained.at_threshold.doc()} if explained.at_threshold else {}),
        },
        "logs": [log_doc(log) for log in explained.logs[:logs]],
        "reasons": [reason.doc() for reason in explained.reasons],
    }


def ledger_detail(explained: Explanation, ledger_id: int) -> dict:
    """``--ledger L``: which logs hold the ledger and how many bytes, its state and owner, its expected share, and
    what keeps its bytes in each log."""
    usage = explained.ledgers.get(ledger_id)
    by_log = {log.key: log for log in explained.logs}
    facts_ = usage.facts if usage else LedgerFacts(ledger_id, State.NOT_IN_METADATA, None)
    logs = []
    for key, size in sorted((usage.logs if usage else {}).items()):
        log = by_log[key]
        logs.append(
            {
                "logId": log.log_id,
                "directory": log.directory,
                "bytes": size,
                "logBytes": log.size,
                "logLiveBytes": log.live,
                "keptBy": kept_by(explained, log, facts_),
            }
        )
    expected = usage.expected if usage else None
    return {
        "bookieId": explained.bookie_id,
        "ledgerId": ledger_id,
        "state": str(facts_.state),
        "owner": facts_.owner,
        "expectedBytes": expected.bytes if expected else None,
        "expectedEntries": expected.entries if expected else None,
        "localEntries": explained.view.local_ledgers.get(ledger_id),
        "heldBytes": usage.held if usage else 0,
        "logs": logs,
        "entries": [{"first": r.first, "last": r.last, "logId": r.log_id} for r in explained.view.ledger_ranges],
    }


def kept_by(explained: Explanation, log: LogUsage, ledger: LedgerFacts) -> str:
    """Why this ledger's bytes in this log are still on disk, in a line."""
    if ledger.state in LIVE:
        return "the ledger is live: the bookie owns it and its index has it"
    if log.active:
        return "the log is the active one: compacted only once rolled"
    if ledger.state == State.DELETED:
        return "the ledger is deleted in the metadata: the next GC run forgets it"
    if ledger.state == State.NOT_OWNED:
        return "a replica no longer owned: forgotten gcOverreplicatedLedgerWaitTime after the last look"
    if log.stalled:
        return f"the log's compaction failed: {log.stalled}"
    gc = explained.view.gc
    if log.gc.usage >= gc.major_threshold:
        return f"the log's usage {log.gc.usage:.0%} is not under the major threshold {gc.major_threshold:.0%}"
    return "dead: the next compaction of this log removes it"

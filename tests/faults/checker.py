"""The checker: after the faults, every acknowledged entry is there with its exact bytes, no gaps, nothing
beyond the recovered last entry was read before, and two recoveries racing on a ledger agree."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from faults.workload import PASSWORD, History, payload

from bookie.client import BookKeeper
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.ledger_metadata import LedgerState


@dataclass
class CheckResult:
    ledgers: int = 0
    acknowledged: int = 0  # entries acknowledged to a writer
    lost: int = 0  # acknowledged entries not read back with their exact bytes
    entries_read: int = 0
    raced_recoveries: int = 0
    violations: list[str] = field(default_factory=list)


def race_recoveries(uri: str, ledger_id: int) -> list:
    """Two clients open the ledger with recovery at the same moment; each one's closed metadata (or error)."""
    results: list = [None, None]
    go = threading.Barrier(2)

    def recover(slot: int) -> None:
        try:
            with BookKeeper(uri) as bk:
                go.wait(30)
                results[slot] = bk.open_ledger(ledger_id, PASSWORD, recovery=True).metadata
        except Exception as exc:  # noqa: BLE001 - reported as a violation by the caller
            results[slot] = exc

    threads = [threading.Thread(target=recover, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    return results


def check(uri: str, history: History, skip: set[int] = frozenset()) -> tuple[CheckResult, set[int]]:
    """Check every ledger of the cluster not in ``skip``; return the result and the ledgers checked."""
    result = CheckResult()
    with BookKeeper(uri) as bk:
        manager = LedgerManager(bk.core.store)
        present = set(manager.iter_ledger_ids())
        ledger_ids = sorted((present | set(history.ledgers)) - set(skip))
        for ledger_id in ledger_ids:
            record = history.ledgers.get(ledger_id)
            if record is not None:
                result.acknowledged += record.acked + 1
            if ledger_id not in present:
                if record is not None and record.acked >= 0:
                    result.lost += record.acked + 1
                    result.violations.append(f"ledger {ledger_id}: deleted, with entries 0..{record.acked} "
                                             "acknowledged")
                continue
            result.ledgers += 1
            _check_ledger(uri, bk, ledger_id, record, result)
    return result, set(ledger_ids)


def _check_ledger(uri: str, bk: BookKeeper, ledger_id: int, record, result: CheckResult) -> None:
    md = bk.ledger_metadata(ledger_id)
    if md.state != LedgerState.CLOSED:
        result.raced_recoveries += 1
        first, second = race_recoveries(uri, ledger_id)
        for outcome in (first, second):
            if isinstance(outcome, BaseException) or outcome is None:
                result.violations.append(f"ledger {ledger_id}: a recovery failed: {outcome!r}")
        if not isinstance(first, BaseException) and not isinstance(second, BaseException) and first and second:
            if (first.last_entry_id, first.length) != (second.last_entry_id, second.length):
                result.violations.append(
                    f"ledger {ledger_id}: racing recoveries disagree: last entry {first.last_entry_id} length "
                    f"{first.length} vs last entry {second.last_entry_id} length {second.length}")
        md = bk.ledger_metadata(ledger_id)
        if md.state != LedgerState.CLOSED:
            result.violations.append(f"ledger {ledger_id}: still {md.state.name} after two recoveries")
            if record is not None:
                result.lost += record.acked + 1
            return
    last = md.last_entry_id
    acked = record.acked if record is not None else -1
    if record is not None:
        if last < record.acked:
            result.violations.append(f"ledger {ledger_id}: closed at entry {last}, but entries up to "
                                     f"{record.acked} were acknowledged")
        if last < record.observed:
            result.violations.append(f"ledger {ledger_id}: closed at entry {last}, but a reader saw entry "
                                     f"{record.observed} before")
        if record.closed_by_writer is not None and record.closed_by_writer != (last, md.length):
            result.violations.append(f"ledger {ledger_id}: the writer closed it at {record.closed_by_writer}, "
                                     f"the metadata says {(last, md.length)}")
    verified = 0  # acknowledged entries read back intact
    expected, length = 0, 0
    if last >= 0:
        try:
            handle = bk.open_ledger(ledger_id, PASSWORD, recovery=False)
            for entry in handle.iter_entries(0, last):
                if entry.entry_id != expected:
                    result.violations.append(f"ledger {ledger_id}: read entry {entry.entry_id} where "
                                             f"{expected} was due")
                    break
                length += len(entry.payload)
                if record is not None and entry.payload != payload(record.seed, ledger_id, entry.entry_id):
                    result.violations.append(f"ledger {ledger_id} entry {entry.entry_id}: wrong bytes")
                elif entry.entry_id <= acked:
                    verified += 1
                if entry.length != length:
                    result.violations.append(f"ledger {ledger_id} entry {entry.entry_id}: cumulative length "
                                             f"{entry.length}, the entries before it add up to {length}")
                    break
                expected += 1
                result.entries_read += 1
        except Exception as exc:  # noqa: BLE001 - an unreadable entry is the finding
            result.violations.append(f"ledger {ledger_id}: read of 0..{last} failed at entry {expected}: "
                                     f"{type(exc).__name__}: {exc}")
    if expected == last + 1 and length != md.length:
        result.violations.append(f"ledger {ledger_id}: metadata length {md.length}, entries add up to {length}")
    result.lost += max(0, acked + 1 - verified)

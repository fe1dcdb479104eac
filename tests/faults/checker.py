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
    degraded_entries_read: int = 0
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
                    result.violations.append(
                        f"ledger {ledger_id}: deleted, with entries 0..{record.acked} acknowledged"
                    )
                continue
            result.ledgers += 1
            _check_ledger(uri, bk, ledger_id, record, result)
        result.violations += replica_audit(bk, [lid for lid in ledger_ids if lid in present])
    return result, set(ledger_ids)


def _check_ledger(uri: str, bk: BookKeeper, ledger_id: int, record, result: CheckResult) -> None:
    md = bk.ledger_metadata(ledger_id)
    if md.state != LedgerState.CLOSED:
        result.raced_recoveries += 1
        first, second = race_recoveries(uri, ledger_id)
        for outcome in (first, second):
            if isinstance(outcome, BaseException) or outcome is None:
                result.violations.append(f"ledger {ledger_id}: a recovery failed: {outcome!r}")
        if (
            not isinstance(first, BaseException)
            and not isinstance(second, BaseException)
            and first
            and second
            and (first.last_entry_id, first.length) != (second.last_entry_id, second.length)
        ):
            result.violations.append(
                f"ledger {ledger_id}: racing recoveries disagree: last entry {first.last_entry_id} length "
                f"{first.length} vs last entry {second.last_entry_id} length {second.length}"
            )
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
            result.violations.append(
                f"ledger {ledger_id}: closed at entry {last}, but entries up to "
                f"{record.acked} were acknowledged; {_who_closed(record)}; "
                f"{_holders(bk, ledger_id, md, last + 1)}"
            )
        if last < record.observed:
            result.violations.append(
                f"ledger {ledger_id}: closed at entry {last}, but a reader saw entry {record.observed} before"
            )
        if record.closed_by_writer is not None and record.closed_by_writer != (last, md.length):
            result.violations.append(
                f"ledger {ledger_id}: the writer closed it at {record.closed_by_writer}, "
                f"the metadata says {(last, md.length)}"
            )
    verified = 0  # acknowledged entries read back intact
    expected, length = 0, 0
    if last >= 0:
        try:
            handle = bk.open_ledger(ledger_id, PASSWORD, recovery=False)
            for entry in handle.iter_entries(0, last):
                if entry.entry_id != expected:
                    result.violations.append(
                        f"ledger {ledger_id}: read entry {entry.entry_id} where {expected} was due"
                    )
                    break
                length += len(entry.payload)
                if record is not None and entry.payload != payload(record.seed, ledger_id, entry.entry_id):
                    result.violations.append(f"ledger {ledger_id} entry {entry.entry_id}: wrong bytes")
                elif entry.entry_id <= acked:
                    verified += 1
                if entry.length != length:
                    result.violations.append(
                        f"ledger {ledger_id} entry {entry.entry_id}: cumulative length "
                        f"{entry.length}, the entries before it add up to {length}"
                    )
                    break
                expected += 1
                result.entries_read += 1
        except Exception as exc:  # noqa: BLE001 - an unreadable entry is the finding
            result.violations.append(
                f"ledger {ledger_id}: read of 0..{last} failed at entry {expected}: {type(exc).__name__}: {exc}"
            )
    if expected == last + 1 and length != md.length:
        result.violations.append(f"ledger {ledger_id}: metadata length {md.length}, entries add up to {length}")
    result.lost += max(0, acked + 1 - verified)


def degraded_read(uri: str, history: History, ledger_ids: set[int], down: str) -> tuple[int, list[str]]:
    """Read whole ledgers while bookie ``down`` is dead: every entry acknowledged by two bookies or more still has
    a replica that answers, so the read must succeed (the reader falls back to the next replica). Ledgers with an
    ack quorum of 1 are left out: an entry acknowledged by ``down`` alone is legitimately unreadable without it.
    Returns the entries read and the violations."""
    entries, violations = 0, []
    with BookKeeper(uri) as bk:
        for ledger_id in sorted(ledger_ids):
            record = history.ledgers.get(ledger_id)
            if record is None or record.quorum[2] < 2:
                continue
            md = bk.ledger_metadata(ledger_id)
            if md.state != LedgerState.CLOSED or md.last_entry_id < 0:
                continue
            expected = 0
            try:
                handle = bk.open_ledger(ledger_id, PASSWORD, recovery=False)
                for entry in handle.iter_entries(0, md.last_entry_id):
                    if entry.entry_id != expected or entry.payload != payload(record.seed, ledger_id, entry.entry_id):
                        violations.append(
                            f"ledger {ledger_id} with bookie {down} down: entry {entry.entry_id} "
                            f"is wrong (expected entry {expected})"
                        )
                        break
                    expected += 1
            except Exception as exc:  # noqa: BLE001 - the finding
                violations.append(
                    f"ledger {ledger_id} (E{md.ensemble_size} W{md.write_quorum_size} "
                    f"A{md.ack_quorum_size}, entries 0..{md.last_entry_id}) with bookie {down} down: "
                    f"read failed at entry {expected}: {type(exc).__name__}: {exc}"
                )
            entries += expected
    return entries, violations


def _who_closed(record) -> str:
    if record.closed_by_writer is not None:
        return "closed by its writer"
    if record.failed is not None:
        return f"its writer failed ({record.failed})"
    return "closed by a recovery"


def _holders(bk: BookKeeper, ledger_id: int, md, entry_id: int) -> str:
    """Which bookies of the ledger's ensembles hold ``entry_id`` now, and which of them its write set names (in the
    last segment): the first thing to know about an acknowledged entry that a recovery did not find."""
    from bookie.client.bookie_client import StatusCode
    from bookie.codec.availability import AvailabilityOfEntries
    from bookie.codec.write_set import write_set

    bookies = sorted({b for s in md.segments for b in s.bookies})

    async def held(bookie_id: str):
        async for _, status, encoded in bk.core.bookie(bookie_id).list_entries([ledger_id], 20):
            return entry_id in AvailabilityOfEntries.decode(encoded) if status == StatusCode.EOK else f"status {status}"
        return "no answer"

    async def ask_all():
        import asyncio

        return await asyncio.gather(*(held(b) for b in bookies), return_exceptions=True)

    answers = dict(zip(bookies, bk.run(ask_all()), strict=True))
    segment = md.segments[-1]
    named = [segment.bookies[i] for i in write_set(entry_id, md.ensemble_size, md.write_quorum_size)]
    return (
        f"entry {entry_id}: write set in the last segment {named}, segments "
        f"{[(s.first_entry_id, s.bookies) for s in md.segments]}, held by bookie: {answers}"
    )


def replica_audit(bk: BookKeeper, ledger_ids: list[int]) -> list[str]:
    """Every entry up to a closed ledger's last entry is held by at least its ack quorum of the bookies of its
    write set (what the writer or the recovery waited for). A replica lost this way is hidden from readers by the
    other replicas, until the next failure turns it into a loss; this finds it first. Asked of every bookie at
    once with GET_LIST_OF_ENTRIES_OF_LEDGER (the auditor's replicas check)."""
    from bookie.client.bookie_client import StatusCode
    from bookie.codec.availability import AvailabilityOfEntries
    from bookie.codec.write_set import write_set

    closed = {}
    for ledger_id in ledger_ids:
        md = bk.ledger_metadata(ledger_id)
        if md.state == LedgerState.CLOSED and md.last_entry_id >= 0:
            closed[ledger_id] = md
    bookies = sorted({b for md in closed.values() for s in md.segments for b in s.bookies})

    async def held_by(bookie_id: str) -> dict[int, AvailabilityOfEntries]:
        held = {}
        async for ledger_id, status, encoded in bk.core.bookie(bookie_id).list_entries(sorted(closed), 60):
            if status == StatusCode.EOK:
                held[ledger_id] = AvailabilityOfEntries.decode(encoded)
        return held

    async def ask_all():
        import asyncio

        return await asyncio.gather(*(held_by(b) for b in bookies), return_exceptions=True)

    violations = []
    answers = dict(zip(bookies, bk.run(ask_all()), strict=True))
    for bookie_id, answer in answers.items():
        if isinstance(answer, BaseException):
            violations.append(f"replica audit: bookie {bookie_id} did not list its entries: {answer}")
            return violations
    for ledger_id, md in closed.items():
        short = []
        for entry_id in range(md.last_entry_id + 1):
            segment = md.segment_of(entry_id)
            holders = [
                segment.bookies[i]
                for i in write_set(entry_id, md.ensemble_size, md.write_quorum_size)
                if entry_id in answers[segment.bookies[i]].get(ledger_id, ())
            ]
            if len(holders) < md.ack_quorum_size:
                short.append((entry_id, holders))
        if short:
            entry_id, holders = short[0]
            segment = md.segment_of(entry_id)
            named = [segment.bookies[i] for i in write_set(entry_id, md.ensemble_size, md.write_quorum_size)]
            violations.append(
                f"ledger {ledger_id} (E{md.ensemble_size} W{md.write_quorum_size} A{md.ack_quorum_size}): "
                f"{len(short)} entries on fewer bookies than the ack quorum, the first entry {entry_id} on "
                f"{holders or 'none'} of its write set {named}"
            )
    return violations

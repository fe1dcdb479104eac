"""Why each under-replicated ledger is stuck, and the safe fix (`bkctl autorecovery list-under-replicated --explain`).

:func:`explain` reads the cluster once (autorecovery's state, the bookies, the locks and who holds them, what the
registered bookies hold of each ledger) and gives each ledger one reason (admin/stuck/reasons.py says which, and
how a stale lock is told from a live one). :func:`fix` applies the safe fixes only; it never deletes data, never
fences or closes a ledger:

- ``deleted``: the marker is removed (the metadata is read again first: still gone);
- ``stale-lock``: the lock is deleted if the same dead session still holds it (asked of ZooKeeper again first);
- ``empty`` and CLOSED: nothing to copy, so the lost bookies are replaced in the metadata only, as a worker does for
  a fragment without entries (apache/bookkeeper#3239), under the ledger's re-replication lock, and the marker is
  removed. An OPEN empty ledger is left to its writer: recovering it would fence and close it under a broker that
  still holds it (apache/pulsar#26074).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from admin.check.checker import Checker, CheckOptions
from admin.stuck.reasons import REASONS, Cluster, Ledger, Stuck, classify, gone
from bookie.client.core import ClientCore
from bookie.client.rereplication import BookieRecovery
from bookie.errors import BKError, CorruptData, NoSuchLedger
from bookie.local.zookeeper import connected_sessions
from bookie.meta.ledger_metadata import LedgerMetadata
from bookie.meta.movement import MovementLock
from bookie.meta.registration import BookieRegistry
from bookie.meta.store import MetadataStore
from bookie.meta.underreplication import UnderReplicationManager

__all__ = ["REASONS", "Fixed", "Stuck", "explain", "fix", "planned_action"]

LOCK_OWNER = "bkctl"  # who the re-replication lock names while a fix replaces an empty ledger's bookies


async def explain(
    core: ClientCore, ledger_ids: Iterable[int] | None = None, *, min_racks: int | None = None
) -> list[Stuck]:
    """Why each ledger is stuck, by ledger id. ``ledger_ids`` None: every ledger marked under-replicated; else those
    ledgers, marked or not (a decommission asks why its own ledgers do not move). ``min_racks``: the
    minNumRacksPerWriteQuorum that the cluster's placement enforces (enforceMinNumRacksPerWriteQuorum), None when it
    does not (BookKeeper's default)."""
    ur = UnderReplicationManager(core.store)
    cluster = await asyncio.to_thread(_cluster, core.store, ur)
    cluster.min_racks = min_racks
    ids = sorted(set(ledger_ids)) if ledger_ids is not None else None
    ledgers, corrupt = await asyncio.to_thread(_ledgers, core, ur, ids)
    found = {lid: led.md for lid, led in ledgers.items() if led.md is not None}
    held: dict[tuple[str, int], Any] = {}
    unanswered: set[str] = set()
    if found:
        checker = Checker(core, CheckOptions(recheck_delay=1.0, timeout=10.0))
        held, unanswered = await checker.holdings(found)
    out = []
    for lid, ledger in sorted(ledgers.items()):
        if lid in corrupt:
            out.append(Stuck(lid, "unknown", corrupt[lid], 0, ledger.marked_at, f"bkctl ledger metadata {lid}", False))
            continue
        if ledger.md is not None:
            names = {b for s in ledger.md.segments for b in s.bookies}
            ledger.held = {b: held[(b, lid)] for b in names if (b, lid) in held}
            ledger.unanswered = frozenset(names & unanswered)
        out.append(classify(ledger, cluster))
    return out


def _cluster(store: MetadataStore, ur: UnderReplicationManager) -> Cluster:
    """Autorecovery's state, the registered bookies, the sessions connected and the data movement running."""
    auditor = ur.auditor()
    mover, mover_gone = None, False
    movement = MovementLock(store, "")
    stat = store.exists(movement.path)
    if stat is not None:
        holder = movement.holder() or {}
        mover = (stat.ephemeralOwner, str(holder.get("what", "a data movement")))
        mover_gone = MovementLock.dead(holder)
    return Cluster(
        enabled=ur.is_enabled(),
        voters=ur.voters(),
        auditor=auditor[1] if auditor else None,
        recovery_delay=ur.lost_bookie_recovery_delay(),
        bookies={b.bookie_id: b for b in BookieRegistry(store).list(True, True)},
        connected=live_sessions(store),
        mover=mover,
        mover_gone=mover_gone,
        now_ms=int(time.time() * 1000),
    )


def live_sessions(store: MetadataStore) -> set[int] | None:
    """The sessions connected to some server of the ensemble, from ``cons`` on each; None when one does not say."""
    sessions: set[int] = set()
    for host, port in store.uri.hosts:
        connected = connected_sessions(host, port)
        if connected is None:
            return None
        sessions |= connected
    return sessions


def _ledgers(
    core: ClientCore, ur: UnderReplicationManager, ids: list[int] | None
) -> tuple[dict[int, Ledger], dict[int, str]]:
    """Each ledger's marker, lock and metadata (None: deleted); and the ledgers whose metadata cannot be parsed."""
    if ids is None:
        ids = list(ur.iter_ledger_ids())
    locks = ur.locks()
    ledgers = {}
    for lid in ids:
        marked = ur.get_marked(lid)
        ledger = Ledger(lid, None, lock=locks.get(lid))
        if marked is not None:
            ledger.missing, ledger.marked_at = marked[0].replicas, marked[1]
        ledgers[lid] = ledger
    corrupt: dict[int, str] = {}

    def unreadable(exc: CorruptData) -> None:
        if exc.ledger_id is not None:
            corrupt[exc.ledger_id] = f"metadata unreadable: {exc}"

    for lid, md in core.ledgers.iter_ledgers(ids, on_corrupt=unreadable):
        ledgers[lid].md = md
    return ledgers, corrupt


# ---- the safe fixes ----
@dataclass(frozen=True)
class Fixed:
    """A safe fix applied to one ledger (``done``), or tried and not applied (``error`` says why)."""

    ledger_id: int
    reason: str
    action: str
    done: bool
    error: str | None = None

    def doc(self) -> dict[str, Any]:
        return {
            "ledgerId": self.ledger_id,
            "reason": self.reason,
            "action": self.action,
            "done": self.done,
            "error": self.error,
        }


def planned_action(stuck: Stuck) -> str | None:
    """What :func:`fix` does for ``stuck``, or None when it has no safe fix."""
    if not stuck.safe_fix:
        return None
    return {
        "deleted": "remove its marker",
        "stale-lock": "release its lock",
        "empty": "replace its lost bookies in its metadata (nothing to copy), then remove its marker",
    }.get(stuck.reason)


async def fix(core: ClientCore, stuck: Iterable[Stuck]) -> list[Fixed]:
    """Apply the safe fix of each ledger that has one (see the module's docstring), checking again first that it
    still applies."""
    ur = UnderReplicationManager(core.store)
    done = []
    for s in stuck:
        action = planned_action(s)
        if action is None:
            continue
        try:
            if s.reason == "deleted":
                error = await asyncio.to_thread(_unmark_deleted, core, ur, s.ledger_id)
            elif s.reason == "stale-lock":
                error = await asyncio.to_thread(_release_stale, core.store, ur, s.ledger_id)
            else:
                error = await _replace_in_empty(core, ur, s.ledger_id)
        except BKError as exc:
            error = str(exc) or type(exc).__name__
        done.append(Fixed(s.ledger_id, s.reason, action, error is None, error))
    return done


def _unmark_deleted(core: ClientCore, ur: UnderReplicationManager, lid: int) -> str | None:
    try:
        core.ledgers.read(lid)
        return "its metadata exists again: not unmarked"
    except NoSuchLedger:
        ur.unmark(lid)
        return None


def _release_stale(store: MetadataStore, ur: UnderReplicationManager, lid: int) -> str | None:
    lock = ur.lock(lid)
    if lock is None:
        return None  # gone with its session meanwhile
    if gone(lock.session, _cluster(store, ur)) is None:
        return f"session 0x{lock.session:x} holds it and may be alive now: kept"
    if not ur.release_lock_of(lid, lock.session) and ur.lock(lid) is not None:
        return "taken by another session meanwhile: kept"
    return None  # released, or gone with its session meanwhile


async def _replace_in_empty(core: ClientCore, ur: UnderReplicationManager, lid: int) -> str | None:
    if not await asyncio.to_thread(ur.try_lock, lid, LOCK_OWNER):
        return "someone holds its re-replication lock now: left to them"
    try:
        md: LedgerMetadata
        try:
            md, _ = await asyncio.to_thread(core.ledgers.read, lid)
        except NoSuchLedger:
            await asyncio.to_thread(ur.unmark, lid)
            return None
        if not md.is_closed or md.last_entry_id >= 0:
            return f"no longer closed and empty ({md.state.name}, last entry {md.last_entry_id}): left"
        registered = await asyncio.to_thread(lambda: {b.bookie_id for b in core.registry.list(True, True)})
        lost = {b for s in md.segments for b in s.bookies} - registered
        if lost:
            report = await BookieRecovery(core, lost).run([(lid, md)])
            if report.failed:
                return report.failed[lid]
        await asyncio.to_thread(ur.unmark, lid)
        return None
    finally:
        await asyncio.to_thread(ur.release_lock, lid)

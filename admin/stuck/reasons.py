"""Why a ledger is not re-replicated: pure rules over facts gathered once (admin/stuck/__init__.py gathers them).

A ledger gets the FIRST reason of :data:`REASONS` that holds, in that order: what no worker can get past (the
ledger is gone, its data is gone, no bookie may take it) before a lock in the way, before what nothing runs to do.

Locks. BookKeeper's re-replication lock ``underreplication/locks/urL%010d`` is EPHEMERAL: it lives as long as the
ZooKeeper session of whoever took it (an autorecovery worker, a bkctl mover, a bookie's over-replication GC). A
killed holder's lock stays until ZooKeeper expires its session (the session timeout: up to maxSessionTimeout, 40 s
by default); a hung holder that still pings keeps it for good, and looks like one at work. So a lock is **stale**
when its session is connected to no member of the ensemble: the holder was killed, or is cut off. That is asked of
every member with the four-letter word ``cons``, the members learnt from ``conf`` (not the connect string's hosts,
which may be one load-balanced address or some of the servers only), twice, 2 x tickTime apart, 2 s at least (a
healthy client that was reconnecting shows up in the second): bookie/meta/ensemble.py. A member that does not answer
(down, restarting, ``cons`` or ``conf`` not in ``4lw.commands.whitelist``) makes liveness unknown: then only a bkctl
data movement's lock is known stale, when the process it names on this host no longer runs; every other lock counts
as live (``in-progress``, saying why liveness is unknown). The rule errs toward live on purpose: a Java
ReplicationWorker never checks its lock again, so a live worker's lock released under it lets a bookie's GC take the
lock and delete the copy in progress, and the worker then names that bookie in metadata without the entries.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from admin.check import replicas
from bookie.client.move import replica_bytes
from bookie.codec.availability import AvailabilityOfEntries
from bookie.meta.ledger_metadata import LedgerMetadata
from bookie.meta.registration import WRITABLE, RegisteredBookie
from bookie.meta.underreplication import Lock

REASONS: tuple[str, ...] = (
    "deleted",  # a marker left for a ledger that no longer exists
    "lost",  # every replica of some entry is gone
    "no-eligible-bookie",  # the placement policy has no bookie to copy to
    "stale-lock",  # locked by a holder whose ZooKeeper session is connected to no member of the ensemble
    "in-progress",  # locked by a live holder: a worker or a bkctl mover at work
    "empty",  # nothing to copy: closed and empty (a metadata swap fixes it), or open and empty (its writer's)
    "disabled",  # autorecovery is disabled
    "no-worker",  # marked, and no autorecovery process runs to re-replicate it
    "no-auditor",  # not marked, and no auditor runs to mark it
    "delayed",  # waiting for lostBookieRecoveryDelay, or an open ledger's grace
    "unknown",  # none of these: the detail says what was seen
)
LONGEST_HOLD_S = 300  # lockReleaseOfFailedLedgerGracePeriod's default (a copy of a large ledger may take longer)
OPEN_GRACE_MS = 30_000  # openLedgerRereplicationGracePeriod's default; `autorecovery run --open-ledger-grace`'s too
FIX_COMMAND = "bkctl autorecovery list-under-replicated --explain --fix"


@dataclass(frozen=True)
class Stuck:
    """One ledger, why it is not re-replicated, and what fixes it."""

    ledger_id: int
    reason: str  # one of REASONS
    detail: str  # one line: the entries lost, the constraint, the holder, until when...
    bytes: int  # the ledger's bytes (0 when unknown: an open ledger, a deleted one)
    marked_at: int | None  # ms since epoch; None for a ledger that is not marked
    fix: str
    safe_fix: bool  # whether --fix applies it
    # a stale lock's session, and when (time.monotonic()) the samples that found it connected nowhere ended: --fix
    # asks ZooKeeper once more before it releases the lock, twice when these are not at hand
    stale_session: tuple[int, float] | None = None

    def doc(self) -> dict[str, Any]:
        return {
            "ledgerId": self.ledger_id,
            "reason": self.reason,
            "detail": self.detail,
            "bytes": self.bytes,
            "markedAt": self.marked_at,
            "fix": self.fix,
            "safeFix": self.safe_fix,
        }


@dataclass
class Cluster:
    """What every ledger is judged against, read once."""

    enabled: bool = True
    voters: dict[int, str] = field(default_factory=dict)  # autorecovery processes: session -> id
    auditor: str | None = None
    recovery_delay: int = 0  # lostBookieRecoveryDelay, seconds
    bookies: dict[str, RegisteredBookie] = field(default_factory=dict)  # registered, writable and read-only
    connected: set[int] | None = None  # sessions connected to some member of the ensemble (cons); None: not known
    unknown_why: str = "ZooKeeper does not answer `cons`"  # why ``connected`` is not known
    mover: tuple[int, str] | None = None  # the bkctl data movement running: its session, what it is
    mover_gone: bool = False  # its process, on this host, no longer runs
    min_racks: int | None = None  # minNumRacksPerWriteQuorum when enforced (enforceMinNumRacksPerWriteQuorum)
    now_ms: int = 0
    sampled_at: float = 0.0  # time.monotonic() when ``connected`` was last sampled

    @property
    def writable(self) -> list[RegisteredBookie]:
        return [b for b in self.bookies.values() if b.state == WRITABLE]


@dataclass
class Ledger:
    """What was found of one ledger."""

    ledger_id: int
    md: LedgerMetadata | None  # None: no metadata (deleted)
    marked_at: int | None = None
    missing: tuple[str, ...] = ()  # the marker's missing replicas
    lock: Lock | None = None
    held: Mapping[str, AvailabilityOfEntries] | None = None  # registered bookie -> what it holds; None: not asked
    unanswered: frozenset[str] = frozenset()  # registered bookies that did not answer

    @property
    def marked(self) -> bool:
        return self.marked_at is not None


def lost_bookies(md: LedgerMetadata, cluster: Cluster) -> list[str]:
    """The bookies its ensembles name that are not registered, in ensemble order."""
    named = dict.fromkeys(b for s in md.segments for b in s.bookies)
    return [b for b in named if b not in cluster.bookies]


def lost_entries(md: LedgerMetadata, held: Mapping[str, AvailabilityOfEntries]) -> list[tuple[int, int]]:
    """``(first, last)`` runs of the entries that no bookie in ``held`` has of the write quorum that must hold them
    (the closed segments only: an open ledger's last one has no known end). A bookie not in ``held`` has nothing."""
    empty = AvailabilityOfEntries([])
    named = {b for s in md.segments for b in s.bookies}
    return replicas.lost_entries(md, {b: held.get(b, empty) for b in named})


def quorum_racks_ok(
    ensemble: list[str], position: int, candidate: str, wq: int, need: int, rack: Mapping[str, str]
) -> bool:
    """Whether every write quorum holding ``position`` spans ``need`` racks with ``candidate`` there. A member of no
    known rack (a lost bookie, replaced in turn) counts as a rack of its own."""
    size = len(ensemble)
    members = list(ensemble)
    members[position] = candidate
    for start in range(size):
        quorum = [(start + w) % size for w in range(wq)]
        if position in quorum and len({rack.get(members[i], f"?{i}") for i in quorum}) < need:
            return False
    return True


def placement_refusal(md: LedgerMetadata, lost: list[str], cluster: Cluster) -> str | None:
    """The constraint that leaves some replica on a lost bookie without a bookie to go to, or None when every one
    has one. The policy is the clients' (bookie/client/placement.py): any writable bookie outside the ensemble,
    another rack first; with ``cluster.min_racks``, only one that keeps each write quorum on that many racks."""
    rack = {b.bookie_id: b.rack for b in cluster.bookies.values()}
    writable = cluster.writable
    read_only = sorted(
        b.bookie_id + (f" ({', '.join(b.read_only_reasons)})" if b.read_only_reasons else "")
        for b in cluster.bookies.values()
        if b.state != WRITABLE
    )
    for segment in md.segments:
        for position, bookie_id in enumerate(segment.bookies):
            if bookie_id not in lost:
                continue
            candidates = [b.bookie_id for b in writable if b.bookie_id not in segment.bookies]
            where = f"segment {segment.first_entry_id}"
            if not candidates:
                inside = len(writable)
                text = f"no writable bookie outside the ensemble of {where} ({inside} writable, all in it"
                return text + (f"; read-only: {', '.join(read_only)})" if read_only else ")")
            if cluster.min_racks is None:
                continue
            need = min(cluster.min_racks, md.write_quorum_size)
            bookies = list(segment.bookies)
            if not any(quorum_racks_ok(bookies, position, c, md.write_quorum_size, need, rack) for c in candidates):
                used = sorted({rack[c] for c in candidates})
                return (
                    f"racks: a write quorum must span {need} racks (minNumRacksPerWriteQuorum, enforced); the "
                    f"writable bookies outside the ensemble of {where} are on {', '.join(used)}, which {bookie_id}'s "
                    "write quorums already use" + (f"; read-only: {', '.join(read_only)}" if read_only else "")
                )
    return None


def gone(session: int, cluster: Cluster) -> str | None:
    """Why the holder of ``session`` is known to be gone, or None when it may be alive: connected to no member of
    the ensemble in two samples of ``cons`` (bookie/meta/ensemble.py); else, when ZooKeeper does not say, a bkctl
    data movement whose process on this host no longer runs (what :class:`~bookie.meta.movement.MovementLock`
    itself waits out)."""
    if cluster.connected is not None:
        if session in cluster.connected:
            return None
        return "connected to no ZooKeeper server of the ensemble, twice (killed or cut off)"
    if cluster.mover is not None and cluster.mover[0] == session and cluster.mover_gone:
        return "whose process on this host no longer runs"
    return None


def _holder(lock: Lock, cluster: Cluster) -> str:
    who = lock.owner or "someone"
    if cluster.mover is not None and cluster.mover[0] == lock.session:
        who = f"bkctl ({cluster.mover[1]})"
    elif lock.session in cluster.voters:
        who = f"autorecovery {cluster.voters[lock.session]}"
    return f"{who}, ZooKeeper session 0x{lock.session:x}"


def _left(md: LedgerMetadata, lost: list[str]) -> str:
    """How far re-replication is: the replicas still on lost bookies and their bytes."""
    replicas = [(i, p) for i, s in enumerate(md.segments) for p, b in enumerate(s.bookies) if b in lost]
    size = sum(replica_bytes(md, i, p) for i, p in replicas)
    total = sum(len(s.bookies) for s in md.segments)
    return f"{len(replicas)} of {total} replicas still on lost bookies" + (f" ({size} bytes)" if size else "")


def classify(ledger: Ledger, cluster: Cluster) -> Stuck:
    """The one reason ``ledger`` is not re-replicated, from what was found."""
    lid, md, at = ledger.ledger_id, ledger.md, ledger.marked_at

    def stuck(reason: str, detail: str, fix: str, safe: bool = False, stale: tuple[int, float] | None = None) -> Stuck:
        size = md.length if md is not None and md.is_closed else 0
        return Stuck(lid, reason, detail, size, at, fix, safe, stale)

    if md is None:
        if ledger.marked:
            return stuck("deleted", "no metadata: the ledger was deleted after it was marked", FIX_COMMAND, True)
        return stuck("deleted", "no metadata: the ledger was deleted", "nothing to do: it holds no data")
    lost = lost_bookies(md, cluster)
    missing = ", ".join(lost) or "none"
    if ledger.held is not None and not ledger.unanswered:
        runs = lost_entries(md, ledger.held)
        if runs:
            where = ", ".join(lost) or "bookies that no longer hold them"
            one = runs == [(runs[0][0], runs[0][0])]
            which = (
                f"entry {runs[0][0]} has no replica left: it was"
                if one
                else f"entries {replicas.format_runs(runs, 4)} have no replica left: they were"
            )
            return stuck(
                "lost",
                f"{which} on {where}",
                f"start {where} again with its disks; if it is gone for good, those entries are lost: delete the "
                f"ledger where it is used (or `bkctl ledger delete {lid}`)"
                + (", which removes the marker" if ledger.marked else ""),
            )
    if lost:
        refusal = placement_refusal(md, lost, cluster)
        if refusal is not None:
            return stuck(
                "no-eligible-bookie",
                refusal,
                "add a writable bookie the placement accepts (another rack), make a read-only one writable "
                "(bkctl bookie readonly --off), or free a full one",
            )
    if ledger.lock is not None:
        lock = ledger.lock
        held_for = max(0, cluster.now_ms - lock.ctime) // 1000
        evidence = gone(lock.session, cluster)
        if evidence is not None:
            return stuck(
                "stale-lock",
                f"locked for {held_for} s by {_holder(lock, cluster)}, {evidence} (ZooKeeper drops the lock when "
                "the session expires)",
                f"release the lock: {FIX_COMMAND}",
                True,
                (lock.session, cluster.sampled_at) if cluster.connected is not None else None,
            )
        how = "connected" if cluster.connected is not None else f"liveness unknown: {cluster.unknown_why}"
        if held_for > LONGEST_HOLD_S:
            how += f"; longer than a worker keeps a failed ledger's lock ({LONGEST_HOLD_S} s): a hung holder?"
        return stuck(
            "in-progress",
            f"locked for {held_for} s by {_holder(lock, cluster)} ({how}); {_left(md, lost)}",
            "wait; if it does not move, look at the holder's log (a hung holder keeps its lock while its session "
            "lives: restart it)",
        )
    answered = ledger.held is not None and not ledger.unanswered
    written = not answered or any(len(a) for a in (ledger.held or {}).values())
    if lost and md.last_entry_id < 0 and (md.is_closed or not written):
        if md.is_closed:
            return stuck(
                "empty",
                f"closed with no entries: nothing to copy, {missing} to be replaced in its metadata only",
                f"replace {missing} in the metadata (copies nothing): {FIX_COMMAND}",
                True,
            )
        return stuck(
            "empty",
            f"{md.state.name}, no entry written yet: a writer may hold it (recovering it would fence and close it "
            "under that writer: apache/pulsar#26074)",
            "leave it to its writer, whose first add replaces the lost bookie; if nothing owns it (a crashed "
            f"writer's leftover), close it with `bkctl ledger recover {lid}` or delete it",
        )
    if not cluster.enabled:
        return stuck("disabled", "autorecovery is disabled", "bkctl autorecovery enable")
    if ledger.marked:
        if not cluster.voters:
            return stuck(
                "no-worker",
                f"no autorecovery process runs; missing replicas: {', '.join(ledger.missing) or missing}",
                "start one: `bkctl autorecovery run`, or autoRecoveryDaemonEnabled=true on the bookies "
                f"(or re-replicate now: `bkctl bookie recover {lost[0] if lost else 'BOOKIE'} --ledger {lid}`)",
            )
        if at is not None and not md.is_closed and set(lost) & set(md.segments[-1].bookies):
            until = at + OPEN_GRACE_MS
            if cluster.now_ms < until:
                return stuck(
                    "delayed",
                    f"open, its last ensemble names {missing}: its writer may replace it until {_iso(until)} "
                    "(openLedgerRereplicationGracePeriod), then a worker fences and recovers it",
                    f"wait until {_iso(until)}",
                )
        return stuck(
            "unknown",
            f"marked, not locked; {len(cluster.voters)} autorecovery processes (auditor {cluster.auditor}), lost "
            f"bookies: {missing}: a worker should take it on its next pass",
            "if it stays, read the autorecovery processes' logs",
        )
    if not lost:
        return stuck(
            "unknown", "not marked, and every bookie of its ensembles is registered", f"bkctl ledger metadata {lid}"
        )
    if not cluster.voters:
        return stuck(
            "no-auditor",
            f"not marked: no autorecovery process runs to audit {missing}",
            f"start one (`bkctl autorecovery run`), or re-replicate now: `bkctl bookie recover {lost[0]}`",
        )
    if cluster.recovery_delay > 0:
        until = cluster.now_ms + cluster.recovery_delay * 1000
        return stuck(
            "delayed",
            f"not marked yet: the auditor marks {missing}'s ledgers lostBookieRecoveryDelay "
            f"({cluster.recovery_delay} s) after it saw the bookie go, by {_iso(until)} at the latest",
            "wait, or `bkctl autorecovery trigger-audit` to mark them now",
        )
    return stuck(
        "unknown",
        f"not marked, names {missing}, which is not registered; auditor {cluster.auditor}",
        "bkctl autorecovery trigger-audit",
    )


def _iso(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

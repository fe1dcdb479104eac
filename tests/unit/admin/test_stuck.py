"""Why a ledger is stuck, from facts alone (admin/stuck/reasons.py): which reason wins, what the detail names, which
fixes are safe. The cluster test (tests/cli/cluster/test_autorecovery_stuck.py) gathers the facts for real."""

from admin.stuck import planned_action
from admin.stuck.reasons import (
    OPEN_GRACE_MS,
    REASONS,
    Cluster,
    Ledger,
    classify,
    lost_entries,
    placement_refusal,
    quorum_racks_ok,
)
from bookie.codec.availability import AvailabilityOfEntries
from bookie.codec.digest import DigestType
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState, Segment
from bookie.meta.registration import READONLY, WRITABLE, BookieServiceInfo, RegisteredBookie
from bookie.meta.underreplication import Lock

NOW = 1_800_000_000_000
GONE = "gone:1"


def bookie(bookie_id: str, rack: str = "/default-rack", state: str = WRITABLE) -> RegisteredBookie:
    return RegisteredBookie(bookie_id, state, BookieServiceInfo(properties={"rack": rack}))


def cluster(*bookies: RegisteredBookie, **facts) -> Cluster:
    facts.setdefault("voters", {7: "auditor:3181"})
    facts.setdefault("connected", {7})
    return Cluster(bookies={b.bookie_id: b for b in bookies}, now_ms=NOW, **facts)


def metadata(*ensemble: str, wq: int = 2, last: int = 9, closed: bool = True) -> LedgerMetadata:
    state = LedgerState.CLOSED if closed else LedgerState.OPEN
    length = (last + 1) * 100 if closed else 0
    return LedgerMetadata(
        len(ensemble), wq, wq, (Segment(0, ensemble),), state, last if closed else -1, length, DigestType.CRC32, b""
    )


def holding(md: LedgerMetadata, **held: list[int]) -> dict[str, AvailabilityOfEntries]:
    """What each bookie holds: ``a=[...]`` for bookie ``a:1``; the others of the ensemble hold nothing."""
    named = {f"{k}:1": AvailabilityOfEntries.from_entries(v) for k, v in held.items()}
    return {b: named.get(b, AvailabilityOfEntries([])) for b in md.segments[0].bookies}


def marked(md: LedgerMetadata | None, **facts) -> Ledger:
    facts.setdefault("marked_at", NOW - 60_000)
    facts.setdefault("missing", (GONE,))
    if md is not None:
        facts.setdefault("held", {b: AvailabilityOfEntries.from_entries(range(10)) for b in md.segments[0].bookies})
    return Ledger(42, md, **facts)


def test_entries_lost_are_those_no_bookie_of_their_write_quorum_holds_in_runs():
    md = metadata("a:1", "b:1", "c:1", last=8)  # E3 W2: entry e on bookies e%3 and (e+1)%3
    assert lost_entries(md, holding(md, a=[0, 2, 3, 5, 6, 8], b=[0, 1, 3, 4, 6, 7], c=[1, 2, 4, 5, 7, 8])) == []
    # c lost: what it shared with a (2, 5, 8) is still on a; with b gone too, 1, 4 and 7 have no copy
    assert lost_entries(md, holding(md, a=[0, 2, 3, 5, 6, 8])) == [(1, 1), (4, 4), (7, 7)]
    single = metadata(GONE, wq=1, last=4)
    assert lost_entries(single, {}) == [(0, 4)]


def test_a_write_quorum_must_span_the_racks_asked_for():
    racks = {"a1": "/a", "a2": "/a", "b1": "/b"}
    # E3 W2: position 2 shares the quorums (1, 2) and (2, 0): with a1 at 0, a2 at 2 leaves (2, 0) on /a alone
    assert not quorum_racks_ok(["a1", "b1", GONE], 2, "a2", 2, 2, racks)
    assert quorum_racks_ok(["b1", "a1", GONE], 2, "a2", 2, 1, racks)
    assert quorum_racks_ok(["a1", GONE, "x"], 1, "b1", 2, 2, racks)  # x, of no known rack, counts as its own


def test_the_placement_refuses_with_the_constraint_named():
    md = metadata("a:1", "b:1", GONE, wq=2)
    full = RegisteredBookie("c:1", READONLY, BookieServiceInfo(properties={"readOnlyReason": "disk-threshold"}))
    refusal = placement_refusal(md, [GONE], cluster(bookie("a:1", "/a"), bookie("b:1", "/b"), full))
    assert refusal == (
        "no writable bookie outside the ensemble of segment 0 (2 writable, all in it; read-only: c:1 (disk-threshold))"
    )
    spare = bookie("d:1", "/a")
    racks = cluster(bookie("a:1", "/a"), bookie("b:1", "/b"), spare, min_racks=2)
    assert "racks: a write quorum must span 2 racks (minNumRacksPerWriteQuorum, enforced)" in (
        placement_refusal(md, [GONE], racks) or ""
    )
    racks.min_racks = None  # not enforced, as BookKeeper's default: the policy takes d:1 on a shared rack
    assert placement_refusal(md, [GONE], racks) is None


def test_a_deleted_ledger_s_marker_is_a_safe_fix_and_an_unmarked_one_needs_none():
    deleted = classify(marked(None), cluster())
    assert (deleted.reason, deleted.safe_fix, deleted.bytes) == ("deleted", True, 0)
    assert planned_action(deleted) == "remove its marker"
    unmarked = classify(Ledger(42, None), cluster())
    assert (unmarked.reason, unmarked.safe_fix, unmarked.marked_at) == ("deleted", False, None)


def test_lost_entries_come_before_the_lock_that_a_worker_holds_on_them():
    md = metadata("a:1", GONE, wq=1, last=3)
    ledger = marked(md, held=holding(md, a=[0, 2]), lock=Lock(42, "w", 99, NOW - 5000))
    stuck = classify(ledger, cluster(bookie("a:1")))
    assert stuck.reason == "lost" and "entries 1, 3 have no replica left: they were on gone:1" in stuck.detail
    assert not stuck.safe_fix and stuck.bytes == 400


def test_a_lock_is_stale_only_when_ZooKeeper_says_its_session_is_connected_nowhere():
    md = metadata("a:1", GONE)
    lock = Lock(42, "worker-1", 0xABC, NOW - 12_000)
    live = cluster(bookie("a:1"), bookie("b:1"), connected={7})
    stale = classify(marked(md, lock=lock), live)
    assert (stale.reason, stale.safe_fix) == ("stale-lock", True)
    assert "locked for 12 s by worker-1, ZooKeeper session 0xabc" in stale.detail
    live.connected = {7, 0xABC}
    busy = classify(marked(md, lock=lock), live)
    assert (busy.reason, busy.safe_fix) == ("in-progress", False)
    assert "1 of 2 replicas still on lost bookies (1000 bytes)" in busy.detail
    hung = classify(marked(md, lock=Lock(42, "worker-1", 0xABC, NOW - 400_000)), live)
    assert hung.reason == "in-progress" and "a hung holder?" in hung.detail
    live.connected = None  # ZooKeeper does not answer `cons`: a lock counts as live
    unknown = classify(marked(md, lock=lock), live)
    assert unknown.reason == "in-progress" and "liveness unknown" in unknown.detail
    live.mover = (0xABC, "bookie drain of b:1")
    assert "by bkctl (bookie drain of b:1)" in classify(marked(md, lock=lock), live).detail
    live.mover_gone = True  # without `cons`: a drain whose process on this host no longer runs
    dead = classify(marked(md, lock=lock), live)
    assert dead.reason == "stale-lock" and "whose process on this host no longer runs" in dead.detail


def test_an_empty_closed_ledger_is_fixed_in_its_metadata_and_an_open_one_is_left_to_its_writer():
    spare = cluster(bookie("a:1"), bookie("b:1"))
    closed = classify(marked(metadata("a:1", GONE, last=-1), held={}), spare)
    assert (closed.reason, closed.safe_fix) == ("empty", True)
    opened = classify(marked(metadata("a:1", GONE, closed=False), held={}), spare)
    assert (opened.reason, opened.safe_fix) == ("empty", False) and "apache/pulsar#26074" in opened.detail
    # an open ledger whose bookies were not all asked may have entries: not called empty
    unanswered = marked(metadata("a:1", GONE, closed=False), held={}, unanswered=frozenset({"a:1"}))
    assert classify(unanswered, spare).reason == "unknown"


def test_what_nothing_runs_to_do():
    md = metadata("a:1", GONE)
    bookies = (bookie("a:1"), bookie("b:1"))
    assert classify(marked(md), cluster(*bookies, enabled=False)).reason == "disabled"
    idle = classify(marked(md), cluster(*bookies, voters={}))
    assert idle.reason == "no-worker" and f"bkctl bookie recover {GONE} --ledger 42" in idle.fix
    queued = classify(marked(md), cluster(*bookies))
    assert queued.reason == "unknown" and "a worker should take it on its next pass" in queued.detail


def test_an_open_ledger_waits_for_its_writer_s_grace_then_a_worker():
    md = metadata("a:1", GONE, closed=False)
    held = {"a:1": AvailabilityOfEntries.from_entries(range(3))}
    bookies = (bookie("a:1"), bookie("b:1"))
    recent = classify(marked(md, held=held, marked_at=NOW - 10_000), cluster(*bookies))
    assert recent.reason == "delayed" and recent.bytes == 0
    assert "until 2027-01-15T08:00:20Z" in recent.detail  # marked at NOW - 10 s, plus 30 s
    assert OPEN_GRACE_MS == 30_000
    late = classify(marked(md, held=held, marked_at=NOW - 40_000), cluster(*bookies))
    assert late.reason == "unknown"


def test_an_unmarked_ledger_waits_for_the_auditor():
    md = metadata("a:1", GONE)
    held = {"a:1": AvailabilityOfEntries.from_entries(range(10))}
    bookies = (bookie("a:1"), bookie("b:1"))
    assert classify(Ledger(42, md, held=held), cluster(*bookies, voters={})).reason == "no-auditor"
    delayed = classify(Ledger(42, md, held=held), cluster(*bookies, recovery_delay=600))
    assert delayed.reason == "delayed" and "by 2027-01-15T08:10:00Z at the latest" in delayed.detail
    fine = classify(Ledger(42, metadata("a:1", "b:1"), held=held), cluster(*bookies))
    assert (fine.reason, fine.marked_at) == ("unknown", None)


def test_every_reason_is_named_in_the_set():
    assert len(set(REASONS)) == len(REASONS) and REASONS[0] == "deleted" and REASONS[-1] == "unknown"

"""bookie drain's plan and summary, from metadata alone: where each replica would go, what waits for its writer,
and the document's fields (those the man page documents)."""

from admin.drain import SUMMARY_FIELDS, DrainReport, plan, summary
from bookie.codec.digest import DigestType
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState, Segment
from bookie.meta.registration import BookieServiceInfo, RegisteredBookie

S = "s:1"


def bookie(bookie_id: str, rack: str = "/default-rack") -> RegisteredBookie:
    return RegisteredBookie(bookie_id, "WRITABLE", BookieServiceInfo(properties={"rack": rack}))


def ledger(*ensembles: tuple[str, ...], closed: bool = True, entries: int = 10, size: int = 100) -> LedgerMetadata:
    segments = tuple(Segment(i * entries, e) for i, e in enumerate(ensembles))
    last = entries * len(segments) - 1
    state = LedgerState.CLOSED if closed else LedgerState.OPEN
    return LedgerMetadata(2, 2, 2, segments, state, last if closed else -1, (last + 1) * size, DigestType.CRC32C, b"")


def test_replicas_go_to_the_least_loaded_bookie_not_in_the_segment_counting_what_the_plan_sent():
    writable = [bookie("a:1"), bookie("b:1"), bookie("c:1")]
    naming = {1: ledger((S, "a:1")), 2: ledger((S, "b:1")), 3: ledger((S, "a:1")), 4: ledger(("a:1", "b:1"))}
    drained = plan(naming, {S}, writable, {"a:1": 0, "b:1": 5000, "c:1": 1500}, {})
    assert [(m.ledger_id, m.source, m.bytes, m.target) for m in drained.moves] == [
        (1, S, 1000, "c:1"),  # a:1 is in the segment; c:1 the lightest of the others
        (2, S, 1000, "a:1"),
        (3, S, 1000, "c:1"),  # a:1 in the segment again; c:1 (2500) below b:1 (5000)
    ]
    assert drained.by_target() == {"a:1": 1000, "c:1": 2000} and drained.bytes == 3000 and drained.ledgers == 3


def test_an_open_ledger_moves_its_closed_segments_and_waits_for_its_writer_on_the_last():
    writable = [bookie("a:1"), bookie("b:1"), bookie("c:1")]
    naming = {7: ledger((S, "a:1"), ("b:1", S), closed=False)}
    drained = plan(naming, {S}, writable, {}, {})
    assert [(m.first_entry_id, m.target) for m in drained.moves] == [(0, "b:1")]
    assert drained.open == {7: [S]}
    assert drained.moves[0].bytes == 0  # an open ledger has no length yet: its bytes are not known


def test_a_rack_the_rest_of_the_segment_does_not_use_comes_before_load():
    writable = [bookie("a:1", "/r1"), bookie("b:1", "/r1"), bookie("c:1", "/r2")]
    drained = plan({1: ledger((S, "a:1"))}, {S, "x:1"}, writable, {"b:1": 0, "c:1": 10**9}, {})
    assert drained.moves[0].target == "c:1"


def test_two_drained_bookies_of_one_segment_never_get_the_same_target():
    writable = [bookie("a:1"), bookie("b:1"), bookie("c:1")]
    drained = plan({1: ledger((S, "x:1", "a:1"))}, {S, "x:1"}, writable, {}, {})
    assert [m.target for m in drained.moves] == ["b:1", "c:1"] and drained.unplaceable() is None


def test_no_bookie_to_take_a_replica_is_a_move_without_a_target_and_refused():
    drained = plan({1: ledger((S, "a:1")), 2: ledger((S, "b:1"))}, {S}, [bookie("a:1")], {}, {})
    assert [(m.ledger_id, m.target) for m in drained.moves] == [(1, None), (2, "a:1")]
    assert drained.unplaceable() == (
        "1 ledgers have a replica no writable bookie can take (every other one is in its segment or drained): "
        "ledger 1; add bookies, or drain fewer at once"
    )


def test_the_summary_has_the_documented_fields_and_next_steps_only_when_complete():
    states = [{"bookieId": S, "readOnly": True, "why": None}]
    done = summary(states, DrainReport(), {}, [])
    assert list(done) == list(SUMMARY_FIELDS)
    assert done["complete"] and done["nextSteps"] == [
        f"bkctl cluster check-impact --bookie {S}",
        f"stop bookie {S}, then: bkctl bookie decommission {S} (nothing left to copy)",
    ]
    left = summary(states, DrainReport(), {9: [S]}, [])
    assert not left["complete"] and left["nextSteps"] == []
    written = summary(states, DrainReport(), {}, [12])  # a ledger written on it while the drain ran
    assert not written["complete"] and written["left"] == [12] and written["nextSteps"] == []
    assert left["open"] == [{"ledgerId": 9, "bookies": [S], "finish": left["open"][0]["finish"]}]
    assert "`bkctl ledger recover 9` closes it now but fences it" in left["open"][0]["finish"]

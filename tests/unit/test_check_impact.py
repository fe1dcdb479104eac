"""The impact levels of check-impact, from metadata alone (the cluster tests: tests/integration/admin/test_check.py)."""

from admin.check import categories as cat
from admin.check.impact import (
    BELOW_ACK_QUORUM,
    DATA_LOSS,
    READ_UNAVAILABLE,
    UNDER_REPLICATED,
    WRITE_UNAVAILABLE,
    Gate,
    assess,
    ledger_impact,
)
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState, Segment

FOUR = {"a", "b", "c", "d"}


def ledger(bookies, e=3, wq=2, aq=2, last=9, state=LedgerState.CLOSED, segments=None):
    return LedgerMetadata(e, wq, aq, segments or (Segment(0, tuple(bookies)),), state=state, last_entry_id=last)


def levels(md, gone, writable=FOUR):
    impact = ledger_impact(1, md, set(gone), set(writable) - set(gone))
    return impact.levels if impact else []


def test_replica_levels_of_a_closed_ledger():
    md = ledger("abc")
    assert levels(md, "d") == []
    assert levels(md, "a") == [BELOW_ACK_QUORUM]  # E3 W2 A2: one copy left of the entries a held
    assert levels(md, "ab") == [DATA_LOSS]  # entry 0's write set is (a, b)
    assert levels(ledger("abc", wq=3), "a") == [UNDER_REPLICATED]
    assert levels(ledger("a", e=1, wq=1, aq=1), "a") == [DATA_LOSS]
    assert levels(ledger("abc", last=0), "c") == []  # entry 0 only: on a and b


def test_the_worst_segment_counts_and_names_its_bookies():
    md = ledger("abc", wq=3, segments=(Segment(0, ("a", "b", "c")), Segment(5, ("a", "d", "c"))))
    impact = ledger_impact(1, md, {"a", "b", "d"}, {"c"})  # both segments lose two: the first is shown
    assert (impact.category, impact.segment, impact.lost_bookies) == (cat.LESS_THAN_AQ, 0, ["a", "b"])


def test_an_open_ledger_cannot_be_recovered_once_aq_of_a_write_set_is_gone():
    open_a2 = ledger("abc", state=LedgerState.OPEN, last=-1)
    assert levels(open_a2, "a") == [BELOW_ACK_QUORUM]  # fencing still covers every write set
    open_a1 = ledger("abc", aq=1, state=LedgerState.OPEN, last=-1)
    assert levels(open_a1, "a") == [READ_UNAVAILABLE, UNDER_REPLICATED]  # only a may have acked an entry
    assert levels(ledger("abc", aq=1), "a") == [UNDER_REPLICATED]  # closed: b or c serves every read
    in_recovery = ledger("abc", state=LedgerState.IN_RECOVERY, last=-1)
    assert levels(in_recovery, "ab", writable="abcde") == [DATA_LOSS, READ_UNAVAILABLE]
    moved_on = ledger(
        "abc", aq=1, state=LedgerState.OPEN, segments=(Segment(0, tuple("abc")), Segment(9, tuple("dbc")))
    )
    assert levels(moved_on, "a") == [UNDER_REPLICATED]  # recovery fences the last ensemble only


def test_an_open_ledger_needs_as_many_writable_bookies_as_its_ensemble():
    md = ledger("abc", state=LedgerState.OPEN, last=-1)
    assert levels(md, "a", writable="abc") == [WRITE_UNAVAILABLE, BELOW_ACK_QUORUM]
    assert levels(md, "d", writable="abcd") == []
    impact = ledger_impact(1, md, set(), {"a", "b"})  # c read-only
    assert (impact.levels, impact.category, impact.lost_bookies) == ([WRITE_UNAVAILABLE], None, ["c"])
    assert levels(ledger("abc"), "a", writable="abc") == [BELOW_ACK_QUORUM]  # closed: takes no writes


def test_the_gate_fails_only_on_levels_it_does_not_allow():
    ledgers = [(1, ledger("abc")), (2, ledger("bcd")), (3, ledger("x", e=1, wq=1, aq=1))]  # x: already gone
    restart, _ = assess(ledgers, ["a"], FOUR, set(), Gate("restart"))
    assert restart.already_gone == ["x"] and restart.writable_left == 3
    assert restart.failed_levels == [DATA_LOSS] and restart.by_level[DATA_LOSS] == [3]
    healthy = [(1, ledger("abc")), (2, ledger("bcd"))]
    report, named = assess(healthy, ["a"], FOUR, set(), Gate("restart"))
    assert named == FOUR and report.safe
    assert report.verdict() == "safe for restart: costs below ack quorum in 1 ledger, which it allows"
    report, _ = assess(healthy, ["a"], FOUR, set(), Gate())
    assert report.verdict() == "UNSAFE for decommission: below ack quorum in 1 ledger"
    report, _ = assess(healthy, ["a"], FOUR, set(), Gate("decommission", frozenset({BELOW_ACK_QUORUM})))
    assert report.safe and report.verdict().startswith("safe for decommission +below-ack-quorum: ")
    assert assess(healthy, ["a", "d"], FOUR, set(), Gate())[0].by_level[BELOW_ACK_QUORUM] == [1, 2]
    doc = report.doc()
    assert list(doc["levels"]) == [DATA_LOSS, READ_UNAVAILABLE, WRITE_UNAVAILABLE, BELOW_ACK_QUORUM, UNDER_REPLICATED]
    assert doc["levels"][BELOW_ACK_QUORUM] == {"ledgers": 1, "allowed": True, "examples": [1]}
    assert doc["ledgers"] == [
        {
            "ledgerId": 1,
            "state": "closed",
            "levels": [BELOW_ACK_QUORUM],
            "category": cat.LESS_THAN_AQ,
            "segment": 0,
            "bookies": ["a"],
        }
    ]

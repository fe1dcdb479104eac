"""The pure halves of the checker: placement verdicts and the replicas analysis."""

from admin.check import categories as c
from admin.check.placement import FAIL, MEETS_SOFT, MEETS_STRICT, segment_verdict
from admin.check.replicas import analyse, lost_entries, missing_runs
from bookie.codec.availability import AvailabilityOfEntries
from bookie.codec.write_set import entries_of_bookie
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState, Segment


def A(entries):
    return AvailabilityOfEntries.from_entries(entries)


def closed(bookies, last, e=3, wq=2, aq=2, segments=None):
    return LedgerMetadata(
        e, wq, aq, segments or (Segment(0, tuple(bookies)),), state=LedgerState.CLOSED, last_entry_id=last
    )


def full(md, bookie_index, first=0, last=None):
    last = md.last_entry_id if last is None else last
    return A(entries_of_bookie(bookie_index, first, last, md.ensemble_size, md.write_quorum_size))


def test_placement_verdicts():
    racks = {"a1": "/a", "a2": "/a", "b1": "/b", "c1": "/c"}
    assert segment_verdict(("a1", "b1", "c1"), 2, racks, 3) == MEETS_STRICT
    assert segment_verdict(("a1", "a2", "b1"), 2, racks, 3) == FAIL  # write quorum (a1, a2) in one rack
    assert segment_verdict(("a1", "b1", "a2"), 3, racks, 3) == MEETS_SOFT  # 2 racks, 3 would be strict
    one_rack = {"a1": "/a", "a2": "/a", "a3": "/a"}
    assert segment_verdict(("a1", "a2", "a3"), 2, one_rack, 1) == MEETS_STRICT  # nothing more is possible


def test_complete_ledger_has_no_finding():
    md = closed(["x", "y", "z"], 29)
    assert analyse(md, {b: full(md, i) for i, b in enumerate("xyz")}) is None


def test_a_wiped_bookie():
    md = closed(["x", "y", "z"], 29, e=3, wq=3, aq=2)  # one wiped bookie leaves 2 copies: at AQ, below WQ
    finding = analyse(md, {"x": full(md, 0), "y": A([]), "z": full(md, 2)})
    assert finding.category == c.LESS_THAN_WQ and finding.bookies == ["y"]
    assert finding.missing_entries["y"] == [(0, 29)] and finding.missing_counts["y"] == 30
    md = closed(["x", "y", "z"], 29, e=3, wq=2, aq=2)  # leaves 1 copy of some entries: below AQ
    finding = analyse(md, {"x": full(md, 0), "y": A([]), "z": full(md, 2)})
    assert finding.category == c.LESS_THAN_AQ
    # one run over the bookie's share (0, 1, 3, 4, ..., 28), not a pair per stripe
    assert finding.missing_entries["y"] == [(0, 28)] and finding.missing_counts["y"] == 20


def test_two_bookies_lose_the_same_entry():
    md = closed(["x", "y", "z"], 5, e=3, wq=2, aq=1)  # entry 1 is written to y and z
    held = {"x": full(md, 0), "y": A([e for e in entries_of_bookie(1, 0, 5, 3, 2) if e != 1]), "z": full(md, 2)}
    assert analyse(md, held).category == c.LESS_THAN_WQ  # entry 1 lost one of its 2 copies; AQ 1 still met
    held["z"] = A([e for e in entries_of_bookie(2, 0, 5, 3, 2) if e != 1])
    finding = analyse(md, held)
    assert finding.category == c.NO_REPLICA and finding.missing_entries == {"y": [(1, 1)], "z": [(1, 1)]}


def test_fewer_than_aq():
    md = closed(["w", "x", "y", "z"], 11, e=4, wq=3, aq=2)
    held = {b: full(md, i) for i, b in enumerate("wxyz")}
    held["x"] = A([])
    held["y"] = A([])
    assert analyse(md, held).category == c.LESS_THAN_AQ  # an entry on w, x, y keeps 1 copy: below AQ 2


def test_segments_are_checked_against_their_own_ensembles():
    segments = (Segment(0, ("x", "y", "z")), Segment(10, ("x", "q", "z")))
    md = closed(None, 19, segments=segments)
    held = {
        "x": A(list(entries_of_bookie(0, 0, 9, 3, 2)) + list(entries_of_bookie(0, 10, 19, 3, 2))),
        "y": A(entries_of_bookie(1, 0, 9, 3, 2)),
        "z": A(list(entries_of_bookie(2, 0, 9, 3, 2)) + list(entries_of_bookie(2, 10, 19, 3, 2))),
        "q": A(entries_of_bookie(1, 10, 19, 3, 2)),
    }
    assert analyse(md, held) is None  # y need not hold anything past entry 9
    held["q"] = A([])
    finding = analyse(md, held)
    assert finding.segment == 10 and finding.bookies == ["q"]


def test_missing_entries_are_runs_of_what_the_bookie_must_hold():
    share = list(entries_of_bookie(1, 0, 11, 3, 2))  # 0, 1, 3, 4, 6, 7, 9, 10
    assert missing_runs(share, [0, 1, 3, 7, 9, 10]) == [(0, 3), (7, 10)]
    assert missing_runs(share, [4]) == [(4, 4)]
    assert missing_runs(share, []) == []
    md = closed(["x", "y", "z"], 11, e=3, wq=2, aq=1)
    held = {"x": full(md, 0), "y": A([4, 6]), "z": full(md, 2)}
    finding = analyse(md, held)
    assert finding.missing_entries == {"y": [(0, 3), (7, 10)]} and finding.missing_counts == {"y": 6}


def test_lost_entries_are_those_no_bookie_of_their_write_set_holds():
    md = closed(["x", "y", "z"], 11, e=3, wq=2, aq=1)
    held = {b: full(md, i) for i, b in enumerate("xyz")}
    assert lost_entries(md, held) == []
    held["y"] = A([])  # one wiped bookie: every entry keeps a copy
    assert lost_entries(md, held) == []
    held["z"] = A([e for e in entries_of_bookie(2, 0, 11, 3, 2) if e not in (1, 2, 4)])
    assert lost_entries(md, held) == [(1, 1), (4, 4)]  # 1 and 4 are on y and z; 2 is on z and x
    held = {b: A([]) for b in "xyz"}
    assert lost_entries(md, held) == [(0, 11)]


def test_lost_entries_follow_each_segment_and_skip_an_open_ledgers_last():
    segments = (Segment(0, ("x", "y")), Segment(5, ("q", "r")))
    md = closed(None, 9, e=2, wq=2, aq=2, segments=segments)
    held = {"x": A(range(5)), "y": A([]), "q": A([]), "r": A([5, 6])}
    assert lost_entries(md, held) == [(7, 9)]
    still_open = LedgerMetadata(2, 2, 2, segments, state=LedgerState.OPEN, last_entry_id=-1)
    held["x"] = A([])
    assert lost_entries(still_open, {**held, "y": A([0, 1])}) == [(2, 4)]  # the last segment is not final


def test_every_field_of_the_check_report_is_documented_in_the_man_page_and_monitoring_md():
    from pathlib import Path

    from admin.check.checker import REPORT_FIELDS, CheckReport, Violation

    report = CheckReport(
        violations=[
            Violation(1, c.UNAVAILABLE_BOOKIES, None, ["b:1"], error="refused"),
            Violation(None, c.SLOW_BOOKIES, None, ["b:2"], reason="add p99 90 ms is 30x the others' median 3 ms"),
        ]
    )
    doc = report.doc()
    fields = set(doc) | {f"violations[].{key}" for violation in doc["violations"] for key in violation}
    assert set(REPORT_FIELDS) == fields  # bkctl-cluster(1) prints REPORT_FIELDS
    monitoring = (Path(__file__).resolve().parents[2] / "docs" / "monitoring.md").read_text()
    assert [f for f in fields if f"| `{f}` |" not in monitoring] == []

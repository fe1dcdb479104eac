"""The rebalance planner's inputs (admin/rebalance/inputs.py): stored bytes are a bookie's live bytes, a replica's
bytes what its source holds of the ledger split over its segments, open segments do not move, and a bookie with no
storage view is counted from the metadata."""

from __future__ import annotations

from admin.rebalance.inputs import capacity_of, gather
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState, Segment
from bookie.storage.usage import DirView, GcView, LogView, StorageView

A, B, JAVA = "a:3181", "b:3181", "java:3181"
GC = GcView(0.2, 0.8, 3600, 86400, 600_000, 86_400_000)


def md(*segments: Segment, closed=True, entries=10, length=10_000, e=2, wq=2) -> LedgerMetadata:
    state = LedgerState.CLOSED if closed else LedgerState.OPEN
    return LedgerMetadata(e, wq, wq, segments, state, entries - 1 if closed else -1, length if closed else 0)


def view(bookie: str, ledgers: dict[int, int], local: dict[int, int], disk: int = 10**9) -> StorageView:
    dirs = [
        DirView("/j", "journal", {}, disk, disk // 2),
        DirView("/l1", "ledger", {}, disk, disk // 2),
        DirView("/l2", "ledger", {}, disk, disk // 2),  # the same filesystem as /l1: counted once
    ]
    return StorageView(bookie, "interleaved", "admin", dirs, [LogView(1, "/l1", 10**6, ledgers)], local, GC)


METADATA = {
    1: md(Segment(0, (A, B))),  # closed: a and b hold it
    2: md(Segment(0, (A, B)), Segment(6, (A, JAVA))),  # closed, two segments naming a
    3: md(Segment(0, (A, B)), Segment(5, (B, JAVA)), closed=False),  # open: a is only in the first segment
    4: md(Segment(0, (B, A)), closed=False),  # open: its last segment names a and b
    5: md(Segment(0, (B, JAVA))),  # a held it once: not owned
}
VIEWS = {
    A: view(A, {1: 11_000, 2: 9_000, 3: 4_000, 4: 500, 5: 7_000}, {1: 10, 2: 10, 3: 5, 4: 2, 5: 10}),
    B: view(B, {1: 11_000, 2: 6_000, 3: 4_000, 4: 500, 5: 11_000}, {1: 10, 2: 6, 3: 5, 4: 2, 5: 10}),
    JAVA: None,
}


def test_stored_bytes_are_the_live_bytes_and_a_bookie_without_a_view_is_estimated():
    inputs = gather([A, B, JAVA], VIEWS, METADATA)
    stored = {b.bookie_id: b.stored for b in inputs.bookies}
    assert stored[A] == 11_000 + 9_000 + 4_000 + 500  # not ledger 5: a replica it no longer owns
    assert stored[B] == 11_000 + 6_000 + 4_000 + 500 + 11_000
    # JAVA: closed ledgers' write sets at the mean entry size (1000 B) plus each record's head and CRC32 digest
    assert stored[JAVA] == (4 + 10) * (1000 + 36 + 8)
    assert inputs.estimated == [JAVA] and inputs.capacity_assumed == [JAVA]
    assert {b.bookie_id: b.capacity for b in inputs.bookies} == {A: 10**9, B: 10**9, JAVA: 10**9}


def test_replicas_carry_what_the_source_holds_split_by_entries_and_open_segments_stay():
    inputs = gather([A, B, JAVA], VIEWS, METADATA)
    on_a = {(r.ledger_id, r.first_entry_id): r for r in inputs.replicas if r.bookie_id == A}
    assert set(on_a) == {(1, 0), (2, 0), (2, 6), (3, 0)}
    # ledger 2 on a: entries 0..5 in the first segment, 6..9 in the second: 9000 bytes split 6:4
    assert (on_a[2, 0].bytes, on_a[2, 6].bytes) == (5_400, 3_600)
    assert on_a[2, 6].position == 0 and on_a[2, 6].ensemble == (A, JAVA)
    assert on_a[3, 0].bytes == 4_000  # an open ledger's closed segment moves
    assert inputs.open_ledgers == [3, 4] and inputs.open_bytes == {A: 500, B: 4_000 + 500, JAVA: 0}


def test_capacity_counts_one_filesystem_once():
    assert capacity_of(view(A, {}, {}, disk=5 * 10**9)) == 5 * 10**9

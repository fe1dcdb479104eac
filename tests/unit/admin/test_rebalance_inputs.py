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
    assert inputs.not_owned == {(A, 5)}  # a's entries of ledger 5, which names it no more


def test_capacity_counts_one_filesystem_once():
    assert capacity_of(view(A, {}, {}, disk=5 * 10**9)) == 5 * 10**9


def test_after_an_interrupted_move_the_source_frees_all_it_holds_and_the_target_gains_its_share():
    """An interrupted move from a to java split ledger 6 at entry 6: java has 0..5, a still 6..9, and a's index all
    10 entries. Moving a's replica copies 4 entries and frees the 10."""
    metadata = {6: md(Segment(0, (JAVA, B)), Segment(6, (A, B)))}
    views = {A: view(A, {6: 10_000}, {6: 10}), B: view(B, {6: 10_000}, {6: 10})}
    (replica,) = [r for r in gather([A, B], views, metadata).replicas if r.bookie_id == A]
    assert (replica.first_entry_id, replica.bytes, replica.freed) == (6, 4_000, 10_000)


def test_without_its_index_count_a_source_missing_from_a_segment_copies_the_metadata_share():
    """A running interleaved bookie counts no entries (-1): a, not in ledger 6's first segment, may hold entries of
    it (here all 10), so its copy is the metadata's share of its segment, 4 entries of 1044 bytes."""
    metadata = {6: md(Segment(0, (JAVA, B)), Segment(6, (A, B)))}
    views = {A: view(A, {6: 10_440}, {6: -1}), B: view(B, {6: 10_440}, {6: -1})}
    replicas = gather([A, B], views, metadata).replicas
    (on_a,) = [r for r in replicas if r.bookie_id == A]
    assert (on_a.bytes, on_a.freed) == (4 * 1044, 10_440)
    on_b = [r for r in replicas if r.bookie_id == B]  # asked for all it holds, in both segments
    assert [(r.bytes, r.freed) for r in on_b] == [(6 * 1044, None), (4 * 1044, None)]


def test_entries_a_journal_replay_wrote_twice_are_freed_but_copied_once():
    """a's logs hold ledger 7's 10 entries twice (its journal was replayed after a restart): the copy writes them
    once, the metadata's share; a frees both."""
    metadata = {7: md(Segment(0, (A, B)), length=10_000)}
    views = {A: view(A, {7: 2 * 10_440}, {7: -1}), B: view(B, {7: 10_440}, {7: -1})}
    replicas = {r.bookie_id: r for r in gather([A, B], views, metadata).replicas}
    assert (replicas[A].bytes, replicas[A].freed) == (10_440, 2 * 10_440)
    assert (replicas[B].bytes, replicas[B].freed) == (10_440, None)

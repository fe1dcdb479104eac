"""The cluster's usage: each bookie's gap split by cause, Pulsar orphans apart, totals, the order, the bars."""

from __future__ import annotations

from admin.usage.cluster import BookieUsage, by_gap, totals
from admin.usage.explain import explain
from bkctl.cluster.usage import bar_parts
from bookie.storage.usage import LogView, StorageView

from .test_explain import ME, METADATA, gc, md, view


def test_the_gap_is_split_by_the_states_of_the_ledgers_holding_it():
    explained = explain(view(), METADATA, now=1_000_000.0)
    bookie = BookieUsage(explained, "writable", orphans={1})
    gap = bookie.gap_by_cause
    # ledger 3 deleted: 6000 + 1000; 4 in no metadata: 2000; 5 no longer ours: 2000
    assert {k: gap[k] for k in ("deleted", "not-in-metadata", "not-owned")} == {
        "deleted": 7000,
        "not-in-metadata": 2000,
        "not-owned": 2000,
    }
    assert sum(gap.values()) == explained.entry_log_bytes - explained.expected_bytes
    assert bookie.orphan_bytes == 4000  # Pulsar's ledger 1: 3000 + 1000, in the gap's no cause
    doc = bookie.doc(logs=1)
    assert (doc["state"], doc["gapByCause"], doc["pulsarOrphanBytes"], len(doc["logs"])) == ("writable", gap, 4000, 1)
    assert doc["bookieId"] == ME and doc["reclaimableBytes"] == explained.major.reclaimed


def test_totals_add_up_and_the_largest_gap_comes_first():
    full = BookieUsage(explain(view(), METADATA, now=1_000_000.0), "writable", orphans=set())
    clean_view = StorageView("b:3181", "db", "admin", [], [LogView(9, "/l", 1036, {2: 1036})], {2: 10}, gc())
    clean = BookieUsage(explain(clean_view, {2: md(bookies=("b:3181",))}), "read-only", orphans=set())
    ordered = by_gap([clean, full])
    assert [b.explained.bookie_id for b in ordered] == [ME, "b:3181"]
    summary = totals(ordered)
    assert summary["entryLogBytes"] == 28_000 + 1036
    assert summary["gapBytes"] == sum(sum(b.gap_by_cause.values()) for b in ordered)
    assert summary["gapByCause"]["deleted"] == 7000
    assert summary["pulsarOrphanBytes"] == 0
    unread = BookieUsage(clean.explained, "writable")  # Pulsar's metadata not read: no figure, not 0
    assert totals([full, unread])["pulsarOrphanBytes"] is None


def test_a_bar_is_scaled_to_the_fullest_bookie_and_shows_every_part_that_holds_bytes():
    assert bar_parts(100, 50, 25, scale=100, width=40) == [20, 10, 10]
    assert bar_parts(50, 50, 0, scale=100, width=40) == [20, 0, 0]
    assert bar_parts(1000, 1, 1, scale=1000, width=40) == [1, 1, 38]  # a sliver still shows, within the width
    assert bar_parts(10, 20, 5, scale=10, width=10) == [10, 0, 0]  # expected above held: all of it expected
    assert bar_parts(0, 0, 0, scale=0) == [0, 0, 0]


def test_logs_of_the_same_id_in_two_directories_are_two_logs():
    """DbLedgerStorage numbers each ledger directory's logs apart: 0.log in /a and 0.log in /b are both counted,
    both compacted, and a ledger's bytes in each are kept apart."""
    logs = [LogView(0, "/a", 10_000, {1: 2000, 2: 8000}), LogView(0, "/b", 10_000, {3: 2000, 4: 8000})]
    two = StorageView(ME, "db", "admin", [], logs, {1: -1, 3: -1}, gc())
    explained = explain(two, {1: md(), 3: md()}, threshold=0.5)
    assert [(log.directory, log.log_id, log.live) for log in explained.logs] == [("/a", 0, 2000), ("/b", 0, 2000)]
    assert explained.at_threshold is not None and explained.at_threshold.compacted == [("/a", 0), ("/b", 0)]
    assert explained.ledgers[1].logs == {("/a", 0): 2000} and explained.ledgers[3].logs == {("/b", 0): 2000}
    assert sum(r.bytes for r in explained.reasons if r.reason == "deleted-ledgers") == 0  # 2 and 4: no index

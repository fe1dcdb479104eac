"""One bookie's storage explained: ledger states and owners, live and dead bytes per log, reasons with bytes, the
-o json document and --ledger, over a view written out by hand."""

from __future__ import annotations

from admin.usage.explain import document, explain, ledger_detail
from admin.usage.ledgers import State, state_of
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState, Segment
from bookie.storage.usage import DirView, GcView, LogView, StorageView

ME, OTHER = "me:3181", "other:3181"
TOPIC = {
    "application": b"pulsar",
    "component": b"managed-ledger",
    "pulsar/managed-ledger": b"public/default/persistent/orders",
}


def md(bookies=(ME,), closed=True, custom=None, entries=10) -> LedgerMetadata:
    return LedgerMetadata(
        len(bookies),
        len(bookies),
        1,
        (Segment(0, tuple(bookies)),),
        LedgerState.CLOSED if closed else LedgerState.OPEN,
        entries - 1 if closed else -1,
        entries * 100 if closed else 0,
        custom_metadata=custom or {},
    )


def gc(**changes) -> GcView:
    values = dict(  # noqa: C408 (GcView's own names)
        minor_threshold=0.2,
        major_threshold=0.8,
        minor_interval_s=3600,
        major_interval_s=86400,
        gc_wait_ms=600_000,
        overreplicated_wait_ms=86_400_000,
        next_run=1_000_600.0,
    )
    return GcView(**{**values, **changes})


def view(**gc_changes) -> StorageView:
    """Ledger 1: Pulsar's, open; 2: closed, not Pulsar's; 3: deleted in the metadata, still indexed; 4: in no
    metadata, no index; 5: the metadata names another bookie now; 6: owned, no index entry."""
    logs = [
        LogView(1, "/l", 10_000, {1: 3000, 3: 6000}, modified=999_000.0),  # 33% live
        LogView(2, "/l", 10_000, {2: 9000}, modified=999_500.0),  # 100% live
        LogView(3, "/l", 5_000, {4: 2000, 5: 2000}, stalled="entry log 3: damaged record at 1024"),
        LogView(4, "/l", 3_000, {1: 1000, 3: 1000, 6: 500}, active=True, modified=1_000_000.0),
    ]
    dirs = [DirView("/l", "ledger", {"journal": 0, "entryLogs": 28_000, "index": 100, "other": 0}, 10**9, 10**8)]
    local = {1: -1, 2: -1, 3: -1, 5: -1}
    return StorageView(ME, "interleaved", "admin", dirs, logs, local, gc(**gc_changes))


METADATA = {1: md(closed=False, custom=TOPIC), 2: md(), 5: md(bookies=(OTHER,)), 6: md(), 7: md(bookies=(ME, OTHER))}


def test_states():
    assert state_of(md(), ME, in_index=True) == State.CLOSED
    assert state_of(md(closed=False), ME, in_index=True) == State.OPEN
    assert state_of(md(), ME, in_index=False) == State.NO_INDEX
    assert state_of(md(bookies=(OTHER,)), ME, in_index=True) == State.NOT_OWNED
    assert state_of(None, ME, in_index=True) == State.DELETED
    assert state_of(None, ME, in_index=False) == State.NOT_IN_METADATA


def test_logs_live_and_dead_with_their_ledgers():
    explained = explain(view(), METADATA, now=1_000_000.0)
    by_id = {log.log_id: log for log in explained.logs}
    assert [log.log_id for log in explained.logs] == [1, 2, 3, 4]  # largest first
    assert (by_id[1].live, by_id[1].dead, round(by_id[1].gc.usage, 2)) == (3000, 7000, 0.33)
    assert [(f.ledger_id, str(f.state), f.owner, size) for f, size in by_id[1].ledgers] == [
        (3, "deleted", None, 6000),
        (1, "open", "persistent://public/default/orders", 3000),
    ]
    assert [(f.ledger_id, str(f.state)) for f, _ in by_id[3].ledgers] == [(4, "not-in-metadata"), (5, "not-owned")]
    assert [(f.ledger_id, str(f.state)) for f, _ in by_id[4].ledgers][-1] == (6, "no-index")
    assert (by_id[1].age_s, by_id[4].age_s) == (1000.0, 0.0)
    # live: owned and indexed (1 and 2); ledger 7 names the bookie but it holds nothing of it
    assert (explained.entry_log_bytes, explained.live_bytes) == (28_000, 3000 + 9000 + 1000)


def test_reclaimable_at_each_kind_and_the_threshold():
    explained = explain(view(), METADATA, now=1_000_000.0, threshold=0.5)
    assert explained.minor.compacted == []  # log 1 is at 33%, log 3 is stalled
    assert explained.major.compacted == [("/l", 1)]  # log 2 at 100% and the active log stay
    assert explained.major.copied == 3000
    assert explained.at_threshold is not None and explained.at_threshold.compacted == [("/l", 1)]
    assert explained.reclaim is explained.at_threshold


def reasons_of(explained) -> dict[str, int]:
    return {r.reason + (f" {r.extra['owner']}" if "owner" in r.extra else ""): r.bytes for r in explained.reasons}


def test_reasons_with_their_bytes():
    explained = explain(view(), METADATA, now=1_000_000.0)
    assert reasons_of(explained) == {
        "live None": 9000,
        "live persistent://public/default/orders": 4000,
        "deleted-ledgers": 7000,
        "not-in-metadata": 2000,
        "no-index": 500,
        "not-owned": 2000,
        "above-threshold": 1000,  # log 2: 9000 of 10000 live, at 90%
        "stalled-log": 5000,
        "active-log": 2000,
    }
    deleted = next(r for r in explained.reasons if r.reason == "deleted-ledgers")
    assert deleted.extra == {"ledgers": [3], "nextRunTime": 1_000_600_000}
    stalled = next(r for r in explained.reasons if r.reason == "stalled-log")
    assert stalled.extra == {"logId": 3, "error": "entry log 3: damaged record at 1024"}


def test_suspended_and_disabled_compaction_are_reasons():
    explained = explain(view(suspended=["major"], minor_interval_s=0), METADATA, now=1_000_000.0)
    found = {(r.reason, r.extra.get("kind")): r.bytes for r in explained.reasons if r.reason.startswith("compaction")}
    assert found == {("compaction-suspended", "major"): explained.major.reclaimed, ("compaction-disabled", "minor"): 0}


def test_expected_bytes_and_the_json_document():
    doc = document(explain(view(), METADATA, now=1_000_000.0), logs=2)
    # 2: 10 entries of 100 B (closed, not counted by the index: the estimate), 6 and 7 likewise; 1 is open: its bytes
    per_closed = 10 * 100 + 10 * (36 + 8)
    assert doc["expectedBytes"] == 3 * per_closed + 4000
    assert doc["expectedLedgers"] == 4
    assert {
        "bookieId",
        "entryLogBytes",
        "liveBytes",
        "deadBytes",
        "expectedBytes",
        "reclaimableBytes",
        "logs",
        "reasons",
    } <= doc.keys()
    assert doc["bookieId"] == ME and doc["deadBytes"] == 28_000 - 13_000
    assert doc["reclaimableBytes"] == doc["reclaim"]["major"]["reclaimableBytes"]
    assert [log["logId"] for log in doc["logs"]] == [1, 2]
    assert doc["logs"][0]["ledgers"][0] == {"ledgerId": 3, "bytes": 6000, "state": "deleted", "owner": None}
    assert {"reason", "bytes"} <= doc["reasons"][0].keys()


def test_a_ledger_where_it_is_and_what_keeps_it():
    explained = explain(view(), METADATA, now=1_000_000.0)
    doc = ledger_detail(explained, 3)
    assert (doc["state"], doc["heldBytes"], doc["expectedBytes"]) == ("deleted", 7000, None)
    assert [(d["logId"], d["bytes"]) for d in doc["logs"]] == [(1, 6000), (4, 1000)]
    assert "next GC run" in doc["logs"][0]["keptBy"] and "active" in doc["logs"][1]["keptBy"]
    unknown = ledger_detail(explained, 99)
    assert (unknown["state"], unknown["logs"]) == ("not-in-metadata", [])

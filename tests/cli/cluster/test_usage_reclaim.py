"""Issue 30's acceptance on a running bookie: two Pulsar topics written at once share the entry logs; one is deleted.
`bookie usage` names the dead bytes, the logs holding them and what compaction would reclaim at 0.2 / 0.5 / 0.8;
`cluster usage` splits the gap by cause and counts a Pulsar orphan apart; a major compaction at 0.8 then frees what
the estimate said, within 5%, and the other topic reads back whole."""

import json
from pathlib import Path

import pytest
from pulsar_broker import Broker, managed_ledger_metadata

from bookie.client import BookKeeper
from bookie.storage.entry_log import list_log_ids, log_path

ENTRIES = 300
LOG_LIMIT = 128 * 1024


def payload(topic: bytes, i: int) -> bytes:
    return (topic + b"-%06d-" % i).ljust(1000, b".")


def sealed_log_bytes(bookie, active: int) -> int:
    """The bytes of the sealed logs, on disk: the active log grows as the bookie flushes what it buffered, at times
    of its own, and compaction never takes it."""
    ledger_dir = Path(bookie.ledger_dir)
    return sum(log_path(ledger_dir, i).stat().st_size for i in list_log_ids(ledger_dir) if i != active)


def one_copy(bk, custom_metadata: dict[str, bytes], entries: int) -> int:
    handle = bk.create_ledger(1, 1, 1, custom_metadata=custom_metadata)
    for i in range(entries):
        handle.add_entry(payload(b"gone", i))
    handle.close()
    return handle.ledger_id


@pytest.fixture
def topics(harness, cluster):
    """One bookie, 128 KiB entry logs, no scheduled GC run; topics keep and drop written entry by entry in turn (every
    log holds both), drop then deleted; a third topic's ledger that Pulsar's metadata does not reference, two hours
    old: an orphan. Returns (bookie, keep's ledger, drop's ledger, the orphan)."""
    (bookie,) = harness.start(1, logSizeLimit=LOG_LIMIT, gcWaitTime=3_600_000, compactionRate=0)
    root = cluster.root.rsplit("/", 1)[0]
    with BookKeeper(harness.service_uri) as bk:
        broker = Broker(cluster, root, bk, create=lambda custom, entries, close: one_copy(bk, custom, entries))
        keep, drop = (
            bk.create_ledger(1, 1, 1, custom_metadata=managed_ledger_metadata(f"t/ns/persistent/{name}"))
            for name in ("keep", "drop")
        )
        for i in range(ENTRIES):
            keep.add_entry(payload(b"keep", i))
            drop.add_entry(payload(b"drop", i))
        keep.close()
        drop.close()
        broker.managed_ledger("t/ns/persistent/keep", [keep.ledger_id])
        orphan = broker.data_ledger("t/ns/persistent/gone", entries=20)
        broker.age(orphan, 7200)
        bk.delete_ledger(drop.ledger_id)
    return bookie, keep.ledger_id, drop.ledger_id, orphan


def test_usage_explains_the_dead_topic_and_compaction_frees_what_it_said(bkctl, service_uri, topics):
    bookie, keep, drop, orphan = topics
    doc = json.loads(
        bkctl("-u", service_uri, "bookie", "usage", bookie.bookie_id, "--logs", "100", "-o", "json").stdout
    )
    assert doc["source"] == "admin" and doc["bookieId"] == bookie.bookie_id
    states = {ledger["ledgerId"]: ledger["state"] for log in doc["logs"] for ledger in log["ledgers"]}
    assert states == {keep: "closed", drop: "deleted", orphan: "closed"}
    held = dict.fromkeys(states, 0)
    for log in doc["logs"]:
        for ledger in log["ledgers"]:
            held[ledger["ledgerId"]] += ledger["bytes"]
    assert held[keep] == held[drop] > ENTRIES * 1000
    sealed = [log for log in doc["logs"] if not log["active"]]
    assert len(sealed) >= 3
    both = [log for log in sealed if {keep, drop} <= {ledger["ledgerId"] for ledger in log["ledgers"]}]
    assert len(both) == len(sealed)  # the topics share every log
    owners = {ledger["ledgerId"]: ledger["owner"] for log in doc["logs"] for ledger in log["ledgers"]}
    # a deleted ledger's metadata, and with it its owner, is gone
    assert owners == {keep: "persistent://t/ns/keep", drop: None, orphan: "persistent://t/ns/gone"}
    reasons = {r["reason"]: r for r in doc["reasons"]}
    assert reasons["deleted-ledgers"]["bytes"] == held[drop] and reasons["deleted-ledgers"]["ledgers"] == [drop]
    assert doc["deadBytes"] >= held[drop] and doc["liveBytes"] == held[keep] + held[orphan]
    assert doc["expectedBytes"] == held[keep] + held[orphan]

    reclaim = {}
    for threshold in ("0.2", "0.5", "0.8"):
        at = bkctl("-u", service_uri, "bookie", "usage", bookie.bookie_id, "--threshold", threshold, "-o", "json")
        assert at.exit_code == 0, at.stderr
        reclaim[threshold] = json.loads(at.stdout)["reclaim"]["threshold"]
    assert reclaim["0.2"]["reclaimableBytes"] == 0  # every sealed log is about half live
    assert (
        reclaim["0.2"]["reclaimableBytes"] <= reclaim["0.5"]["reclaimableBytes"] <= reclaim["0.8"]["reclaimableBytes"]
    )
    at_major = reclaim["0.8"]
    assert sorted(log["logId"] for log in at_major["logsCompacted"]) == sorted(log["logId"] for log in sealed)
    assert at_major == {**doc["reclaim"]["major"], "threshold": 0.8}  # the bookie's major threshold is 0.8

    everything = bkctl("-u", service_uri, "cluster", "usage", "-o", "json")
    assert everything.exit_code == 0, everything.stderr
    cluster = json.loads(everything.stdout)
    (summary,) = cluster["bookies"]
    assert summary["gapByCause"]["deleted"] == held[drop] and summary["pulsarOrphanBytes"] == held[orphan]
    assert summary["reclaimableBytes"] == at_major["reclaimableBytes"] and summary["state"] == "writable"
    assert cluster["totals"]["gapBytes"] == summary["gapBytes"] == sum(summary["gapByCause"].values())
    chart = bkctl("-u", service_uri, "cluster", "usage")
    assert chart.exit_code == 0, chart.stderr
    assert f"{bookie.bookie_id} █" in chart.stdout and "▓ reclaimable" in chart.stdout

    (active,) = [log["logId"] for log in doc["logs"] if log["active"]]
    before = sealed_log_bytes(bookie, active)
    gc = bkctl("-u", service_uri, "bookie", "gc", bookie.bookie_id, "--major", "--wait", "-o", "json")
    assert gc.exit_code == 0, gc.stderr
    freed = before - sealed_log_bytes(bookie, active)
    assert abs(freed - at_major["reclaimableBytes"]) <= 0.05 * at_major["reclaimableBytes"], (freed, at_major)
    after = json.loads(bkctl("-u", service_uri, "bookie", "usage", bookie.bookie_id, "-o", "json").stdout)
    assert "deleted-ledgers" not in {r["reason"] for r in after["reasons"]}

    assert bkctl("-u", service_uri, "bookie", "readonly", bookie.bookie_id, "--on").exit_code == 0
    readonly = json.loads(bkctl("-u", service_uri, "cluster", "usage", "-o", "json").stdout)
    assert [b["state"] for b in readonly["bookies"]] == ["readonly"]  # as `bookies list` names it

    with BookKeeper(service_uri) as bk:
        handle = bk.open_ledger(keep, password=b"")
        assert [e.payload for e in handle.read(0, ENTRIES - 1)] == [payload(b"keep", i) for i in range(ENTRIES)]

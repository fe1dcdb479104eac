"""`ledger list --bookie` and `bookie usage` on real bookies: the ledgers naming a bookie with their share by write set
(ensemble 3, write quorum 2), and a stopped bookie's directories explained: a deleted ledger's bytes dead and named
as a reason, the kept ledger's live and as expected."""

import json

import pytest

from bookie.client import BookKeeper

ENTRIES, PAYLOAD = 30, 100


@pytest.fixture
def striped(harness):
    """Three bookies (no GC run during the test), two ledgers over all three, ensemble 3 and write quorum 2: each
    bookie holds 20 of each ledger's 30 entries. Returns (bookies, kept ledger id, deleted ledger id)."""
    bookies = harness.start(3, gcWaitTime=3_600_000)
    with BookKeeper(harness.service_uri) as bk:
        ids = []
        for _ in range(2):
            ledger = bk.create_ledger(3, 2, 2, password=b"pw")
            ledger.add_entries(b"x" * PAYLOAD for _ in range(ENTRIES))
            ledger.close()
            ids.append(ledger.ledger_id)
    return bookies, ids[0], ids[1]


def test_ledger_list_bookie_and_usage_of_a_stopped_bookie(bkctl, service_uri, harness, striped):
    bookies, kept, gone = striped
    first = bookies[0]
    listed = bkctl("-u", service_uri, "ledger", "list", "--bookie", first.bookie_id, "-o", "json")
    assert listed.exit_code == 0, listed.stderr
    shares = json.loads(listed.stdout)
    assert [(s["ledgerId"], s["state"], s["entries"]) for s in shares] == [(kept, "CLOSED", 20), (gone, "CLOSED", 20)]
    assert shares[0]["bytes"] > 20 * PAYLOAD
    unknown = bkctl("-u", service_uri, "ledger", "list", "--bookie", "nowhere:3181")
    assert (unknown.exit_code, unknown.stderr.strip()) == (
        5,
        "error: no bookie nowhere:3181: not registered, no cookie, and no ledger names it",
    )

    with BookKeeper(harness.service_uri) as bk:
        bk.delete_ledger(gone)
    first.stop()
    result = bkctl("-c", str(first.conf_path), "bookie", "usage", first.bookie_id, "--offline", "-o", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    held = {ledger["ledgerId"]: ledger for log in doc["logs"] for ledger in log["ledgers"]}
    assert (held[kept]["state"], held[gone]["state"]) == ("closed", "deleted")
    kept_bytes = sum(ledger["bytes"] for log in doc["logs"] for ledger in log["ledgers"] if ledger["ledgerId"] == kept)
    gone_bytes = sum(ledger["bytes"] for log in doc["logs"] for ledger in log["ledgers"] if ledger["ledgerId"] == gone)
    assert kept_bytes == gone_bytes > 20 * PAYLOAD  # 20 entries of each
    # entries of one size: the metadata's length spread over them is exactly what the logs hold
    assert (doc["bookieId"], doc["liveBytes"], doc["expectedBytes"]) == (first.bookie_id, kept_bytes, kept_bytes)
    assert doc["deadBytes"] == doc["entryLogBytes"] - kept_bytes
    reasons = {r["reason"]: r for r in doc["reasons"]}
    assert reasons["deleted-ledgers"]["bytes"] == gone_bytes and reasons["deleted-ledgers"]["ledgers"] == [gone]
    assert doc["bytesByKind"]["entryLogs"] == doc["entryLogBytes"]

    text = bkctl("-c", str(first.conf_path), "bookie", "usage", first.bookie_id, "--offline", "--threshold", "0.9")
    assert text.exit_code == 0, text.stderr
    assert "at --threshold (0.9)" in text.stdout and "deleted-ledgers" in text.stdout
    where = bkctl("-c", str(first.conf_path), "bookie", "usage", first.bookie_id, "--offline", "--ledger", str(gone))
    assert where.exit_code == 0, where.stderr
    assert f"{gone} (deleted)" in where.stdout and "KEPT BY" in where.stdout

"""bookie recover and decommission against real bookies: afterwards the check is clean."""

import json

from admin.check import categories as cat
from bookie.client import BookKeeper
from bookie.meta.cookies import CookieStore

from support.checks import check, ledgers_naming, wipe, write_ledgers


def test_wiped_bookie_is_reported_then_recovered_and_the_check_is_clean(harness, bkctl):
    bookies = harness.start(4)
    ids = write_ledgers(harness.service_uri, 6, quorum=(3, 3, 2), entries=50)
    victim = next(b for b in bookies if ledgers_naming(bkctl, harness.service_uri, b.bookie_id))
    named = ledgers_naming(bkctl, harness.service_uri, victim.bookie_id)
    wipe(victim)
    harness.restart(victim)
    code, doc = check(bkctl, harness.service_uri)
    assert code == 3 and {v["ledgerId"] for v in doc["violations"]} == set(named)
    assert all(v["category"] == cat.LESS_THAN_WQ for v in doc["violations"])

    dry = bkctl("-u", harness.service_uri, "bookie", "recover", victim.bookie_id, "--dry-run", "-o", "json")
    assert sorted(d["ledgerId"] for d in json.loads(dry.stdout)) == sorted(named)
    result = bkctl("-u", harness.service_uri, "bookie", "recover", victim.bookie_id, "--yes", "-o", "json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert sorted(report["recovered"]) == sorted(named) and report["failed"] == {}
    assert report["entries"] == 50 * len(named)  # E = WQ: it held every entry of its ledgers
    assert ledgers_naming(bkctl, harness.service_uri, victim.bookie_id) == []
    assert check(bkctl, harness.service_uri)[0] == 0
    with BookKeeper(harness.service_uri) as bk:
        for ledger_id in ids:
            assert [e.payload for e in bk.open_ledger(ledger_id).read(0, 49)] == [b"entry-%d" % i for i in range(50)]


def test_an_open_ledger_on_a_dead_bookie_is_fenced_and_closed_first(harness, bkctl):
    bookies = harness.start(4)
    with BookKeeper(harness.service_uri) as bk:
        ledger = bk.create_ledger(3, 2, 2)
        ledger.add_entries(b"open-%d" % i for i in range(30))
        ensemble = bk.ledger_metadata(ledger.ledger_id).segments[0].bookies
        dead = next(b for b in bookies if b.bookie_id == ensemble[0])
        dead.stop(kill=True)
        skipped = bkctl(
            "-u", harness.service_uri, "bookie", "recover", dead.bookie_id, "--skip-open", "--yes", "-o", "json"
        )
        assert json.loads(skipped.stdout)["skippedOpen"] == [ledger.ledger_id]
        result = bkctl("-u", harness.service_uri, "bookie", "recover", dead.bookie_id, "--yes", "-o", "json")
        assert result.exit_code == 0, result.stdout + result.stderr
        md = bk.ledger_metadata(ledger.ledger_id)
        assert md.is_closed and md.last_entry_id >= 29 and dead.bookie_id not in md.segments[-1].bookies
        reader = bk.open_ledger(ledger.ledger_id)
        assert [e.payload for e in reader.read(0, 29)] == [b"open-%d" % i for i in range(30)]


def test_decommission_a_dead_bookie(harness, bkctl, cluster):
    bookies = harness.start(5)
    write_ledgers(harness.service_uri, 4, quorum=(3, 2, 2), entries=40)
    victim, second = [b for b in bookies if ledgers_naming(bkctl, harness.service_uri, b.bookie_id)][:2]
    refused = bkctl("-u", harness.service_uri, "bookie", "decommission", victim.bookie_id, "--yes")
    assert refused.exit_code == 2 and "still registered" in refused.stderr
    victim.stop()  # a clean stop unregisters at once
    result = bkctl("-u", harness.service_uri, "bookie", "decommission", victim.bookie_id, "--yes")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[-1] == (
        f"bookie/{victim.bookie_id} decommissioned: no ledger names it, cookie removed"
    )
    assert ledgers_naming(bkctl, harness.service_uri, victim.bookie_id) == []
    assert victim.bookie_id not in CookieStore(cluster).list()
    assert check(bkctl, harness.service_uri)[0] == 0

    second.stop()  # -o json: one document, whatever the rounds it took
    result = bkctl("-u", harness.service_uri, "bookie", "decommission", second.bookie_id, "--yes", "-o", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["bookieId"], doc["decommissioned"]) == (second.bookie_id, True)
    assert doc["rounds"] and all(not r["failed"] for r in doc["rounds"])
    assert ledgers_naming(bkctl, harness.service_uri, second.bookie_id) == []

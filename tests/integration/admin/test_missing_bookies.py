"""A bookie killed with kill -9 is named wherever an operator looks: cluster info, bookies list --all, completion of
the commands about a lost bookie, cluster check (with the next steps), and autorecovery status says that nothing
will re-replicate its ledgers."""

import json

from support.checks import check, ledgers_naming, write_ledgers
from support.cli import values
from support.waiting import wait_for


def test_a_killed_bookie_is_missing_everywhere_an_operator_looks(harness, bkctl):
    uri = harness.service_uri
    bookies = harness.start(4)  # zkTimeout 6 s: its registration expires a few seconds after the kill
    write_ledgers(uri, 4, quorum=(3, 2, 2))
    victim = next(b for b in bookies if ledgers_naming(bkctl, uri, b.bookie_id))
    named = len(ledgers_naming(bkctl, uri, victim.bookie_id))
    victim.stop(kill=True)

    def info():
        return json.loads(bkctl("-u", uri, "cluster", "info", "-o", "json").stdout)["bookies"]

    bookies_doc = wait_for(lambda: (doc := info())["missingIds"] and doc, "the killed bookie to be missing", 60)
    assert bookies_doc == {"writable": 3, "readonly": 0, "missing": 1, "missingIds": [victim.bookie_id]}
    text = bkctl("-u", uri, "cluster", "info").stdout
    assert f"Missing bookies:          1 ({victim.bookie_id})\n" in text, text

    listed = json.loads(bkctl("-u", uri, "bookies", "list", "--all", "-o", "json").stdout)
    (row,) = (r for r in listed if r["state"] == "missing")
    assert row["bookieId"] == victim.bookie_id and row["ledgers"] == named and row["endpoints"] == []
    assert row["cookieCreateTime"] <= row["lastKnownAliveTime"]  # its newest ledger, placed after its first start
    assert row["lastKnownAliveTimeIso"].endswith("Z")
    table = bkctl("-u", uri, "bookies", "list", "--all").stdout.splitlines()
    assert table[0].split()[:5] == ["BOOKIE", "STATE", "RACK", "MISSING", "AFTER"]
    assert [line.split()[:2] for line in table[1:]][-1] == [victim.bookie_id, "missing"]
    assert victim.bookie_id not in bkctl("-u", uri, "bookies", "list").stdout

    for command in (["bookie", "recover"], ["bookie", "decommission"], ["cluster", "check-impact", "--bookie"]):
        assert victim.bookie_id in values("-u", uri, *command, ""), command
    assert victim.bookie_id not in values("-u", uri, "bookie", "gc", "")  # for live bookies only

    code, doc = check(bkctl, uri)
    assert code == 3 and doc["unavailableBookies"] == [victim.bookie_id]
    (unavailable,) = (v for v in doc["violations"] if v["category"] == "NUM_BOOKIES_UNAVAILABLE")
    assert unavailable["error"] == f"not registered: missing, {named} ledgers name it"
    assert doc["nextSteps"] == [
        f"bkctl cluster check-impact --bookie {victim.bookie_id}",
        f"bkctl bookie recover {victim.bookie_id}",
        f"bkctl bookie decommission {victim.bookie_id}",
    ]
    text = bkctl("-u", uri, "cluster", "check", "--recheck-delay", "0").stdout
    assert f"next steps:\n  bkctl cluster check-impact --bookie {victim.bookie_id}\n" in text, text

    status = bkctl("-u", uri, "autorecovery", "status")
    assert status.exit_code == 3, status.output
    assert ["Auditor:", "<none>"] in [line.split() for line in status.stdout.splitlines()]
    assert status.stderr == (
        "error: autorecovery is enabled but no auditor or replication worker runs: nothing will re-replicate the "
        "ledgers of a lost bookie (`bkctl autorecovery run` starts both)\n"
    )
    assert bkctl("-u", uri, "autorecovery", "disable").exit_code == 0
    assert bkctl("-u", uri, "autorecovery", "status").exit_code == 0  # disabled: nothing is expected to run


def test_a_bookie_whose_registration_expires_while_cluster_info_reads_is_counted_once(harness, bkctl, monkeypatch):
    """`cluster info` counts writable, read-only and missing bookies from one listing of the registry: a bookie
    whose registration goes away between two reads was counted writable and missing at once."""
    from bookie.meta.registration import WRITABLE, BookieRegistry

    uri = harness.service_uri
    bookies = harness.start(2)
    victim = bookies[1]
    listing = BookieRegistry.list

    def list_then_expire(self, *args, **kwargs):
        listed = listing(self, *args, **kwargs)
        if victim.pid is not None:  # the first listing: the victim's session expires right after it
            victim.stop(kill=True)
            self.store.zk.delete(self._node(victim.bookie_id, WRITABLE))
        return listed

    monkeypatch.setattr(BookieRegistry, "list", list_then_expire)
    doc = json.loads(bkctl("-u", uri, "cluster", "info", "-o", "json").stdout)["bookies"]
    assert doc == {"writable": 2, "readonly": 0, "missing": 0, "missingIds": []}  # as of the one listing

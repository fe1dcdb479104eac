"""The autorecovery endpoints of BookKeeper's HTTP admin API on our bookies, with real bookies lost and a real
`bkctl autorecovery run` as the auditor: what they show agrees with bkctl's own commands."""

from __future__ import annotations

import json
import sys

from bookie.client import BookKeeper
from bookie.local.process import spawn, stop_process_group
from bookie.meta.cookies import CookieStore

from support.checks import check, ledgers_naming, write_ledgers
from support.cluster import http_call as call
from support.waiting import wait_for

UR = "/api/v1/autorecovery"


def test_under_replicated_ledgers_of_a_lost_bookie_with_an_auditor_running(harness, bkctl, tmp_path):
    uri = harness.service_uri
    asked = harness.start(1, http=True)[0]
    bookies = harness.start(3)
    write_ledgers(uri, 6, quorum=(3, 2, 2), entries=10)
    assert call(asked, "PUT", f"{UR}/status?enabled=false")[::2] == (200, '{\n  "enabled" : false\n}')
    assert json.loads(bkctl("-u", uri, "autorecovery", "status", "-o", "json").stdout)["enabled"] is False
    pid = spawn(
        [sys.executable, "-m", "bkctl", "-u", uri, "autorecovery", "run", "--poll", "0.3"],
        tmp_path / "autorecovery.log",
    )
    try:
        wait_for(lambda: call(asked, "GET", f"{UR}/who_is_auditor")[0] == 200, "an auditor")
        auditor = json.loads(bkctl("-u", uri, "autorecovery", "who-is-auditor", "-o", "json").stdout)["auditor"]
        assert call(asked, "GET", f"{UR}/who_is_auditor")[2] == f"Auditor: {auditor}"
        assert call(asked, "PUT", f"{UR}/trigger_audit")[::2] == (
            404,
            "Exception when do operation.Autorecovery is disabled. So giving up!",
        )

        victim = next(b for b in bookies if ledgers_naming(bkctl, uri, b.bookie_id))
        named = sorted(ledgers_naming(bkctl, uri, victim.bookie_id))
        victim.stop()  # lost: unregistered at once; the auditor marks its ledgers (delay 0), nobody replicates
        wait_for(lambda: call(asked, "GET", f"{UR}/list_under_replicated_ledger")[0] == 200, "marked ledgers")
        wait_for(
            lambda: json.loads(call(asked, "GET", f"{UR}/list_under_replicated_ledger")[2]) == named,
            "every ledger of the lost bookie marked",
        )
        missing = json.loads(call(asked, "GET", f"{UR}/list_under_replicated_ledger?printmissingreplica")[2])
        assert missing == {str(lid): [victim.bookie_id] for lid in named}
        assert (
            json.loads(call(asked, "GET", f"{UR}/list_under_replicated_ledger?missingreplica={victim.bookie_id}")[2])
            == named
        )
        assert call(asked, "GET", f"{UR}/list_under_replicated_ledger?excludingmissingreplica={victim.bookie_id}")[
            ::2
        ] == (404, "No under replicated ledgers found")
        listed = json.loads(bkctl("-u", uri, "autorecovery", "list-under-replicated", "-o", "json").stdout)
        assert sorted(d["ledgerId"] for d in listed) == named
        info = json.loads(call(asked, "GET", "/api/v1/bookie/cluster_info")[2])
        assert (
            info["auditorElected"],
            info["auditorId"],
            info["clusterUnderReplicated"],
            info["ledgerReplicationEnabled"],
            info["unavailableBookiesCount"],
        ) == (True, auditor, True, False, 1)

        assert call(asked, "PUT", f"{UR}/status?enabled=true")[::2] == (200, '{\n  "enabled" : true\n}')
        assert call(asked, "PUT", f"{UR}/trigger_audit")[::2] == (200, "Success trigger audit.")
        wait_for(
            lambda: (
                call(asked, "GET", f"{UR}/list_under_replicated_ledger")[::2]
                == (404, "No under replicated ledgers found")
            ),
            "re-replication",
            90,
        )
        assert not ledgers_naming(bkctl, uri, victim.bookie_id)
    finally:
        stop_process_group(pid)


def test_lost_bookie_recovery_delay_is_what_bkctl_reads_and_sets(harness, bkctl):
    uri = harness.service_uri
    (asked,) = harness.start(1, http=True)
    delay = f"{UR}/lost_bookie_recovery_delay"
    # nobody set it yet (no auditor ever started): BookKeeper's read of the znode fails
    assert call(asked, "GET", delay)[::2] == (
        404,
        "Exception when get lostBookieRecoveryDelay.Error contacting zookeeper",
    )
    assert call(asked, "PUT", delay, '{"delay_seconds": 7}')[::2] == (200, "Success set lostBookieRecoveryDelay to 7")
    shown = bkctl("-u", uri, "autorecovery", "lost-bookie-recovery-delay", "-o", "json")
    assert json.loads(shown.stdout) == {"lostBookieRecoveryDelay": 7}
    assert bkctl("-u", uri, "autorecovery", "lost-bookie-recovery-delay", "--set", "9").exit_code == 0
    assert call(asked, "GET", delay)[::2] == (200, "lostBookieRecoveryDelay value: 9")


def test_decommission_and_recover_re_replicate_stopped_bookies(harness, bkctl, cluster):
    uri = harness.service_uri
    asked = harness.start(1, http=True)[0]
    bookies = harness.start(4)
    ids = write_ledgers(uri, 6, quorum=(3, 2, 2), entries=30)
    named = [b for b in bookies if ledgers_naming(bkctl, uri, b.bookie_id)]
    retired, lost = named[:2]

    # still registered: answered at once as BookKeeper does, refused in the background (and said so in the log)
    status, _, text = call(asked, "PUT", f"{UR}/decommission", json.dumps({"bookie_src": retired.bookie_id}))
    assert (status, text) == (200, f"Success send decommission Bookie command {retired.bookie_id}")
    wait_for(lambda: "still registered" in asked.log_path.read_text(), "the refusal in the bookie's log")
    assert ledgers_naming(bkctl, uri, retired.bookie_id)

    retired.stop()
    assert call(asked, "PUT", f"{UR}/decommission", json.dumps({"bookie_src": retired.bookie_id}))[0] == 200
    wait_for(lambda: not ledgers_naming(bkctl, uri, retired.bookie_id), "decommission", 60)
    done = f"bookie {retired.bookie_id} decommissioned: no ledger names it"
    wait_for(lambda: done in asked.log_path.read_text(), "the end of the decommission in the bookie's log")
    assert retired.bookie_id in CookieStore(cluster).list()  # BookKeeper's decommission keeps the cookie

    lost.stop(kill=True)
    status, _, text = call(
        asked, "PUT", f"{UR}/bookie", json.dumps({"bookie_src": [lost.bookie_id], "delete_cookie": True})
    )
    assert (status, text) == (200, "Success send recovery request command.")
    wait_for(lambda: lost.bookie_id not in CookieStore(cluster).list(), "recovery, then the cookie deleted", 60)
    assert not ledgers_naming(bkctl, uri, lost.bookie_id)
    assert check(bkctl, uri)[0] == 0
    with BookKeeper(uri) as bk:
        for ledger_id in ids:
            assert [e.payload for e in bk.open_ledger(ledger_id).read(0, 29)] == [b"entry-%d" % i for i in range(30)]

"""A replication worker says how far it is: `autorecovery status` shows the ledger it copies, the entries and bytes
copied so far of what the lost replica holds, while the copy waits for a paused bookie; nothing once it is done."""

import json
import os
import signal
import sys

from bookie.client import BookKeeper
from bookie.local.process import spawn, stop_process_group
from bookie.meta.replication_progress import ReplicationProgress

from support.checks import ledgers_naming
from support.waiting import wait_for


def replicating(bkctl, uri) -> list[dict]:
    return json.loads(bkctl("-u", uri, "autorecovery", "status", "-o", "json").stdout)["replicating"]


def test_status_shows_how_far_a_worker_is(harness, bkctl, cluster, tmp_path):
    bookies = harness.start(3, zkTimeout=30000)  # a paused bookie keeps its registration
    with BookKeeper(harness.service_uri) as bk:
        ledger = bk.create_ledger(3, 2, 2)
        ledger.add_entries(b"entry-%d" % i for i in range(300))
        ledger.close()
        ensemble = bk.ledger_metadata(ledger.ledger_id).segments[0].bookies
    [spare] = harness.start(1)  # the only bookie the lost replica can go to
    by_id = {b.bookie_id: b for b in bookies}
    victim, before = by_id[ensemble[0]], by_id[ensemble[2]]
    # the victim's entries come from the bookie after it (e % 3 == 0) and the one before it (e % 3 == 2)
    pid = spawn(
        [sys.executable, "-m", "bkctl", "-u", harness.service_uri, "autorecovery", "run", "--poll", "0.3"],
        tmp_path / "autorecovery.log",
    )
    paused = False
    try:
        wait_for(
            lambda: bkctl("-u", harness.service_uri, "autorecovery", "who-is-auditor").exit_code == 0, "an auditor"
        )
        os.kill(before.pid, signal.SIGSTOP)  # its stripe waits; the other stripe is copied
        paused = True
        victim.stop()
        # entries 0, 3, 6, ...: the stripe of the bookie after the victim, written within a second of the copy
        wait_for(
            lambda: [p for p in replicating(bkctl, harness.service_uri) if p["entries"] == 100],
            "the worker to say what it copied",
            30,
        )
        [progress] = replicating(bkctl, harness.service_uri)
        assert progress["ledgerId"] == ledger.ledger_id and progress["worker"]
        assert 0 < progress["bytes"] < progress["totalBytes"]
        assert progress["startedAtIso"] and progress["updatedAt"] >= progress["startedAt"]
        text = bkctl("-u", harness.service_uri, "autorecovery", "status").stdout
        assert f"ledger/{ledger.ledger_id} being re-replicated by {progress['worker']}: 100 entries, " in text

        os.kill(before.pid, signal.SIGCONT)
        paused = False
        wait_for(lambda: not ledgers_naming(bkctl, harness.service_uri, victim.bookie_id), "the copy to end", 30)
        wait_for(lambda: not replicating(bkctl, harness.service_uri), "the progress record to go", 10)
        assert ReplicationProgress(cluster).list() == []
        assert ledger.ledger_id in ledgers_naming(bkctl, harness.service_uri, spare.bookie_id)
    finally:
        if paused:
            os.kill(before.pid, signal.SIGCONT)
        stop_process_group(pid)

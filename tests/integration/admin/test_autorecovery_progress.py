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
    bookies = harness.start(3, zkTimeout=60000)  # a paused bookie keeps its registration past the 30 s wait
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


def test_a_record_left_by_another_session_is_replaced_by_one_of_ours(cluster, service_uri):
    """After a stale lock's release, the dead holder's progress record (ephemeral, its session's) is still there: a
    new worker's record must be its own, or it would vanish when the dead session expires."""
    from bookie.meta.store import MetadataStore
    from bookie.meta.uri import parse_service_uri

    with MetadataStore(parse_service_uri(service_uri)) as dead:
        ReplicationProgress(dead).start(7, "dead-worker", 100)
        progress = ReplicationProgress(cluster)
        progress.start(7, "worker-1", 200)
        assert cluster.owns(progress.path(7))
        [record] = progress.list()
        assert (record.worker, record.total_bytes) == ("worker-1", 200)
        progress.start(7, "worker-1", 300)  # again, as a retry of the same session does
        assert cluster.owns(progress.path(7)) and progress.list()[0].total_bytes == 300
    assert [p.worker for p in progress.list()] == ["worker-1"]  # the dead session is closed: ours stays

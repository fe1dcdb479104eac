"""Issue 32's acceptance for `autorecovery list-under-replicated --explain/--fix`: one rack-aware cluster (racks
enforced by -c) with a ledger of each reason, marked as the auditor marks them once bookie X is gone for good:
deleted, lost (E1 W1 A1 on X), no-eligible-bookie (no free rack), a lock held by a live worker then by the same
worker killed (in-progress, then stale-lock), empty and open (its writer's), empty and closed. --fix clears the
deleted, the stale lock and the closed empty ledger, and leaves the rest; every mode exits 3 while any is stuck."""

import json
import os
import signal
import subprocess
import sys

from bookie.client import BookKeeper
from bookie.client.bookkeeper import LedgerHandle
from bookie.codec.digest import DigestType
from bookie.local.zookeeper import connected_sessions
from bookie.meta.underreplication import UnderReplicationManager

from support.waiting import wait_for

HOLD_LOCK = """
import sys, time
from bookie.meta.store import MetadataStore
from bookie.meta.underreplication import UnderReplicationManager
from bookie.meta.uri import parse_service_uri
store = MetadataStore(parse_service_uri(sys.argv[1]), session_timeout=20)
assert UnderReplicationManager(store).try_lock(int(sys.argv[2]), "worker-1")
print(hex(store.session_id), flush=True)
time.sleep(600)
"""


def ledger_on(bk, ensemble, quorum, entries, close=True):
    writer = bk.run(bk.core.create(len(ensemble), quorum, quorum, DigestType.CRC32, b"", None, ensemble=ensemble))
    handle = LedgerHandle(bk, writer)
    if entries:
        handle.add_entries(b"entry-%d" % i for i in range(entries))
    if close:
        handle.close()
    return handle.ledger_id


def reasons(result):
    return {row["ledgerId"]: row["reason"] for row in json.loads(result.stdout)}


def test_each_reason_explained_and_only_safe_fixes_applied(harness, bkctl, cluster, service_uri, tmp_path):
    a1, _ = harness.start(2, bookieRack="/rack-a")  # a1, and the only bookie left outside no_rack's ensemble
    (b1,) = harness.start(1, bookieRack="/rack-b")
    (x,) = harness.start(1, bookieRack="/rack-c")
    conf = tmp_path / "bk.conf"
    conf.write_text(
        f"metadataServiceUri={service_uri}\nenforceMinNumRacksPerWriteQuorum=true\nminNumRacksPerWriteQuorum=2\n"
    )
    ur = UnderReplicationManager(cluster)
    with BookKeeper(service_uri) as bk:
        lost = ledger_on(bk, [x.bookie_id], 1, 5)
        # X's replacement at position 2 must share a write quorum with a1 (rack-a), and a2 is all that is left
        no_rack = ledger_on(bk, [a1.bookie_id, b1.bookie_id, x.bookie_id], 2, 4)
        locked = ledger_on(bk, [b1.bookie_id, x.bookie_id], 2, 3)
        open_empty = ledger_on(bk, [b1.bookie_id, x.bookie_id], 2, 0, close=False)  # a broker's head ledger
        closed_empty = ledger_on(bk, [b1.bookie_id, x.bookie_id], 2, 0)
        deleted = ledger_on(bk, [b1.bookie_id, x.bookie_id], 2, 1)
        x.stop()  # gone for good: its registration goes with its session
        wait_for(lambda: x.bookie_id not in {b.bookie_id for b in bk.core.registry.list(True, True)}, "X to go")
        for ledger_id in (lost, no_rack, locked, open_empty, closed_empty, deleted):
            ur.mark(ledger_id, [x.bookie_id])
        bk.delete_ledger(deleted)

        worker = subprocess.Popen(
            [sys.executable, "-c", HOLD_LOCK, service_uri, str(locked)],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        try:
            session = int(worker.stdout.readline(), 16)
            explain = ("-c", str(conf), "autorecovery", "list-under-replicated", "--explain")
            table = bkctl(*explain)
            assert table.exit_code == 3, table.stderr
            assert table.stdout.splitlines()[0].split()[:6] == ["LEDGER", "REASON", "MARKED", "BYTES", "DETAIL", "FIX"]
            assert "6 stuck: 2 empty, 1 deleted, 1 in-progress, 1 lost, 1 no-eligible-bookie" in table.stdout
            assert "under-replicated ledgers stay stuck" in table.stderr

            os.kill(worker.pid, signal.SIGKILL)  # the killed worker's session outlives it, its lock with it
            worker.wait()
            wait_for(lambda: session not in connected_sessions(*cluster.uri.hosts[0]), "the worker's connection")
            assert ur.lock(locked) is not None
            listed = bkctl(*explain, "-o", "json")
            assert listed.exit_code == 3
            rows = {row["ledgerId"]: row for row in json.loads(listed.stdout)}
            assert {lid: row["reason"] for lid, row in rows.items()} == {
                lost: "lost",
                no_rack: "no-eligible-bookie",
                locked: "stale-lock",
                open_empty: "empty",
                closed_empty: "empty",
                deleted: "deleted",
            }
            for row in rows.values():  # the rows of `list-under-replicated` with the explanation
                assert {"ledgerId", "missingReplicas", "ctime", "reason", "bytes", "markedAt", "fix"} <= row.keys()
                assert row["missingReplicas"] == [x.bookie_id] and row["markedAt"] == row["ctime"]
            assert "entries 0-4 have no replica left" in rows[lost]["detail"]
            assert rows[lost]["bytes"] > 0 and rows[deleted]["bytes"] == 0
            assert "racks" in rows[no_rack]["detail"] and "/rack-a" in rows[no_rack]["detail"]
            assert "worker-1" in rows[locked]["detail"] and f"0x{session:x}" in rows[locked]["detail"]
            assert "apache/pulsar#26074" in rows[open_empty]["detail"]
            assert [lid for lid, row in rows.items() if row["safeFix"]] == sorted([locked, closed_empty, deleted])

            fix = ("-c", str(conf), "autorecovery", "list-under-replicated", "--fix")
            dry = bkctl(*fix, "--dry-run", "-o", "json")
            assert dry.exit_code == 3
            assert {a["ledgerId"] for a in json.loads(dry.stdout)["applied"]} == {locked, closed_empty, deleted}
            assert ur.count() == 6 and ur.lock(locked) is not None  # a dry run changes nothing
            refused = bkctl(*fix)  # no terminal to confirm on, no --yes
            assert refused.exit_code == 2 and "without --yes" in refused.stderr

            fixed = bkctl(*fix, "--yes", "-o", "json")
            assert fixed.exit_code == 3, fixed.stderr
            doc = json.loads(fixed.stdout)
            assert {(a["ledgerId"], a["done"]) for a in doc["applied"]} == {
                (locked, True),
                (closed_empty, True),
                (deleted, True),
            }
            assert {row["ledgerId"]: row["reason"] for row in doc["stuck"]} == {
                lost: "lost",
                no_rack: "no-eligible-bookie",
                locked: "no-worker",  # its lock released; nothing runs to re-replicate it
                open_empty: "empty",
            }
            assert ur.lock(locked) is None and ur.get(deleted) is None and ur.get(closed_empty) is None
            md = bk.ledger_metadata(closed_empty)
            assert x.bookie_id not in md.segments[0].bookies and md.is_closed and md.last_entry_id == -1
            assert not bk.ledger_metadata(open_empty).is_closed  # never fenced under its writer
        finally:
            worker.kill()
            worker.wait()

    # without -c's rack rule the placement takes a2 for the ledger without a free rack
    assert reasons(bkctl("-u", service_uri, *explain[2:], "-o", "json"))[no_rack] == "no-worker"

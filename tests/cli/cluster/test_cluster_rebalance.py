"""Issue 31's acceptance for `cluster rebalance`: three bookies on three racks grown to five, the two new ones
empty; the dry run's plan, then the run. Afterwards the bookies' live bytes (their own storage views, through
`cluster usage`) are within the target and within 5% of what the dry run predicted, no segment's placement is
weaker, and every entry reads back."""

import json
import os
import re
import signal
import subprocess
import sys

import pytest

from admin.check.placement import segment_verdict
from bookie.client import BookKeeper
from bookie.client.move import MovementLock
from bookie.meta.registration import BookieRegistry

from support.checks import check
from support.waiting import wait_for

RACKS = ("/r1", "/r2", "/r3", "/r1", "/r2")  # bookies 1-3, then the two new ones
LEDGERS = 24
ENTRY = 2048
RANK = {"FAIL": 0, "MEETS_SOFT": 1, "MEETS_STRICT": 2}


def payload(ledger: int, entry: int) -> bytes:
    return (b"%d-%d-" % (ledger, entry)).ljust(ENTRY, b"r")


def write(uri) -> dict[int, int]:
    """Closed E2 W2 A2 ledgers of 8 to 123 entries of 2 KiB (about 6.5 MB of replicas): {ledger id: entries}."""
    written = {}
    with BookKeeper(uri) as bk:
        for i in range(LEDGERS):
            ledger = bk.create_ledger(2, 2, 2)
            count = 8 + 5 * i
            ledger.add_entries(payload(ledger.ledger_id, e) for e in range(count))
            ledger.close()
            written[ledger.ledger_id] = count
    return written


def verdicts(store, uri, ledger_ids) -> dict[tuple[int, int], str]:
    registered = BookieRegistry(store).list(writable=True, readonly=True)
    rack_of = {b.bookie_id: b.rack for b in registered}
    racks = len(set(rack_of.values()))
    with BookKeeper(uri) as bk:
        found = {}
        for ledger_id in ledger_ids:
            md = bk.ledger_metadata(ledger_id)
            for s in md.segments:
                found[ledger_id, s.first_entry_id] = segment_verdict(s.bookies, md.write_quorum_size, rack_of, racks)
        return found


def live_bytes(bkctl, uri) -> dict[str, int]:
    result = bkctl("-u", uri, "cluster", "usage", "-o", "json")
    assert result.exit_code == 0, result.stderr
    return {b["bookieId"]: b["liveBytes"] for b in json.loads(result.stdout)["bookies"]}


def spread(stored: dict[str, int]) -> float:
    mean = sum(stored.values()) / len(stored)
    return 100 * (max(stored.values()) - min(stored.values())) / mean


@pytest.fixture
def grown(harness):
    """Three bookies with the ledgers, then two empty ones: (ledgers written, the new bookies' ids)."""
    for rack in RACKS[:3]:
        harness.start(1, bookieRack=rack)
    written = write(harness.service_uri)
    return written, [harness.start(1, bookieRack=rack)[0].bookie_id for rack in RACKS[3:]]


def test_three_bookies_grown_to_five_are_rebalanced_as_the_dry_run_said(harness, bkctl, cluster, grown):
    uri = harness.service_uri
    written, new = grown
    placement = verdicts(cluster, uri, written)
    before = live_bytes(bkctl, uri)
    assert all(before[b] == 0 for b in new) and spread(before) > 100

    dry = bkctl("-u", uri, "cluster", "rebalance", "--dry-run", "-o", "json")
    assert dry.exit_code == 0, dry.stderr + dry.stdout
    plan = json.loads(dry.stdout)
    assert plan["dryRun"] and plan["withinTarget"] and plan["reason"] == {"kind": "reached", "detail": None}
    assert plan["spread"]["before"] > 100 and plan["spread"]["planned"] <= 10
    predicted = {b["bookieId"]: b["predictedBytes"] for b in plan["bookies"]}
    assert {b["bookieId"]: b["storedBytes"] for b in plan["bookies"]} == before
    assert set(new) <= {m["to"] for m in plan["moves"]}
    assert sum(m["bytes"] for m in plan["moves"]) == plan["movedBytes"] < 0.5 * sum(before.values())
    assert verdicts(cluster, uri, written) == placement  # a dry run changes nothing

    with MovementLock(cluster, "drain of somewhere"):  # another data movement: refused, naming it
        refused = bkctl("-u", uri, "cluster", "rebalance", "--yes")
        assert refused.exit_code == 1 and "drain of somewhere" in refused.stderr

    run = bkctl("-u", uri, "cluster", "rebalance", "--yes", "-o", "json")
    assert run.exit_code == 0, run.stderr + run.stdout
    done = json.loads(run.stdout)
    assert len(done["run"]["moved"]) == len(plan["moves"]) and not done["run"]["failed"]
    measured = live_bytes(bkctl, uri)
    assert {b["bookieId"]: b["measuredBytes"] for b in done["bookies"]} == measured
    assert spread(measured) <= 10 and done["spread"]["measured"] <= 10
    for bookie, size in measured.items():
        assert abs(size - predicted[bookie]) <= 0.05 * predicted[bookie], (bookie, size, predicted[bookie])
    after = verdicts(cluster, uri, written)
    assert after.keys() == placement.keys()
    assert all(RANK[after[key]] >= RANK[placement[key]] for key in placement)
    with BookKeeper(uri) as bk:
        for ledger_id, count in written.items():
            entries = bk.open_ledger(ledger_id).read(0, count - 1)
            assert [e.payload for e in entries] == [payload(ledger_id, e) for e in range(count)]
    assert check(bkctl, uri)[0] == 0

    again = bkctl("-u", uri, "cluster", "rebalance", "--yes", "-o", "json")  # balanced: nothing to do
    assert again.exit_code == 0 and json.loads(again.stdout)["moves"] == []


def test_open_ledgers_leave_the_target_unreachable_and_it_says_why(harness, bkctl):
    """Two bookies hold only a ledger a writer keeps open, a third is empty: nothing may move (exit 3)."""
    uri = harness.service_uri
    harness.start(2)
    with BookKeeper(uri) as bk:
        writer = bk.create_ledger(2, 2, 2)
        writer.add_entries(payload(writer.ledger_id, e) for e in range(50))
        harness.start(1)
        dry = bkctl("-u", uri, "cluster", "rebalance", "--dry-run", "-o", "json")
        assert dry.exit_code == 3, dry.stderr
        doc = json.loads(dry.stdout)
        assert not doc["withinTarget"] and doc["moves"] == [] and doc["openLedgers"] == [writer.ledger_id]
        assert doc["reason"]["kind"] == "no-movable" and "open ledgers hold" in doc["reason"]["detail"]
        assert "error: the target is not reachable: no movable replica left on" in dry.stderr
        run = bkctl("-u", uri, "cluster", "rebalance", "--yes")
        assert run.exit_code == 3 and "open ledgers hold" in run.stderr
        assert "no move helps" in run.stderr


def test_an_interrupted_rebalance_says_what_it_did_and_a_rerun_finishes(harness, bkctl, cluster, grown, tmp_path):
    uri = harness.service_uri
    written, new = grown
    planned = json.loads(bkctl("-u", uri, "cluster", "rebalance", "--dry-run", "-o", "json").stdout)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    command = [sys.executable, "-m", "bkctl", "-u", uri, "cluster", "rebalance", "--yes", "--rate", "0.4"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path)

    def moved() -> int:
        """Ledgers whose first segment names a new bookie: moved, or split where an interrupted copy stopped."""
        with BookKeeper(uri) as bk:
            return sum(1 for lid in written for b in bk.ledger_metadata(lid).segments[0].bookies if b in new)

    try:
        wait_for(moved, "a first move", 60)  # at 0.4 MB/s, the 2.5 MB take about 6 s
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    match = re.fullmatch(
        r"error: interrupted: (\d+) of (\d+) moves done(?:, (\d+) in part \(split where the copy stopped\))?, "
        r"[\d.]+ [KM]i?B copied; (\d+) left: run it again to go on from there\n",
        stderr.decode(),
    )
    assert match and proc.returncode == 130, stderr
    done, total, part, left = (int(n or 0) for n in match.groups())
    assert total == len(planned["moves"]) and done + left == total and done < total
    assert done <= moved() <= done + part  # a move stopped midway keeps what its target acknowledged
    assert MovementLock(cluster, "check").holder() is None  # released

    rerun = bkctl("-u", uri, "cluster", "rebalance", "--yes", "-o", "json")
    assert rerun.exit_code == 0, rerun.stderr + rerun.stdout
    doc = json.loads(rerun.stdout)
    assert doc["spread"]["measured"] <= 10
    for bookie in doc["bookies"]:  # what the interrupted run left counted right: nothing twice
        assert abs(bookie["measuredBytes"] - bookie["predictedBytes"]) <= 0.05 * bookie["predictedBytes"], bookie
    assert doc["movedBytes"] < planned["movedBytes"]  # the moves done are not made again


def test_a_cluster_with_nothing_stored_needs_no_move(bkctl, cluster, service_uri):
    dry = bkctl("-u", service_uri, "cluster", "rebalance", "--dry-run")
    assert dry.exit_code == 0 and "no move needed" in dry.stderr
    assert "spread 0.0% now, 0.0% after 0 moves (0 B); target 10%" in dry.stdout
    bad = bkctl("-u", service_uri, "cluster", "rebalance", "--target", "0")
    assert bad.exit_code == 2 and "--target" in bad.stderr

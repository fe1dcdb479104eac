"""cluster check and check-impact against real bookies (BookKeeper: replication/Auditor.java)."""

import json
import os
import signal
import threading
import time

from admin.check import categories as cat
from admin.check.prometheus import LAST_SUCCESS
from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.client import BookKeeper
from bookie.codec.digest import master_key
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState, Segment
from bookie.meta.registration import BookieRegistry
from bookie.meta.underreplication import UnderReplicationManager

from support.checks import check, flip_byte, wipe, write_ledgers
from support.cli import dead_uri
from support.progress import RecordingProgress, show_bars
from support.waiting import wait_for


def test_clean_cluster_then_a_wiped_bookie(harness, bkctl, cluster, tmp_path):
    bookies = harness.start(3)
    ids = write_ledgers(harness.service_uri, 5)
    code, doc = check(bkctl, harness.service_uri, "--prometheus-file", str(tmp_path / "check.prom"))
    assert code == 0 and doc["checkedLedgers"] == 5 and doc["violations"] == [] and doc["schemaVersion"] == 1
    textfile = (tmp_path / "check.prom").read_text()
    assert "bkctl_check_num_ledgers_having_no_replica_of_an_entry 0" in textfile
    assert "bkctl_check_success 1" in textfile
    assert UnderReplicationManager(cluster).check_time("replicas") is None  # read-only without --record

    victim = bookies[1]
    wipe(victim)
    harness.restart(victim)
    code, doc = check(bkctl, harness.service_uri)
    assert code == 3
    assert doc["counts"][cat.LESS_THAN_WQ] == 5 and doc["counts"][cat.NO_REPLICA] == 0
    assert sorted(v["ledgerId"] for v in doc["violations"]) == sorted(ids)
    for violation in doc["violations"]:
        assert violation["category"] == cat.LESS_THAN_WQ and violation["bookies"] == [victim.bookie_id]
        assert violation["missingEntries"] == {victim.bookie_id: [[0, 19]]}  # E=WQ=3: it held all
        assert violation["missingEntryCounts"] == {victim.bookie_id: 20}


def test_a_striped_ledger_lost_on_a_bookie_is_one_range_and_the_table_counts_its_entries(harness, bkctl):
    bookies = harness.start(3)
    (ledger_id,) = write_ledgers(harness.service_uri, 1, quorum=(3, 2, 2), entries=300)
    victim = bookies[1]
    wipe(victim)
    harness.restart(victim)
    code, doc = check(bkctl, harness.service_uri, "--replicas")
    (violation,) = doc["violations"]
    assert code == 3 and violation["ledgerId"] == ledger_id
    (lost,) = violation["missingEntries"].values()  # 200 entries, two of every three ids: one range
    assert len(lost) == 1 and lost[0][0] in (0, 1) and lost[0][1] in (298, 299)
    assert violation["missingEntryCounts"] == {victim.bookie_id: 200}
    table = bkctl("-u", harness.service_uri, "cluster", "check", "--replicas", "--recheck-delay", "1")
    row = next(line for line in table.stdout.splitlines() if line.startswith(f"{ledger_id} "))
    assert table.exit_code == 3 and row.split()[-1] == "200"


def test_the_textfile_says_a_check_failed_when_zookeeper_is_unreachable(harness, bkctl, tmp_path):
    """A cron audit that stopped working must not keep saying "0 violations": the file is rewritten with success 0,
    the last success time of the run before, and no counts; the exit code stays the unreachable one."""
    harness.start(1)
    write_ledgers(harness.service_uri, 1, quorum=(1, 1, 1))
    textfile = tmp_path / "check.prom"
    assert check(bkctl, harness.service_uri, "--prometheus-file", str(textfile))[0] == 0
    (last,) = [line for line in textfile.read_text().splitlines() if line.startswith(LAST_SUCCESS)]
    result = bkctl("--timeout", "1", "-u", dead_uri(), "cluster", "check", "--prometheus-file", str(textfile))
    assert result.exit_code == 6 and result.stderr.startswith("error: ") and len(result.stderr.splitlines()) == 1
    lines = textfile.read_text().splitlines()
    assert "bkctl_check_success 0" in lines and last in lines
    assert not [line for line in lines if "num_" in line or "checked_ledgers" in line]


def test_placement_reports_a_write_quorum_inside_one_rack(harness, bkctl, cluster):
    a1, a2 = harness.start(2, bookieRack="/rack-a")
    b1, b2 = harness.start(2, bookieRack="/rack-b")
    ledgers = LedgerManager(cluster)
    bad = LedgerMetadata(
        3,
        2,
        2,
        (Segment(0, (a1.bookie_id, a2.bookie_id, b1.bookie_id)),),
        state=LedgerState.CLOSED,
        last_entry_id=-1,
        password=b"",
    )
    good = bad.with_changes(
        segments=(Segment(0, (a1.bookie_id, b1.bookie_id, a2.bookie_id, b2.bookie_id)),), ensemble_size=4
    )
    ledgers.create(100, bad)
    ledgers.create(101, good)
    code, doc = check(bkctl, harness.service_uri, "--placement")
    assert code == 3
    assert [(v["ledgerId"], v["category"]) for v in doc["violations"]] == [(100, cat.PLACEMENT_FAIL)]


def test_open_ledgers_are_skipped_and_under_replicated_ones_listed_and_failing_unless_allowed(harness, bkctl, cluster):
    harness.start(3)
    (closed,) = write_ledgers(harness.service_uri, 1)
    with BookKeeper(harness.service_uri) as bk:
        open_ledger = bk.create_ledger(3, 2, 2)
        open_ledger.add_entry(b"x")
        UnderReplicationManager(cluster).mark(closed, ["127.0.0.1:1"], now_ms=int(time.time() * 1000) - 60_000)
        code, doc = check(bkctl, harness.service_uri)
        assert (code, doc["skippedOpen"], doc["skippedUnderReplicated"], doc["checkedLedgers"]) == (3, 1, 1, 0)
        assert doc["underReplicatedLedgers"] == [closed] and doc["counts"][cat.UNDER_REPLICATED_TOO_LONG] == 1
        code, doc = check(bkctl, harness.service_uri, "--allow-under-replicated")
        assert (code, doc["underReplicatedLedgers"], doc["violations"]) == (0, [closed], [])
        code, doc = check(bkctl, harness.service_uri, "--under-replicated-grace", "30")
        assert code == 3 and doc["counts"][cat.UNDER_REPLICATED_TOO_LONG] == 1
        assert check(bkctl, harness.service_uri, "--under-replicated-grace", "120")[0] == 0
        table = bkctl("-u", harness.service_uri, "cluster", "check", "--under-replicated-grace", "120")
        assert table.exit_code == 0 and "no violations" not in table.stdout
        assert f"under-replicated, not checked (within the grace): {closed}\n" in table.stdout
        open_ledger.close()


def test_a_dead_but_registered_bookie_is_reported_only_after_the_recheck(harness, bkctl):
    bookies = harness.start(3, zkTimeout=30000)  # its registration outlives it for 30 s
    write_ledgers(harness.service_uri, 2)
    bookies[0].stop(kill=True)
    started = time.monotonic()
    code, doc = check(bkctl, harness.service_uri)
    assert time.monotonic() - started >= 1  # the recheck delay
    assert code == 3 and doc["unavailableBookies"] == [bookies[0].bookie_id]
    assert doc["counts"][cat.UNAVAILABLE_BOOKIES] == 1 and doc["counts"][cat.LESS_THAN_WQ] == 0

    from admin.check.checker import Checker, CheckOptions

    progress = RecordingProgress()
    with BookKeeper(harness.service_uri) as bk:
        bk.run(Checker(bk.core, CheckOptions(recheck_delay=1), progress).run())
    assert progress.named("asking bookies").total == 6  # the dead one's 2 count too, as given up on
    assert progress.named("asking again in 1 s").total == 1
    progress.assert_complete()


def test_a_bookie_that_answers_on_the_recheck_is_not_reported(harness, bkctl):
    bookies = harness.start(3, zkTimeout=30000)
    write_ledgers(harness.service_uri, 2)
    os.kill(bookies[0].pid, signal.SIGSTOP)
    threading.Timer(2.0, os.kill, (bookies[0].pid, signal.SIGCONT)).start()
    result = bkctl("-u", harness.service_uri, "cluster", "check", "--recheck-delay", "4", "-o", "json")
    doc = json.loads(result.stdout)
    assert result.exit_code == 0 and doc["unavailableBookies"] == [] and doc["violations"] == []


def test_a_check_announces_each_phase_with_its_total_and_reaches_it(harness, bkctl, monkeypatch):
    from admin.check.checker import Checker, CheckOptions

    harness.start(3)
    write_ledgers(harness.service_uri, 3, entries=10)  # E 3, WQ 3: each bookie holds every entry
    progress = RecordingProgress()
    with BookKeeper(harness.service_uri) as bk:
        report = bk.run(Checker(bk.core, CheckOptions(verify_entries=100), progress).run())
    assert report.checked == 3 and report.violations == []
    assert [(p.name, p.total) for p in progress.phases] == [
        ("listing ledgers", None),
        ("reading ledger metadata", 3),
        ("asking bookies", 9),  # 3 ledgers x 3 bookies
        ("reading entries", 90),
        ("checking ledgers", 3),
    ]
    progress.assert_complete()

    show_bars(monkeypatch)
    result = bkctl("-u", harness.service_uri, "cluster", "check", "-o", "json")
    assert json.loads(result.stdout)["checkedLedgers"] == 3
    assert "3/3 ledgers" in result.stderr


def test_an_ensemble_change_during_the_check_raises_no_false_alarm(harness, cluster):
    """A ledger on a wiped bookie is re-replicated to a spare (copy, then CAS) while the check runs: the checker
    re-reads the metadata before reporting, analyses again, and finds nothing wrong."""
    from admin.check.checker import Checker, CheckOptions

    started = harness.start(3)
    ledgers = LedgerManager(cluster)
    with BookKeeper(harness.service_uri) as bk:
        ledger = bk.create_ledger(2, 2, 2)
        ledger.add_entries(b"e%d" % i for i in range(10))
        ledger.close()
        md, version = ledgers.read(ledger.ledger_id)
        by_id = {b.bookie_id: b for b in started}
        source, victim = (by_id[b] for b in md.segments[0].bookies)
        (spare,) = (b for b in started if b not in (source, victim))
        wipe(victim)
        harness.restart(victim)

        async def re_replicate(ledger_id):
            if ledgers.read(ledger_id)[0] != md:
                return
            reader, target = harness.wire(source), harness.wire(spare)
            for entry_id in range(10):
                body = reader.ask(pb.ReadRequest(ledgerId=ledger_id, entryId=entry_id)).body
                request = pb.AddRequest(
                    ledgerId=ledger_id,
                    entryId=entry_id,
                    masterKey=master_key(b""),
                    body=body,
                    flag=pb.AddRequest.RECOVERY_ADD,
                )
                assert target.ask(request).status == pb.EOK
            swapped = tuple(spare.bookie_id if b == victim.bookie_id else b for b in md.segments[0].bookies)
            ledgers.write(ledger_id, md.with_changes(segments=(Segment(0, swapped),)), version)

        before = bk.run(Checker(bk.core, CheckOptions(recheck_delay=1)).run())
        assert [v.bookies for v in before.violations] == [[victim.bookie_id]]  # the wiped copy is seen
        options = CheckOptions(recheck_delay=1, before_report=re_replicate)
        report = bk.run(Checker(bk.core, options).run())
        assert report.violations == [] and report.checked == 1
        plain = bk.run(Checker(bk.core, CheckOptions(recheck_delay=1)).run())
        assert plain.violations == []  # and it really is complete now


def test_verify_entries_finds_a_corrupt_copy_the_index_cannot_show(harness, bkctl):
    harness.start(3, flushInterval=50)
    write_ledgers(harness.service_uri, 1, entries=10)
    victim = harness.bookies[0]
    wait_for(lambda: flip_byte(victim, b"entry-7"), "entry 7 in an entry log file")
    assert check(bkctl, harness.service_uri)[0] == 0  # the index still lists the entry
    code, doc = check(bkctl, harness.service_uri, "--verify-entries", "100")
    assert code == 3
    (violation,) = doc["violations"]
    assert violation["missingEntries"] == {victim.bookie_id: [[7, 7]]} and violation["category"] == cat.LESS_THAN_WQ


def test_a_check_writes_nothing_in_zookeeper_unless_asked_to_record(harness, bkctl, cluster):
    """The auditor's check-time znodes postpone a real auditor's checks: a cron audit must not touch them, pass
    or fail; --record writes them as the auditor would."""
    bookies = harness.start(3, zkTimeout=30000)
    write_ledgers(harness.service_uri, 2)
    ur_root = UnderReplicationManager(cluster).root
    names = ("replicascheckctime", "placementpolicycheckctime")

    def snapshot():
        return {
            name: (stat.mzxid, stat.version) if (stat := cluster.zk.exists(f"{ur_root}/{name}")) else None
            for name in names
        }

    assert check(bkctl, harness.service_uri, "--record")[0] == 0
    before = snapshot()
    assert None not in before.values()
    assert check(bkctl, harness.service_uri)[0] == 0
    bookies[0].stop(kill=True)  # a failing check (an unavailable bookie) writes nothing either
    assert check(bkctl, harness.service_uri)[0] == 3
    assert snapshot() == before
    assert check(bkctl, harness.service_uri, "--record")[0] == 3
    after = snapshot()
    assert all(after[name][0] > before[name][0] for name in names)


def test_an_io_error_on_a_bookie_names_the_bookie_the_ledger_and_the_error(harness, bkctl):
    from bookie.storage.index import index_path

    harness.start(3)
    (ledger_id,) = write_ledgers(harness.service_uri, 1)
    victim = harness.bookies[0]
    victim.stop()
    index = index_path(victim.ledger_dir, ledger_id)
    index.write_bytes(b"XXXX" + index.read_bytes()[4:])  # not an index file any more: the bookie answers EIO
    harness.restart(victim)
    code, doc = check(bkctl, harness.service_uri)
    assert code == 3
    (violation,) = [v for v in doc["violations"] if v["category"] == cat.UNAVAILABLE_BOOKIES]
    assert violation["bookies"] == [victim.bookie_id] and violation["ledgerId"] == ledger_id
    assert "EIO" in violation["error"] and victim.bookie_id in violation["error"]
    result = bkctl("-u", harness.service_uri, "cluster", "check", "--recheck-delay", "0")
    (row,) = [line for line in result.stdout.splitlines() if cat.UNAVAILABLE_BOOKIES in line and "EIO" in line]
    assert row.split()[0] == str(ledger_id)


def impact(bkctl, uri, *args):
    result = bkctl("-u", uri, "cluster", "check-impact", *args, "-o", "json")
    return result.exit_code, json.loads(result.stdout)


def test_check_impact_lets_one_bookie_of_four_restart_under_e3_w2_a2(harness, bkctl, cluster):
    bookies = harness.start(4)
    uri, x = harness.service_uri, bookies[0].bookie_id
    write_ledgers(uri, 6, quorum=(3, 2, 2))
    ledgers = LedgerManager(cluster)
    with BookKeeper(uri) as bk:
        open_ledger = bk.create_ledger(3, 2, 2)
        open_ledger.add_entry(b"x")
        on_x = sorted(i for i, md in ledgers.iter_ledgers() if x in md.segments[0].bookies)
        restart = bkctl("-u", uri, "cluster", "check-impact", "--bookie", x, "--for", "restart")
        plural = "s" if len(on_x) > 1 else ""
        assert restart.exit_code == 0, restart.output
        assert restart.stdout.splitlines()[0] == (
            f"safe for restart: costs below ack quorum in {len(on_x)} ledger{plural}, which it allows"
        )
        code, doc = impact(bkctl, uri, "--bookie", x, "--for", "restart")
        assert (code, doc["safe"], doc["failedLevels"], doc["writableBookiesLeft"]) == (0, True, [], 3)
        assert {level: v["ledgers"] for level, v in doc["levels"].items()} == {
            "data-loss": 0,
            "read-unavailable": 0,
            "write-unavailable": 0,
            "below-ack-quorum": len(on_x),
            "under-replicated": 0,
        }
        assert doc["levels"]["below-ack-quorum"]["examples"] == on_x[:5]
        assert {d["ledgerId"]: d["levels"] for d in doc["ledgers"]} == {i: ["below-ack-quorum"] for i in on_x}

        code, doc = impact(bkctl, uri, "--bookie", x)  # the default gate: as for a decommission
        assert (code, doc["for"], doc["failedLevels"]) == (3, "decommission", ["below-ack-quorum"])
        assert impact(bkctl, uri, "--bookie", x, "--allow", "below-ack-quorum")[0] == 0

        rack = bookies[1].bookie_id
        code, doc = impact(bkctl, uri, "--bookie", x, "--bookie", rack, "--for", "restart")
        assert code == 3 and doc["writableBookiesLeft"] == 2  # E3 open ledgers cannot get an ensemble
        assert (
            "write-unavailable" in doc["failedLevels"]
            and open_ledger.ledger_id in doc["levels"]["write-unavailable"]["examples"]
        )

        read_only = bookies[3].bookie_id
        assert bkctl("-u", uri, "bookie", "readonly", read_only, "--on").exit_code == 0
        registry = BookieRegistry(cluster)
        wait_for(
            lambda: (
                {b.bookie_id for b in registry.list(writable=False, readonly=True)}
                - {b.bookie_id for b in registry.list()}
                == {read_only}
            ),
            "read-only",
        )
        code, doc = impact(bkctl, uri, "--bookie", x, "--for", "restart")
        assert (code, doc["readOnly"], doc["writableBookiesLeft"], doc["failedLevels"]) == (
            3,
            [read_only],
            2,
            ["write-unavailable"],
        )
        open_ledger.close()


def test_check_impact_fails_a_restart_that_takes_the_last_replica(harness, bkctl, cluster):
    bookies = harness.start(3)
    uri = harness.service_uri
    (alone,) = write_ledgers(uri, 1, quorum=(1, 1, 1))
    (pair,) = write_ledgers(uri, 1, quorum=(2, 2, 2))
    ledgers = LedgerManager(cluster)
    (holder,) = ledgers.read(alone)[0].segments[0].bookies
    x, y = ledgers.read(pair)[0].segments[0].bookies
    result = bkctl("-u", uri, "cluster", "check-impact", "--bookie", holder, "--for", "restart")
    assert result.exit_code == 3 and result.stdout.startswith("UNSAFE for restart: data loss in 1 ledger\n")
    code, doc = impact(bkctl, uri, "--bookie", holder, "--for", "restart")
    assert doc["failedLevels"] == ["data-loss"] and doc["levels"]["data-loss"]["examples"] == [alone]

    (down,) = [b for b in bookies if b.bookie_id == x]
    down.stop()  # the pair's other replica is already gone
    registry = BookieRegistry(cluster)
    wait_for(lambda: x not in {b.bookie_id for b in registry.list(writable=True, readonly=True)}, "unregistered")
    code, doc = impact(bkctl, uri, "--bookie", y, "--for", "restart")
    assert (code, doc["alreadyGone"], doc["failedLevels"]) == (3, [x], ["data-loss"])
    assert pair in doc["levels"]["data-loss"]["examples"]
    text = bkctl("-u", uri, "cluster", "check-impact", "--bookie", y, "--for", "restart").stdout
    assert f"Already gone, counted as gone: {x}\n" in text


def test_check_impact_an_open_a1_ledger_waits_for_its_bookie_to_be_recovered(harness, bkctl):
    harness.start(4)
    with BookKeeper(harness.service_uri) as bk:
        ledger = bk.create_ledger(3, 2, 1)
        ledger.add_entry(b"x")
        x = ledger.ensemble[0]
        code, doc = impact(bkctl, harness.service_uri, "--bookie", x, "--for", "restart")
        assert (code, doc["failedLevels"]) == (3, ["read-unavailable"])
        assert doc["ledgers"] == [
            {
                "ledgerId": ledger.ledger_id,
                "state": "open",
                "levels": ["read-unavailable", "under-replicated"],
                "category": cat.LESS_THAN_WQ,
                "segment": 0,
                "bookies": [x],
            }
        ]
        allowed = impact(bkctl, harness.service_uri, "--bookie", x, "--for", "restart", "--allow", "read-unavailable")
        assert allowed[0] == 0 and allowed[1]["allowed"] == ["read-unavailable", "below-ack-quorum", "under-replicated"]
        ledger.close()

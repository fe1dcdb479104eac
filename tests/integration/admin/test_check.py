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
from bookie.meta.underreplication import UnderReplicationManager

from support.checks import check, flip_byte, wipe, write_ledgers
from support.cli import dead_uri
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


def test_a_bookie_that_answers_on_the_recheck_is_not_reported(harness, bkctl):
    bookies = harness.start(3, zkTimeout=30000)
    write_ledgers(harness.service_uri, 2)
    os.kill(bookies[0].pid, signal.SIGSTOP)
    threading.Timer(2.0, os.kill, (bookies[0].pid, signal.SIGCONT)).start()
    result = bkctl("-u", harness.service_uri, "cluster", "check", "--recheck-delay", "4", "-o", "json")
    doc = json.loads(result.stdout)
    assert result.exit_code == 0 and doc["unavailableBookies"] == [] and doc["violations"] == []


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


def test_check_impact(harness, bkctl):
    bookies = harness.start(3)
    write_ledgers(harness.service_uri, 2, quorum=(3, 3, 2))
    one = bkctl("-u", harness.service_uri, "cluster", "check-impact", "--bookie", bookies[0].bookie_id, "-o", "json")
    doc = json.loads(one.stdout)
    assert one.exit_code == 0 and doc["safe"] is True and len(doc["ledgers"]) == 2  # under WQ, at AQ
    two = bkctl(
        "-u",
        harness.service_uri,
        "cluster",
        "check-impact",
        "--bookie",
        bookies[0].bookie_id,
        "--bookie",
        bookies[1].bookie_id,
    )
    assert two.exit_code == 3 and two.stdout.startswith("UNSAFE: 2 ledgers would drop below their ack quorum")
    write_ledgers(harness.service_uri, 1, quorum=(3, 2, 2))
    aq = bkctl("-u", harness.service_uri, "cluster", "check-impact", "--bookie", bookies[2].bookie_id, "-o", "json")
    assert aq.exit_code == 3 and json.loads(aq.stdout)["safe"] is False

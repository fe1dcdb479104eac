"""Disks that fail, fill and stall (issue 28 §3), on a lossy disk (tests/faults/lossyfs) under one bookie of three:
what the bookie answers, what it logs and how it turns, and that no acknowledged entry is lost."""

from __future__ import annotations

import json
import urllib.request

import pytest
from faults.lossyfs.mount import fuse_missing

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.client import BookKeeper, ClientConfig
from bookie.meta.registration import BookieRegistry

from support.cluster import metric
from support.waiting import wait_for

pytestmark = pytest.mark.root
if reason := fuse_missing():
    pytest.skip(f"lossyfs cannot mount here: {reason}", allow_module_level=True)

PASSWORD = b"disk-faults"


@pytest.fixture(params=["interleaved", "db"])
def storage(request):
    return request.param


@pytest.fixture
def lossy(disk):
    return disk


@pytest.fixture
def bookies(harness, lossy, storage):
    """Three bookies; the first has its journal and ledger directories on the lossy disk."""
    settings = (
        {"ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage"} if storage == "db" else {}
    )
    [sick] = harness.start(
        1,
        journalDirectories=lossy.mountpoint / "journal",
        ledgerDirectories=lossy.mountpoint / "ledgers",
        **settings,
    )
    return [sick, *harness.start(2, **settings)]


def ledger_on(bk: BookKeeper, bookie_id: str, ensemble: int):
    """A new ledger whose ensemble holds ``bookie_id`` (placement is random: try until it does)."""
    for _ in range(40):
        handle = bk.create_ledger(ensemble, ensemble, ensemble, password=PASSWORD)
        if bookie_id in handle.ensemble:
            return handle
        handle.close()
    raise AssertionError(f"no ledger placed on {bookie_id} in 40 tries")


def registered_state(store, bookie_id: str) -> str | None:
    for state, bookies in (("writable", False), ("readonly", True)):
        ids = {b.bookie_id for b in BookieRegistry(store).list(writable=not bookies, readonly=bookies)}
        if bookie_id in ids:
            return state
    return None


@pytest.mark.parametrize("error", ["EIO", "ENOSPC"])
def test_a_failing_journal_acknowledges_nothing_unsynced_and_turns_the_bookie_read_only(
    bookies, lossy, store, service_uri, error, tally
):
    sick = bookies[0]
    with BookKeeper(service_uri, ClientConfig(add_entry_timeout=5.0)) as bk:
        handle = ledger_on(bk, sick.bookie_id, 2)
        acked = [handle.add_entry(b"before %d" % n) for n in range(20)]
        lossy.inject("write", "/journal/*", error)
        acked += [handle.add_entry(b"after %d" % n) for n in range(20)]  # the writer replaces the sick bookie
        assert sick.bookie_id not in handle.ensemble
        handle.close()

        wait_for(lambda: registered_state(store, sick.bookie_id) == "readonly", "the sick bookie to turn read-only")
        assert BookieRegistry(store).get(sick.bookie_id).read_only_reasons == ["journal-failure"]
        log = sick.log_path.read_text()
        failed = [line for line in log.splitlines() if "journal" in line and "failed" in line and "ERROR" in line]
        assert failed and "Traceback" not in "\n".join(failed)
        assert any("going read-only" in line for line in log.splitlines())

        reader = bk.open_ledger(handle.ledger_id, PASSWORD, recovery=False)
        expected = [b"before %d" % n for n in range(20)] + [b"after %d" % n for n in range(20)]
        assert len(acked) == 40
        tally.check([e.payload for e in reader.read(0, reader.last_add_confirmed)], expected)


def written_ledger(service_uri: str, sick, entries: int = 30) -> int:
    """A closed ledger of ``entries`` on the sick bookie and another (E2 W2 A2), its id."""
    with BookKeeper(service_uri) as bk:
        handle = ledger_on(bk, sick.bookie_id, 2)
        for n in range(entries):
            handle.add_entry(b"entry %d" % n)
        handle.close()
        return handle.ledger_id


def restart_from_disk(harness, bookie) -> None:
    """A restart: the entries are read from the disk (the page cache of a lossy disk is dropped at each open)."""
    bookie.stop()
    harness.restart(bookie)


def test_a_read_the_disk_fails_answers_eio_and_the_client_reads_the_other_replica(
    harness, lossy, service_uri, storage, tally
):
    settings = {"bkctlDiskReadErrorsToFail": "0"}  # never declared failed: every read fails alike
    if storage == "db":
        settings["ledgerStorageClass"] = "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage"
    [sick] = harness.start(
        1, journalDirectories=lossy.mountpoint / "journal", ledgerDirectories=lossy.mountpoint / "ledgers", **settings
    )
    harness.start(2, **settings)
    ledger_id = written_ledger(service_uri, sick)
    restart_from_disk(harness, sick)
    lossy.inject("read", "/ledgers/*", "EIO")

    with harness.wire(sick) as conn:
        answers = [conn.ask(pb.ReadRequest(ledgerId=ledger_id, entryId=e)).status for e in range(30)]
    assert set(answers) == {pb.EIO}
    with BookKeeper(service_uri) as bk:
        reader = bk.open_ledger(ledger_id, PASSWORD, recovery=False)
        tally.check([e.payload for e in reader.read(0, 29)], [b"entry %d" % n for n in range(30)])

    assert sick.running()
    errors = [line for line in sick.log_path.read_text().splitlines() if "I/O error reading ledger" in line]
    assert 1 <= len(errors) <= 3, errors  # a line at most every 10 s, not one per failed read
    assert "Traceback" not in sick.log_path.read_text()
    metrics = urllib.request.urlopen(f"http://127.0.0.1:{sick.metrics_port}/metrics", timeout=10).read().decode()
    [count] = [line.split()[-1] for line in metrics.splitlines() if line.startswith("bkctl_disk_read_errors")]
    assert float(count) >= 30


def test_repeated_read_errors_declare_the_disks_failed_and_stop_the_bookie(harness, lossy, service_uri, storage, tally):
    settings = (
        {"ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage"} if storage == "db" else {}
    )
    [sick] = harness.start(
        1, journalDirectories=lossy.mountpoint / "journal", ledgerDirectories=lossy.mountpoint / "ledgers", **settings
    )
    harness.start(2, **settings)
    ledger_id = written_ledger(service_uri, sick)
    restart_from_disk(harness, sick)
    lossy.inject("read", "/ledgers/*", "EIO")

    with harness.wire(sick) as conn:
        for e in range(10):  # bkctlDiskReadErrorsToFail: 10 in a minute
            assert conn.ask(pb.ReadRequest(ledgerId=ledger_id, entryId=e)).status == pb.EIO
    wait_for(lambda: not sick.running(), "the bookie to stop on its failed disks")
    log = sick.log_path.read_text()
    assert "its ledger disks failed: 10 I/O errors reading its disks in 60 s" in log
    with BookKeeper(service_uri) as bk:  # the other replica serves every entry
        reader = bk.open_ledger(ledger_id, PASSWORD, recovery=False)
        tally.check([e.payload for e in reader.read(0, 29)], [b"entry %d" % n for n in range(30)])


def test_a_disk_that_fills_during_compaction_stops_it_cleanly(harness, lossy, bkctl, storage, tally):
    """ENOSPC on every write to the ledger disk while a major compaction copies: the run gives up with an error,
    nothing is lost, and the disk holds no more than before it; a run once there is room again finishes."""
    from integration.server.test_gc import assert_b_intact, gc, payload, write_interleaved

    settings = {"compactionRate": 400, "logSizeLimit": 256 * 1024}
    if storage == "db":  # checkpoints often: each writes its ledgers sorted, so A and B share every log
        settings["ledgerStorageClass"] = "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage"
        settings["flushInterval"] = 100
    [bookie] = harness.start(
        1, journalDirectories=lossy.mountpoint / "journal", ledgerDirectories=lossy.mountpoint / "ledgers", **settings
    )
    uri = harness.service_uri
    _, b = write_interleaved(uri, 3000, quorum=(1, 1, 1))
    restart_from_disk(harness, bookie)  # every entry in the entry logs, no write buffer or cache left to flush
    ledgers = lossy.mountpoint / "ledgers" / "current"

    def log_bytes() -> int:
        return sum(p.stat().st_size for p in ledgers.glob("*.log"))

    before = log_bytes()
    # The entry logs only (ids of 1 or 2 hex digits here: not RocksDB's 000012.log, nor lastMark), the first of which
    # to be written is the compaction's: a checkpoint that cannot write stops the bookie (a failed ledger disk), so
    # the disk fills under the compaction alone, once its first new log has its header and the copies go in. The run
    # may fail within half a second, so it is waited for, not watched for.
    for pattern in ("/ledgers/current/?.log", "/ledgers/current/??.log"):
        lossy.inject("write", pattern, "ENOSPC", skip=1)
    result = bkctl("-u", uri, "bookie", "gc", "--major", bookie.bookie_id, "--wait", "-o", "json")
    assert result.exit_code == 1, result.stdout + result.stderr
    [run] = json.loads(result.stdout)
    assert "No space left on device" in run["error"], run
    status = json.loads(bkctl("-u", uri, "bookie", "gc-status", bookie.bookie_id, "-o", "json").stdout)[0]
    assert status["lastRun"]["runId"] == run["runId"], status
    assert status["stalledLogs"] == []  # the disk's fault, not a log's: the run ended, no log stalled
    lossy.clear()
    restart_from_disk(harness, bookie)  # whatever the bookie held to write is written now
    assert log_bytes() <= before + 2048  # + the log the restart sealed, empty: a header and a map
    assert_b_intact(uri, b, 3000)
    runs = gc(bkctl, uri, "--major", bookie.bookie_id, "--wait")
    assert runs[bookie.bookie_id]["error"] == ""
    assert log_bytes() < 0.62 * before
    with BookKeeper(uri) as bk, bk.open_ledger(b, recovery=False) as reader:
        tally.check([e.payload for e in reader.iter_entries(0, 2999)], [payload(b"B", i) for i in range(3000)])


def test_an_entry_log_the_disk_cannot_read_stalls_and_the_others_compact(harness, lossy, bkctl, tally):
    """EIO on every read of one sealed entry log (a bad patch of disk): a major compaction leaves that log, stalled
    with the error, and compacts every other; the run does not fail. Once the disk reads it again, the next run
    compacts it and it is no longer stalled."""
    from integration.server.test_gc import gc, payload, write_interleaved

    [bookie] = harness.start(
        1,
        journalDirectories=lossy.mountpoint / "journal",
        ledgerDirectories=lossy.mountpoint / "ledgers",
        logSizeLimit=256 * 1024,
    )
    uri = harness.service_uri
    _, b = write_interleaved(uri, 1000, quorum=(1, 1, 1))
    restart_from_disk(harness, bookie)  # the collector reads every log's metadata afresh
    first = min(int(p.stem, 16) for p in (lossy.mountpoint / "ledgers" / "current").glob("*.log"))
    lossy.inject("read", f"/ledgers/current/{first:x}.log", "EIO")
    run = gc(bkctl, uri, "--major", bookie.bookie_id, "--wait")[bookie.bookie_id]
    assert run["error"] == "" and run["logsCompacted"] >= 3, run

    def status():
        return json.loads(bkctl("-u", uri, "bookie", "gc-status", bookie.bookie_id, "-o", "json").stdout)[0]

    (stalled,) = status()["stalledLogs"]
    assert stalled["logId"] == first and "Input/output error" in stalled["error"], stalled
    assert metric(bookie, "bkctl_gc_stalled_logs") == 1
    lossy.clear()
    run = gc(bkctl, uri, "--major", bookie.bookie_id, "--wait")[bookie.bookie_id]
    assert (run["error"], run["logsCompacted"]) == ("", 1)
    assert status()["stalledLogs"] == [] and metric(bookie, "bkctl_gc_stalled_logs") == 0
    with BookKeeper(uri) as bk, bk.open_ledger(b, recovery=False) as reader:
        tally.check([e.payload for e in reader.iter_entries(0, 999)], [payload(b"B", i) for i in range(1000)])


@pytest.mark.parametrize("where", ["/journal/*", "/ledgers/current/*.log"])
def test_a_short_write_on_a_filling_disk_is_finished_before_anything_counts_on_it(
    harness, lossy, storage, where, tally
):
    """A write that fills the disk may take only part of its bytes and return how many (short, no error). The
    journal's group write (then acknowledged) and the entry log's flush (then checkpointed, the journal let go)
    must write the rest; before the fix the rest was never written, and the entries were gone after a restart."""
    settings = (
        {"ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage"} if storage == "db" else {}
    )
    [bookie] = harness.start(
        1, journalDirectories=lossy.mountpoint / "journal", ledgerDirectories=lossy.mountpoint / "ledgers", **settings
    )
    uri = harness.service_uri
    lossy.inject("write", where, None, count=2, short=True)  # the journal's first two group writes, or the log's
    with BookKeeper(uri) as bk:
        handle = bk.create_ledger(1, 1, 1, password=PASSWORD)
        futures = [handle.add_entry_async(b"entry %d" % n * 50) for n in range(200)]
        assert [f.result(30) for f in futures] == list(range(200))
        ledger_id = handle.ledger_id
    if where.startswith("/journal"):
        bookie.stop(kill=True)  # no checkpoint: the restart replays the journal
    else:
        bookie.stop()  # a clean stop checkpoints: the restart reads the entry log
    assert lossy.clear() == [], "the short write did not happen"
    harness.restart(bookie)
    with BookKeeper(uri) as bk:
        reader = bk.open_ledger(ledger_id, PASSWORD, recovery=True)
        assert reader.last_add_confirmed == 199
        tally.check([e.payload for e in reader.read(0, 199)], [b"entry %d" % n * 50 for n in range(200)])


def test_a_slow_disk_slows_acknowledgements_but_loses_nothing(harness, bookies, lossy, service_uri, tally):
    """fsync in 300 ms on one bookie of three: E3 W3 A2 and E3 W3 A3 writers are acknowledged (the second at the slow
    bookie's pace) and every entry reads back, from the slow bookie too. The latencies: benchmarks/slow_disk.py."""
    sick = bookies[0]
    lossy.inject("sync", "*", None, delay=0.3)
    with BookKeeper(service_uri) as bk:
        ledgers = []
        for quorum in ((3, 3, 2), (3, 3, 3)):
            handle = bk.create_ledger(*quorum, password=PASSWORD)
            futures = [handle.add_entry_async(b"slow %d" % n) for n in range(200)]
            assert [f.result(60) for f in futures] == list(range(200))
            handle.close()
            ledgers.append(handle.ledger_id)
    assert lossy.clear()[0]["hits"] > 0
    expected = [b"slow %d" % n for n in range(200)]
    with harness.wire(sick) as conn:  # the slow bookie has them all
        for ledger_id in ledgers:
            answers = [conn.ask(pb.ReadRequest(ledgerId=ledger_id, entryId=n)) for n in range(200)]
            got = [a.body[-len(e) :] if a.status == pb.EOK else b"" for a, e in zip(answers, expected, strict=True)]
            tally.check(got, expected)


def test_a_ledger_disk_that_fails_writes_stops_the_bookie_and_the_journal_keeps_its_entries(
    harness, bookies, lossy, service_uri, tally
):
    """EIO on every write to the ledger directory (the journal's, on the same disk, still works): the next
    write-back or checkpoint fails, and the bookie stops, as BookKeeper's does (SyncThread's fatalError), instead of
    acknowledging adds it can no longer store. Restarted on a repaired disk, it replays them from the journal."""
    sick = bookies[0]
    with BookKeeper(service_uri, ClientConfig(add_entry_timeout=5.0)) as bk:
        handle = ledger_on(bk, sick.bookie_id, 3)  # E3 W3 A3: every add reached the sick bookie's journal
        expected = [b"entry %d" % n for n in range(50)]
        for data in expected:
            handle.add_entry(data)
        lossy.inject("write", "/ledgers/*", "EIO")
        wait_for(lambda: not sick.running(), "the bookie to stop on its failed ledger disk")
        handle.close()
    log = sick.log_path.read_text()
    assert "its ledger disks failed: a checkpoint could not write to them ([Errno 5] Input/output error)" in log
    lossy.clear()
    harness.restart(sick)
    with harness.wire(sick) as conn:  # its own copy, from the journal
        answers = [conn.ask(pb.ReadRequest(ledgerId=handle.ledger_id, entryId=n)) for n in range(50)]
    got = [a.body[-len(e) :] if a.status == pb.EOK else b"" for a, e in zip(answers, expected, strict=True)]
    tally.check(got, expected)


def test_rocksdb_failing_its_writes_stops_a_db_bookie_which_restarts_on_its_journal(harness, lossy, tally):
    """EIO on DbLedgerStorage's RocksDB files only (current/locations): the checkpoint's synced batch fails.
    RocksDB then refuses every later write until reopened, so the bookie must stop, as on any failed ledger disk
    (rocksdict's bare "IO error" was taken for a bug and logged every second while the bookie went on)."""
    settings = {"ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage"}
    [sick] = harness.start(
        1, journalDirectories=lossy.mountpoint / "journal", ledgerDirectories=lossy.mountpoint / "ledgers", **settings
    )
    expected = [b"entry %d" % n for n in range(50)]
    with BookKeeper(harness.service_uri) as bk:
        handle = bk.create_ledger(1, 1, 1, password=PASSWORD)
        for data in expected:
            handle.add_entry(data)
        lossy.inject("write", "/ledgers/current/locations/*", "EIO")
        wait_for(lambda: not sick.running(), "the bookie to stop on RocksDB's failed writes", timeout=30)
    assert "its ledger disks failed: a checkpoint could not write to them" in sick.log_path.read_text()
    lossy.clear()
    harness.restart(sick)
    with BookKeeper(harness.service_uri) as bk, bk.open_ledger(handle.ledger_id, PASSWORD) as reader:
        tally.check([e.payload for e in reader.read(0, 49)], expected)

"""Garbage collection and compaction on real bookie processes, driven through bkctl."""

import json
import subprocess
from pathlib import Path

import pytest

from bookie.client import BookKeeper
from bookie.meta.registration import BookieRegistry
from bookie.storage.db import DB_LEDGER_STORAGE

from support.cluster import http_call, metrics
from support.waiting import wait_for

SMALL_LOGS = {"logSizeLimit": 256 * 1024}
HTTP_API = json.loads(Path(__file__).with_name("bookkeeper_http_api.json").read_text())
# BookKeeper's GarbageCollectionStatus, as GCDetailsService answers a list of them
(GC_STATUS,) = next(
    case["shape"]
    for endpoint in HTTP_API["endpoints"]
    if endpoint["path"] == "/api/v1/bookie/gc_details"
    for case in endpoint["cases"]
    if case["method"] == "GET"
)


def payload(name: bytes, i: int) -> bytes:
    return (name + b"-%06d-" % i) * 113  # 1017 bytes


def write_interleaved(uri, count: int, quorum=(3, 3, 2)) -> tuple[int, int]:
    """Ledgers A and B, their entries alternating, so every entry log holds half of each; A is then deleted."""
    with BookKeeper(uri) as bk:
        a, b = bk.create_ledger(*quorum), bk.create_ledger(*quorum)
        # 10 of each in flight at a time: a bookie stores what one read of its socket brings as one batch and rolls
        # its log before a batch that does not fit, so batches of at most ~20 KiB fill every log past 92%
        for start in range(0, count, 10):
            futures = []
            for i in range(start, min(count, start + 10)):
                futures += [a.add_entry_async(payload(b"A", i)), b.add_entry_async(payload(b"B", i))]
            for future in futures:
                future.result(30)
        a.close(), b.close()
        bk.delete_ledger(a.ledger_id)
        return a.ledger_id, b.ledger_id


def assert_b_intact(uri, ledger_id, count):
    with BookKeeper(uri) as bk, bk.open_ledger(ledger_id, recovery=False) as reader:
        assert reader.last_add_confirmed == count - 1
        assert [e.payload for e in reader.iter_entries(0, count - 1)] == [payload(b"B", i) for i in range(count)]


def entry_logs(bookie) -> set[Path]:
    return set((Path(bookie.ledger_dir) / "current").glob("*.log"))


def log_bytes(bookie) -> int:
    return sum(p.stat().st_size for p in entry_logs(bookie))


def gc(bkctl, uri, *args):
    result = bkctl("-u", uri, "bookie", "gc", *args, "-o", "json")
    assert result.exit_code == 0, result.stdout + result.stderr
    return {d["bookieId"]: d for d in json.loads(result.stdout)}


def test_major_gc_gives_back_the_deleted_ledgers_share(harness, bkctl):
    bookies = harness.start(3, **SMALL_LOGS)
    _, b = write_interleaved(harness.service_uri, 3000)
    before = {x.bookie_id: log_bytes(x) for x in bookies}
    runs = gc(bkctl, harness.service_uri, "--major", "--all", "--wait")
    for bookie in bookies:
        run = runs[bookie.bookie_id]
        assert (run["kind"], run["ledgersDeleted"], run["error"]) == ("major", 1, "")
        assert run["logsCompacted"] >= 10 and run["bytesReclaimed"] > 0.4 * before[bookie.bookie_id]
        assert 0.4 < log_bytes(bookie) / before[bookie.bookie_id] < 0.62  # A was half of every log
    assert_b_intact(harness.service_uri, b, 3000)
    status = json.loads(bkctl("-u", harness.service_uri, "bookie", "gc-status", "--all", "-o", "json").stdout)
    assert all(s["majorCompactionCounter"] == 1 and s["lastRun"]["logsCompacted"] >= 10 for s in status)
    for s in status:  # what is left is B's (the log that was current during the run still holds some of A)
        logs = s["entryLogs"]
        assert sum(log["remainingSize"] for log in logs) > 0.85 * sum(log["totalSize"] for log in logs)
    got = metrics(bookies[0])  # BookKeeper's GarbageCollectorStats
    assert got.sum("bookie_gc_MAJOR_COMPACTION_TOTAL") == 1 and got.sum("bookie_gc_MINOR_COMPACTION_TOTAL") == 0
    assert got.sum("bookie_gc_THREAD_RUNTIME_count", success="true") >= 1
    assert got.sum("bookie_gc_DELETED_LEDGER_TOTAL") == 1
    reclaimed = got.sum("bookie_gc_RECLAIMED_COMPACTION_SPACE_BYTES") + got.sum(
        "bookie_gc_RECLAIMED_DELETION_SPACE_BYTES"
    )
    assert reclaimed == runs[bookies[0].bookie_id]["bytesReclaimed"]
    assert got.sum("bookie_gc_ACTIVE_LEDGER_TOTAL") == 1  # B


def test_kill_9_mid_compaction_loses_nothing_and_a_later_gc_finishes(harness, bkctl):
    (bookie,) = harness.start(1, compactionRate=400, **SMALL_LOGS)
    uri = harness.service_uri
    _, b = write_interleaved(uri, 3000, quorum=(1, 1, 1))
    before, logs = log_bytes(bookie), entry_logs(bookie)  # ~30 logs of 256 KiB, half of each B's
    with BookKeeper(uri) as bk:
        c = bk.create_ledger(1, 1, 1)  # a writer acknowledged while the compaction runs
        assert bkctl("-u", uri, "bookie", "gc", "--major", bookie.bookie_id).exit_code == 0

        def compacting():
            out = bkctl("-u", uri, "bookie", "gc-status", bookie.bookie_id, "-o", "json").stdout
            return json.loads(out)[0]["majorCompacting"]

        wait_for(compacting, "the compaction to start")
        acked = [c.add_entry(payload(b"C", i)) for i in range(200)]
        # a few logs compacted and removed (each ~125 entries copied at 400/s); many still to go
        wait_for(lambda: len(logs - entry_logs(bookie)) >= 3, "three entry logs compacted")
        assert compacting()
        bookie.stop(kill=True)
    harness.restart(bookie)
    assert_b_intact(uri, b, 3000)
    with BookKeeper(uri) as bk, bk.open_ledger(c.ledger_id) as reader:  # recovery closes C
        assert [e.payload for e in reader.read(0, acked[-1])] == [payload(b"C", i) for i in acked]
    runs = gc(bkctl, uri, "--major", bookie.bookie_id, "--wait")
    assert runs[bookie.bookie_id]["error"] == ""
    assert log_bytes(bookie) < 0.62 * before
    assert_b_intact(uri, b, 3000)


def test_suspended_and_disabled_kinds_do_not_run(harness, bkctl):
    active, disabled = harness.start(1, **SMALL_LOGS) + harness.start(1, majorCompactionThreshold=0, **SMALL_LOGS)
    uri = harness.service_uri
    write_interleaved(uri, 600, quorum=(2, 2, 2))
    out = bkctl("-u", uri, "bookie", "compaction", "suspend", "--major", active.bookie_id)
    assert out.stdout == f"bookie/{active.bookie_id} major compaction suspended\n"
    runs = gc(bkctl, uri, "--major", "--all", "--wait")
    assert [runs[b.bookie_id]["kind"] for b in (active, disabled)] == ["", ""]
    assert all(
        runs[b.bookie_id]["ledgersDeleted"] == 1 and runs[b.bookie_id]["logsCompacted"] == 0 for b in (active, disabled)
    )
    status = bkctl("-u", uri, "bookie", "gc-status", "--all")
    assert "suspended" in status.stdout and "disabled" in status.stdout
    assert bkctl("-u", uri, "bookie", "compaction", "resume", "--all").exit_code == 0
    runs = gc(bkctl, uri, "--major", "--all", "--wait")
    assert runs[active.bookie_id]["kind"] == "major" and runs[active.bookie_id]["logsCompacted"] > 0
    assert runs[disabled.bookie_id]["kind"] == ""


def test_inspect_usage_of_a_stopped_bookie(harness, bkctl):
    (bookie,) = harness.start(1, **SMALL_LOGS)
    write_interleaved(harness.service_uri, 1000, quorum=(1, 1, 1))
    gc(bkctl, harness.service_uri, bookie.bookie_id, "--wait")  # forgets A, compacts nothing
    bookie.stop()
    result = bkctl("bookie", "inspect", "entrylog", "--usage", bookie.ledger_dir, "-o", "json")
    logs = json.loads(result.stdout)
    assert len(logs) >= 5 and all(0.4 < log["usage"] < 0.6 for log in logs[:-1])
    table = bkctl("bookie", "inspect", "entrylog", "--usage", bookie.ledger_dir).stdout
    assert table.splitlines()[0].split() == ["LOG", "BYTES", "LIVE", "USAGE", "LEDGERS"]
    bad = bkctl("bookie", "inspect", "entrylog", bookie.ledger_dir)
    assert bad.exit_code == 2 and "is a directory" in bad.stderr


@pytest.fixture
def small_disk(tmp_path):
    """A 32 MB filesystem for a bookie's ledger directory (the machine's own disk is far too big to fill)."""
    mount = tmp_path / "bookie-1" / "ledgers"
    mount.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(mount)], check=True)
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=True)


@pytest.mark.root  # mounts a small filesystem
def test_a_read_only_bookie_on_a_full_disk_gets_space_back_from_a_forced_gc(harness, bkctl, cluster, small_disk):
    (bookie,) = harness.start(1, logSizeLimit=1 << 20, diskCheckInterval=300)
    assert bookie.ledger_dir == str(small_disk)
    uri = harness.service_uri
    with BookKeeper(uri) as bk:
        big = bk.create_ledger(1, 1, 1)
        big.add_entries(payload(b"A", i) for i in range(16_000))  # ~16 MB: half the disk
        big.close()
    bookie.stop()
    bookie.settings.update(diskUsageThreshold="0.4", diskUsageWarnThreshold="0.3")
    bookie.write_conf(uri)
    harness.restart(bookie)
    registry = BookieRegistry(cluster)
    assert registry.get(bookie.bookie_id).state == "readonly"
    with BookKeeper(uri) as bk:
        bk.delete_ledger(big.ledger_id)
    runs = gc(bkctl, uri, bookie.bookie_id, "--wait")
    assert runs[bookie.bookie_id]["bytesReclaimed"] > 12 << 20
    wait_for(lambda: registry.get(bookie.bookie_id).state == "writable", "the bookie to become writable")
    with BookKeeper(uri) as bk:
        ledger = bk.create_ledger(1, 1, 1)
        assert ledger.add_entry(b"room again") == 0


def test_gc_commands_name_what_is_wrong(harness, bkctl):
    (bookie,) = harness.start(1)
    uri = harness.service_uri
    none = bkctl("-u", uri, "bookie", "gc")
    assert none.exit_code == 2 and none.stderr == "error: name one or more BOOKIEs, or pass --all\n"
    unknown = bkctl("-u", uri, "bookie", "gc-status", "127.0.0.1:1")
    assert unknown.exit_code == 5 and unknown.stderr == "error: no registered bookie 127.0.0.1:1\n"
    dry = bkctl("-u", uri, "bookie", "compaction", "suspend", "--minor", "--all", "--dry-run")
    assert dry.stdout == f"bookie/{bookie.bookie_id} minor compaction would be suspended (dry run)\n"
    assert "no" in bkctl("-u", uri, "bookie", "gc-status", bookie.bookie_id).stdout.splitlines()[1]
    bookie.stop(kill=True)  # still registered until its session expires, but not answering
    dead = bkctl("-u", uri, "bookie", "gc", bookie.bookie_id, "--wait")
    assert dead.exit_code == 6 and bookie.bookie_id in dead.stderr and "Traceback" not in dead.stderr


def start_db_bookie(harness, tmp_path, deleted_entries: int, kept_entries: int):
    """A DbLedgerStorage bookie over three ledger directories (ledger L in directory L mod 3) with, in each, a ledger
    to delete and, after it, one to keep, written and then checkpointed by a restart (so every log but the one the
    restart opened is sealed). Returns the bookie, its directories, and the ledgers to delete and to keep, by
    directory."""
    dirs = [str(tmp_path / f"disk{i}" / "ledgers") for i in range(3)]
    settings = {"ledgerStorageClass": DB_LEDGER_STORAGE, "ledgerDirectories": ",".join(dirs), **SMALL_LOGS}
    (bookie,) = harness.start(1, http=True, **settings)
    deleted: dict[int, int] = {}  # ledgerId mod 3 -> ledger
    kept: dict[int, int] = {}
    with BookKeeper(harness.service_uri) as bk:
        while len(kept) < 3:
            ledger = bk.create_ledger(1, 1, 1)
            residue = ledger.ledger_id % 3
            role = kept if residue in deleted else deleted
            role.setdefault(residue, ledger.ledger_id)
            count = deleted_entries if role is deleted else kept_entries
            futures = [ledger.add_entry_async(payload(b"L%d" % ledger.ledger_id, i)) for i in range(count)]
            for future in futures:
                future.result(30)
            ledger.close()
    bookie.stop()  # the shutdown checkpoint writes every directory's write cache into its entry logs
    harness.restart(bookie)
    return bookie, dirs, deleted, kept


def sealed_logs(directory: str) -> set[Path]:
    """A DB bookie directory's entry logs but the newest (the current one, which GC leaves alone)."""
    return set(sorted(Path(directory, "current").glob("*.log"), key=lambda p: int(p.stem, 16))[:-1])


def test_gc_on_a_db_bookie_reclaims_deleted_ledgers_in_every_directory(harness, bkctl, tmp_path):
    """Each directory has its own collector. The deleted ledgers come first in their directory's checkpoint (sorted
    by ledger id) and take more than one 1 MiB chunk, so each directory has a log of theirs alone (reclaimed by
    deletion) and one shared with the kept ledger (compacted)."""
    bookie, dirs, deleted, kept = start_db_bookie(harness, tmp_path, deleted_entries=1200, kept_entries=100)
    uri = harness.service_uri
    logs = {d: sealed_logs(d) for d in dirs}
    assert all(len(logs[d]) >= 2 for d in dirs), logs
    with BookKeeper(uri) as bk:
        for ledger_id in deleted.values():
            bk.delete_ledger(ledger_id)
    run = gc(bkctl, uri, "--major", bookie.bookie_id, "--wait")[bookie.bookie_id]
    assert (run["kind"], run["ledgersDeleted"], run["error"]) == ("major", 3, "")
    assert run["logsDeleted"] >= 3 and run["logsCompacted"] >= 3
    for d in dirs:  # every log that held a deleted ledger is gone, in every directory
        assert not logs[d] & set(Path(d, "current").glob("*.log")), d
    with BookKeeper(uri) as bk:
        for ledger_id in kept.values():
            with bk.open_ledger(ledger_id, recovery=False) as reader:
                got = [e.payload for e in reader.iter_entries(0, 99)]
                assert got == [payload(b"L%d" % ledger_id, i) for i in range(100)]
    status = json.loads(bkctl("-u", uri, "bookie", "gc-status", bookie.bookie_id, "-o", "json").stdout)[0]
    assert status["majorCompactionCounter"] == 3 and status["lastRun"]["ledgersDeleted"] == 3  # summed
    got = metrics(bookie)  # BookKeeper's GarbageCollectorStats, in each directory's DbLedgerStorage scope
    for d in dirs:
        labels = {"ledgerDir": f"{d}/current", "indexDir": f"{d}/current"}  # as SingleDirectoryDbLedgerStorage's
        assert got.sum("bookie_MAJOR_COMPACTION_TOTAL", **labels) == 1
        assert got.sum("bookie_DELETED_LEDGER_TOTAL", **labels) == 1
        assert got.sum("bookie_ACTIVE_LEDGER_TOTAL", **labels) == 1
        assert got.sum("bookie_THREAD_RUNTIME_count", success="true", **labels) >= 1
    assert not got.matching("bookie_gc_.*")
    _, _, text = http_call(bookie, "GET", "/api/v1/bookie/gc_details")
    assert [d["majorCompactionCounter"] for d in json.loads(text)] == [1, 1, 1]


def test_gc_status_of_a_db_bookie_covers_every_directory(harness, bkctl, tmp_path):
    """gc-status lists the sealed entry logs of every directory, each with its directory (log ids repeat across
    them); BookKeeper's HTTP gc_details a GarbageCollectionStatus per directory (GCDetailsService)."""
    bookie, dirs, _, _ = start_db_bookie(harness, tmp_path, deleted_entries=300, kept_entries=10)
    result = bkctl("-u", harness.service_uri, "bookie", "gc-status", bookie.bookie_id, "-o", "json")
    assert result.exit_code == 0, result.stderr
    (status,) = json.loads(result.stdout)
    listed = {(log["directory"], log["logId"]) for log in status["entryLogs"]}
    assert listed == {(d, int(p.stem, 16)) for d in dirs for p in sealed_logs(d)}
    assert {d for d, _ in listed} == set(dirs)

    code, _, text = http_call(bookie, "GET", "/api/v1/bookie/gc_details")
    details = json.loads(text)
    assert code == 200 and len(details) == 3
    types = {"boolean": bool, "integer": int}
    for d in details:  # BookKeeper's fields, in its order, of its types
        assert [(k, type(v)) for k, v in d.items()] == [(k, types[t]) for k, t in GC_STATUS.items()]

    # bkctl over that API (the bookie without our gRPC admin port, as a Java bookie): one status for all directories
    bookie.stop()
    bookie.settings.update(bkctlAdminPort="-1")
    bookie.write_conf(harness.service_uri)
    harness.restart(bookie)
    gc(bkctl, harness.service_uri, "--major", bookie.bookie_id, "--wait")  # until no directory is in a forced run
    result = bkctl("-u", harness.service_uri, "bookie", "gc-status", bookie.bookie_id, "-o", "json")
    (status,) = json.loads(result.stdout)
    assert (status["entryLogs"], status["majorCompactionCounter"]) == (None, 3)


# ---- stalled logs and targeted compaction ----
def log_ids(bookie) -> list[int]:
    return sorted(int(p.stem, 16) for p in entry_logs(bookie))


def damage_a_record(path: Path, ledger_id: int) -> None:
    """The size field of the ledger's second record in the log, running past the data: a scan stops there."""
    from bookie.storage.entry_log import iter_records

    second = [pos for pos, lid, _, _ in iter_records(path) if lid == ledger_id][1]
    with open(path, "r+b") as f:
        f.seek(second - 4)
        f.write((1 << 30).to_bytes(4, "big"))


def test_a_damaged_log_stalls_and_compaction_of_the_others_goes_on(harness, bkctl):
    """A record of the deleted ledger A damaged in the first entry log (as a torn write would): its scan stops
    there, before B's records that follow, so the log cannot be compacted. It stalls; every other log is compacted,
    the run does not fail, gc-status names the log and its error, and the gauge reads 1."""
    (bookie,) = harness.start(1, **SMALL_LOGS)
    uri = harness.service_uri
    a, b = write_interleaved(uri, 1000, quorum=(1, 1, 1))
    bookie.stop()
    first = log_ids(bookie)[0]
    damage_a_record(Path(bookie.ledger_dir, "current", f"{first:x}.log"), a)
    harness.restart(bookie)
    before = set(log_ids(bookie))
    run = gc(bkctl, uri, "--major", bookie.bookie_id, "--wait")[bookie.bookie_id]
    assert (run["kind"], run["error"]) == ("major", "") and run["logsCompacted"] >= 3
    assert first in log_ids(bookie) and len(before - set(log_ids(bookie))) == run["logsCompacted"]
    assert_b_intact(uri, b, 1000)

    (status,) = json.loads(bkctl("-u", uri, "bookie", "gc-status", bookie.bookie_id, "-o", "json").stdout)
    (stalled,) = status["stalledLogs"]
    assert stalled["logId"] == first and "scan stopped at a damaged record" in stalled["error"]
    assert stalled["since"] > 0 and stalled["sinceIso"]
    text = bkctl("-u", uri, "bookie", "gc-status", bookie.bookie_id)
    assert text.stdout.splitlines()[0].split()[-1] == "STALLED" and text.stdout.splitlines()[1].split()[-1] == "1"
    assert f"entry log {first:x} stalled: entry log {first:x}: its scan stopped" in text.stderr
    got = metrics(bookie)
    assert got.sum("bkctl_gc_stalled_logs") == 1
    # the dead bytes left are the stalled log's (about half of it), under the major threshold of 0.8: deleted-ledger
    # bytes, not reclaimable ones (a major compaction leaves a stalled log as it is)
    assert got.sum("bkctl_gc_deleted_ledger_bytes") > 0.4 * SMALL_LOGS["logSizeLimit"]
    assert got.sum("bkctl_gc_reclaimable_bytes") == 0
    # bookie usage names it too: the log stalled with its error, a stalled-log reason, and the estimate skips it
    usage = json.loads(bkctl("-u", uri, "bookie", "usage", bookie.bookie_id, "--logs", "100", "-o", "json").stdout)
    (shown,) = [log for log in usage["logs"] if log["logId"] == first]
    assert "scan stopped at a damaged record" in shown["stalled"]
    (reason,) = [r for r in usage["reasons"] if r["reason"] == "stalled-log"]
    assert (reason["logId"], reason["error"]) == (first, shown["stalled"]) and reason["bytes"] == shown["deadBytes"]
    assert first not in [log["logId"] for log in usage["reclaim"]["major"]["logsCompacted"]]

    # named, it fails again: the run says so (exit 1), the log stays
    named = bkctl("-u", uri, "bookie", "compaction", "run", bookie.bookie_id, "--log", f"{first:x}", "--wait")
    assert named.exit_code == 1 and f"entry log {first:x}: entry log {first:x}: its scan stopped" in named.stderr
    assert first in log_ids(bookie)
    assert bookie.log_path.read_text().count(f"entry log {first:x} stalled") == 1  # once, not once per run


def test_targeted_compaction_of_chosen_logs(harness, bkctl):
    """Thresholds under the logs' 50% usage, so no major or minor compaction takes them: named, one is compacted
    and removed, and B reads back whole; --ledger picks every log holding B; the current log and unknown ones are
    refused, a dry run changes nothing, and over BookKeeper's HTTP API the command is refused."""
    (bookie,) = harness.start(1, http=True, majorCompactionThreshold=0.3, minorCompactionThreshold=0.1, **SMALL_LOGS)
    uri = harness.service_uri
    _, b = write_interleaved(uri, 1000, quorum=(1, 1, 1))
    assert gc(bkctl, uri, "--major", bookie.bookie_id, "--wait")[bookie.bookie_id]["logsCompacted"] == 0
    logs = log_ids(bookie)
    sealed, current = logs[:-1], logs[-1]
    assert metrics(bookie).sum("bkctl_gc_reclaimable_bytes") == 0  # nothing under the major threshold of 0.3
    dead = metrics(bookie).sum("bkctl_gc_deleted_ledger_bytes")
    assert dead > 0.4 * sum(Path(bookie.ledger_dir, "current", f"{i:x}.log").stat().st_size for i in sealed)

    def compaction(*args):
        return bkctl("-u", uri, "bookie", "compaction", "run", bookie.bookie_id, *args)

    dry = compaction("--ledger", str(b), "--dry-run", "-o", "json")
    assert dry.exit_code == 0, dry.stderr
    plan = json.loads(dry.stdout)
    assert [log["logId"] for log in plan["logs"]] == sealed and plan["dryRun"] is True
    assert plan["bytesToReclaim"] > 0.4 * (plan["bytesToReclaim"] + plan["bytesToCopy"])
    text = compaction("--ledger", str(b), "--dry-run").stdout.splitlines()
    assert text[0].split() == ["LOG", "DIRECTORY", "BYTES", "LIVE", "USAGE"]
    assert text[1].startswith(f"{sealed[0]:x}.log")
    assert text[-1].startswith(f"bookie/{bookie.bookie_id} compaction of {len(sealed)} entry logs would run (dry run)")
    assert log_ids(bookie) == logs  # nothing changed

    target = sealed[1]
    size = Path(bookie.ledger_dir, "current", f"{target:x}.log").stat().st_size
    done = compaction("--log", f"{target:x}.log", "--wait", "-o", "json")
    assert done.exit_code == 0, done.stderr
    run = json.loads(done.stdout)["run"]
    assert (run["kind"], run["logsCompacted"], run["error"]) == ("targeted", 1, "")
    assert 0.4 * size < run["bytesReclaimed"] < 0.6 * size
    assert target not in log_ids(bookie) and set(sealed) - {target} <= set(log_ids(bookie))
    assert_b_intact(uri, b, 1000)

    refused = compaction("--log", f"{current:x}")
    assert refused.exit_code == 2 and f"entry log {current:x} is the current log" in refused.stderr
    unknown = compaction("--log", "ffff")
    assert unknown.exit_code == 5 and "no sealed entry log ffff" in unknown.stderr
    none = compaction()
    assert none.exit_code == 2 and none.stderr.startswith("error: name entry logs to compact (--log LOG)")
    bad = compaction("--log", "zz")
    assert bad.exit_code == 2 and "'zz' is not an entry log id" in bad.stderr
    assert bkctl("-u", uri, "bookie", "compaction", "suspend", bookie.bookie_id).exit_code == 0
    suspended = compaction("--log", f"{sealed[0]:x}")
    assert suspended.exit_code == 3 and "--ignore-suspension" in suspended.stderr
    assert compaction("--log", f"{sealed[0]:x}", "--ignore-suspension", "--wait").exit_code == 0
    assert sealed[0] not in log_ids(bookie)

    over_http = compaction("--log", f"{sealed[2]:x}", "--http-port", str(bookie.http_port))
    assert over_http.exit_code == 7 and "BookKeeper's HTTP admin API, which has no" in over_http.stderr


def test_targeted_compaction_on_a_db_bookie_finds_the_ledgers_directory(harness, bkctl, tmp_path):
    """DbLedgerStorage numbers each directory's logs apart: --ledger picks the logs of the ledger's own directory,
    and compacting them leaves the other directories' logs alone."""
    bookie, dirs, deleted, kept = start_db_bookie(harness, tmp_path, deleted_entries=300, kept_entries=100)
    uri = harness.service_uri
    with BookKeeper(uri) as bk:
        bk.delete_ledger(deleted[0])
    gc(bkctl, uri, bookie.bookie_id, "--wait")  # forgets it, compacts nothing
    home = dirs[kept[0] % 3]  # ledger L lives in directory L mod 3
    others = {d: sealed_logs(d) for d in dirs if d != home}

    def compaction(*args):
        return bkctl("-u", uri, "bookie", "compaction", "run", bookie.bookie_id, "--ledger", str(kept[0]), *args)

    plan = json.loads(compaction("--dry-run", "-o", "json").stdout)
    assert plan["logs"] and {log["directory"] for log in plan["logs"]} == {home}
    chosen = {Path(home, "current", log["file"]) for log in plan["logs"]}
    assert chosen <= sealed_logs(home)
    result = compaction("--wait", "-o", "json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["run"]["logsCompacted"] == len(chosen)
    assert not chosen & set(Path(home, "current").glob("*.log"))
    assert all(sealed_logs(d) == logs for d, logs in others.items())
    with BookKeeper(uri) as bk, bk.open_ledger(kept[0], recovery=False) as reader:
        assert [e.payload for e in reader.iter_entries(0, 99)] == [payload(b"L%d" % kept[0], i) for i in range(100)]

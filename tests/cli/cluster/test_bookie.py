"""bkctl bookie info / readonly / inspect against real bookie processes and their files."""

import json

import pytest

from bookie._proto import bookkeeper_protocol_pb2 as pb

from support.storage import KEY
from support.wire import add_requests


@pytest.fixture
def two_bookies(harness):
    return harness.start(2)


def test_info_all(bkctl, service_uri, two_bookies):
    result = bkctl("-u", service_uri, "bookie", "info", "--all", "-o", "json")
    assert result.exit_code == 0
    docs = json.loads(result.stdout)
    assert sorted(d["bookieId"] for d in docs) == sorted(b.bookie_id for b in two_bookies)
    assert all(0 < d["freeDiskSpace"] < d["totalDiskCapacity"] and d["state"] == "writable" for d in docs)
    table = bkctl("-u", service_uri, "bookie", "info", two_bookies[0].bookie_id).stdout.splitlines()
    assert table[0].split() == ["BOOKIE", "STATE", "TOTAL", "FREE", "USED", "REASON"] and len(table) == 2
    assert table[1].split()[-1] == "<none>" and all(d["readOnlyReasons"] == [] for d in docs)


def test_info_of_a_dead_bookie_exits_6(bkctl, service_uri, two_bookies):
    two_bookies[0].stop(kill=True)  # still registered until its session expires
    result = bkctl("-u", service_uri, "bookie", "info", "--all", "-o", "json")
    assert result.exit_code == 6
    assert f"bookie {two_bookies[0].bookie_id} is unreachable" in result.stderr
    assert len(json.loads(result.stdout)) == 2


def test_info_usage_errors(bkctl, service_uri, two_bookies):
    assert bkctl("-u", service_uri, "bookie", "info").exit_code == 2
    unknown = bkctl("-u", service_uri, "bookie", "info", "10.0.0.9:3181")
    assert (unknown.exit_code, unknown.stderr) == (5, "error: no registered bookie 10.0.0.9:3181\n")


def test_readonly_on_off(bkctl, service_uri, two_bookies, harness):
    bookie_id = two_bookies[0].bookie_id
    dry = bkctl("-u", service_uri, "bookie", "readonly", bookie_id, "--on", "--dry-run")
    assert dry.stdout == f"bookie/{bookie_id} would be made read-only (now writable; dry run)\n"
    assert bkctl("-u", service_uri, "bookie", "readonly", bookie_id, "--on").stdout == f"bookie/{bookie_id} read-only\n"
    listed = json.loads(bkctl("-u", service_uri, "bookies", "list", "--readonly", "-o", "json").stdout)
    assert [(b["bookieId"], b["state"], b["readOnlyReasons"]) for b in listed] == [
        (bookie_id, "readonly", ["operator"])
    ]
    wide = bkctl("-u", service_uri, "bookies", "list", "--all", "-o", "wide").stdout.splitlines()
    assert wide[0].split()[:4] == ["BOOKIE", "STATE", "RACK", "REASON"]
    assert [line.split()[:4] for line in wide[1:] if line.startswith(bookie_id)] == [
        [bookie_id, "readonly", "/default-rack", "operator"]
    ]
    (info,) = json.loads(bkctl("-u", service_uri, "bookie", "info", bookie_id, "-o", "json").stdout)
    assert (info["state"], info["readOnlyReasons"]) == ("readonly", ["operator"])
    assert bkctl("-u", service_uri, "bookie", "info", bookie_id).stdout.splitlines()[1].split()[-1] == "operator"
    conn = harness.wire(two_bookies[0])
    (add,) = add_requests(1, 0, 1)
    assert conn.ask(add).status == pb.EREADONLY
    assert bkctl("-u", service_uri, "bookie", "readonly", bookie_id, "--off").stdout == f"bookie/{bookie_id} writable\n"
    assert conn.ask(add).status == pb.EOK


def test_inspect_a_stopped_bookies_files(bkctl, harness):
    (bookie,) = harness.start(1)
    conn = harness.wire(bookie)
    for add in add_requests(258, 0, 3):
        conn.ask(add)
    bookie.stop()
    from pathlib import Path

    journal = sorted(Path(bookie.journal_dir, "current").glob("*.txn"))[0]
    records_doc = json.loads(bkctl("bookie", "inspect", "journal", str(journal), "-o", "json").stdout)
    assert [(r["kind"], r["ledgerId"], r["entryId"]) for r in records_doc] == [
        ("master_key", 258, None),
        ("entry", 258, 0),
        ("entry", 258, 1),
        ("entry", 258, 2),
    ]
    log = sorted(Path(bookie.ledger_dir, "current").glob("*.log"))[0]
    entries = json.loads(bkctl("bookie", "inspect", "entrylog", str(log), "-o", "json").stdout)
    assert [(e["ledgerId"], e["entryId"]) for e in entries] == [(258, 0), (258, 1), (258, 2)]
    ledger_map = bkctl("bookie", "inspect", "entrylog", str(log), "--map").stdout.splitlines()
    assert ledger_map[1].split()[:1] == ["258"] and ledger_map[1].split()[2] == "rebuilt"
    index = Path(bookie.ledger_dir, "current", "1", "2", "102.idx")  # ledger 258 = 0x102
    doc = json.loads(bkctl("bookie", "inspect", "index", str(index), "-o", "json").stdout)
    assert doc["ledgerId"] == 258 and doc["fenced"] is False and doc["masterKey"] == KEY.hex()
    assert [e["entryId"] for e in doc["entries"]] == [0, 1, 2]
    mark = json.loads(bkctl("bookie", "inspect", "lastmark", bookie.ledger_dir, "-o", "json").stdout)
    assert mark["journalFile"].endswith(".txn") and mark["offset"] >= 512


def test_inspect_an_empty_pre_created_entry_log(bkctl, tmp_path):
    """BookKeeper creates the next entry log before it is needed: every real bookie has a 0-byte one."""
    (tmp_path / "current").mkdir()
    log = tmp_path / "current" / "7.log"
    log.write_bytes(b"")
    result = bkctl("bookie", "inspect", "entrylog", str(log), "-o", "json")
    assert (result.exit_code, json.loads(result.stdout)) == (0, [])
    ledger_map = bkctl("bookie", "inspect", "entrylog", str(log), "--map")
    assert (ledger_map.exit_code, ledger_map.stdout, ledger_map.stderr) == (0, "", "empty entry log\n")
    usage = bkctl("bookie", "inspect", "entrylog", "--usage", str(tmp_path), "-o", "json")
    assert usage.exit_code == 0
    assert [(d["file"], d["totalSize"], d["ledgers"]) for d in json.loads(usage.stdout)] == [("7.log", 0, 0)]


def test_inspect_a_damaged_journal_lists_what_follows_the_damage(bkctl, tmp_path):
    """The records after a bad one are shown (a bookie refuses to replay past it), the damage named, exit 3."""
    from bookie.storage import journal as jf

    def entry_record(entry_id):
        data = jf.META.pack(5, entry_id) + b"x" * 20
        return jf.INT.pack(len(data)) + data

    journal = jf.JournalFile(tmp_path, 1, prealloc_bytes=1 << 20)
    starts = []
    for chunk in (entry_record(0), entry_record(1), entry_record(2)):  # three group commits
        starts.append(journal.position)
        journal.append(chunk)
    journal.close()
    path = jf.journal_path(tmp_path, 1)
    with open(path, "r+b") as f:
        f.seek(starts[1])
        f.write(bytes(4))  # a zeroed sector in the middle
    result = bkctl("bookie", "inspect", "journal", str(path), "-o", "json")
    assert result.exit_code == 3
    assert [r["entryId"] for r in json.loads(result.stdout)] == [0, 2]
    assert result.stderr.splitlines() == [
        f"warning: {path}: corrupt journal record at offset {starts[1]} (length 0); "
        f"{starts[2] - starts[1]} bytes skipped",
        f"error: {path}: 1 damaged region(s); a bookie refuses to replay this journal unless started with "
        "--skip-journal-corruption",
    ]


def test_inspect_journal_names_a_write_a_crash_cut_short(bkctl, tmp_path):
    """Its records are what a bookie does not replay: not listed, counted in a warning; exit 0 (no damage)."""
    from bookie.storage import journal as jf

    def entry_record(entry_id):
        data = jf.META.pack(5, entry_id) + b"x" * 300
        return jf.INT.pack(len(data)) + data

    journal = jf.JournalFile(tmp_path, 1, prealloc_bytes=1 << 20)
    journal.append(entry_record(0))
    cut = journal.position
    journal.append(entry_record(1) + entry_record(2))
    journal.close()
    path = jf.journal_path(tmp_path, 1)
    with open(path, "r+b") as f:
        f.seek(cut + 512)
        f.write(bytes(512))  # the write's second sector lost
    result = bkctl("bookie", "inspect", "journal", str(path), "-o", "json")
    assert result.exit_code == 0
    assert [r["entryId"] for r in json.loads(result.stdout)] == [0]
    assert result.stderr.splitlines() == [
        f"warning: {path}: 2 records from offset {cut} are a write a crash cut short (never acknowledged, not "
        "replayed, not listed)"
    ]


def test_metrics_of_busy_and_idle_bookies(bkctl, service_uri, harness):
    """Rates between two scrapes: the bookie being written to shows its adds, the other none; the p99 once the
    first one-second window closed."""
    from support.cluster import StreamWriter, adds_ok
    from support.waiting import wait_for

    busy, idle = harness.start(2, prometheusStatsLatencyRolloverSeconds=1)
    writer = StreamWriter(busy.port, ledger_id=9, batch=20)
    writer.start()
    try:
        wait_for(lambda: adds_ok(busy) >= 200, "200 adds")
        result = bkctl("-u", service_uri, "bookie", "metrics", "--all", "--interval", "1.5", "-o", "json")
    finally:
        writer.stop()
    assert result.exit_code == 0, result.stderr
    docs = {d["bookieId"]: d for d in json.loads(result.stdout)}
    assert docs[busy.bookie_id]["addsPerSec"] > 50 and docs[idle.bookie_id]["addsPerSec"] == 0
    assert docs[busy.bookie_id]["addLatencyP99Ms"] > 0 and docs[idle.bookie_id]["addLatencyP99Ms"] is None
    for bookie in (busy, idle):
        doc = docs[bookie.bookie_id]
        assert doc["metricsUrl"] == f"http://127.0.0.1:{bookie.metrics_port}/metrics"
        assert (doc["state"], doc["readsPerSec"], doc["writableLedgerDirs"], doc["ledgerDirs"]) == ("writable", 0, 1, 1)
        assert 0 < doc["ledgerDiskUsagePercent"] < 100 and doc["journalQueue"] >= 0 and doc["intervalSeconds"] >= 1.5
    table = bkctl("-u", service_uri, "bookie", "metrics", idle.bookie_id, "--interval", "0.1").stdout.splitlines()
    assert table[0].split() == ["BOOKIE", "STATE", "ADDS/S", "READS/S", "ADD", "P99", "JOURNAL", "Q", "DISK", "DIRS"]
    assert table[1].split()[:4] == [idle.bookie_id, "writable", "0.0", "0.0"] and table[1].split()[4] == "<none>"


def test_metrics_of_a_read_only_bookie_over_its_http_admin_api_and_of_a_dead_one(bkctl, service_uri, harness):
    """--http-port: BookKeeper's HTTP admin API serves /metrics too (where a Java bookie's are when it is on). A
    dead bookie is a warning, exit 6, and the others are still shown."""
    (served,) = harness.start(1, http=True)
    (dead,) = harness.start(1)
    assert bkctl("-u", service_uri, "bookie", "readonly", served.bookie_id, "--on").exit_code == 0
    dead.stop(kill=True)  # still registered until its session expires
    over_http = bkctl(
        "-u",
        service_uri,
        "bookie",
        "metrics",
        served.bookie_id,
        "--http-port",
        str(served.http_port),
        "--interval",
        "0.1",
        "-o",
        "json",
    )
    assert over_http.exit_code == 0, over_http.stderr
    (doc,) = json.loads(over_http.stdout)
    assert doc["metricsUrl"] == f"http://127.0.0.1:{served.http_port}/metrics" and doc["state"] == "readonly"
    result = bkctl("-u", service_uri, "bookie", "metrics", "--all", "--interval", "0.1", "-o", "json")
    assert result.exit_code == 6
    assert [d["bookieId"] for d in json.loads(result.stdout)] == [served.bookie_id]
    assert result.stderr.startswith(
        f"warning: metrics of bookie {dead.bookie_id} are unreachable at http://127.0.0.1:{dead.metrics_port}/metrics ("
    )


def test_readonly_all_on_asks_first(bkctl, service_uri, two_bookies):
    refused = bkctl("-u", service_uri, "bookie", "readonly", "--all", "--on")
    assert (refused.exit_code, refused.stderr) == (
        2,
        "error: refusing to make every bookie read-only without --yes: no terminal to confirm on\n",
    )
    listed = json.loads(bkctl("-u", service_uri, "bookies", "list", "--readonly", "-o", "json").stdout)
    assert listed == []
    done = bkctl("-u", service_uri, "bookie", "readonly", "--all", "--on", "--yes")
    assert sorted(done.stdout.splitlines()) == sorted(f"bookie/{b.bookie_id} read-only" for b in two_bookies)
    back = bkctl("-u", service_uri, "bookie", "readonly", "--all", "--off")
    assert sorted(back.stdout.splitlines()) == sorted(f"bookie/{b.bookie_id} writable" for b in two_bookies)

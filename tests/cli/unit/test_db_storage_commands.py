"""bkctl's DbLedgerStorage commands on a stopped bookie's files: inspect, check, rebuild, convert — and refused on
a running one. (The same commands on a Java bookie's files, checked against the BookKeeper shell:
tests/interop/test_db_storage.py.)"""

import json
import shutil

import pytest

from bkctl.errors import ExitCode
from bookie.server.claim import DirectoryLocks
from bookie.storage.config import StorageConfig
from bookie.storage.db.storage import DbLedgerStorage
from bookie.storage.entry_log import list_log_ids, log_path
from bookie.storage.interleaved import InterleavedLedgerStorage

from support.progress import show_bars
from support.storage import KEY, add, payload
from support.storage import stored_entry as entry


@pytest.fixture
def bookie_dir(tmp_path):
    """A stopped DbLedgerStorage bookie: ledgers 1 (fenced) and 2, over two entry logs."""
    ledgers = (tmp_path / "ledgers",)
    config = StorageConfig((tmp_path / "journal",), ledgers, ledgers, entry_log_size_limit=40_000)
    storage = DbLedgerStorage(config)
    storage.start()
    add(storage, 1, 0, 100)
    storage.checkpoint()
    add(storage, 2, 0, 300)
    storage.fence(1, KEY, lambda e: None)
    storage.shutdown()
    return tmp_path


def dirs(root):
    return ["--journal-dir", str(root / "journal"), "--ledger-dir", str(root / "ledgers")]


def locations(bkctl, root, *args):
    done = bkctl("bookie", "inspect", "locations", str(root / "ledgers"), *args, "-o", "json")
    assert done.exit_code == 0, done.output
    return json.loads(done.output)


def reopened(root) -> DbLedgerStorage:
    storage = DbLedgerStorage(StorageConfig((root / "journal",), (root / "ledgers",), (root / "ledgers",)))
    storage.start()
    return storage


def test_inspect_shows_the_indexes(bkctl, bookie_dir):
    found = locations(bkctl, bookie_dir, "--ledger", "2")
    assert [r["entryId"] for r in found] == list(range(300)) and {r["ledgerId"] for r in found} == {2}
    assert len({r["logId"] for r in locations(bkctl, bookie_dir)}) == 2  # the log rolled over
    ledgers = json.loads(bkctl("bookie", "inspect", "ledgers", str(bookie_dir / "ledgers"), "-o", "json").output)
    assert [(d["ledgerId"], d["fenced"], d["masterKey"]) for d in ledgers] == [(1, True, True), (2, False, True)]
    usage = bkctl("bookie", "inspect", "entrylog", "--usage", str(bookie_dir / "ledgers"), "-o", "json")
    assert [d["ledgers"] for d in json.loads(usage.output)] == [1, 1]  # ledgers 1 and 2, live in its ledgers index
    missing = bkctl("bookie", "inspect", "locations", str(bookie_dir / "journal"))
    assert missing.exit_code == ExitCode.NOT_FOUND and "no DbLedgerStorage locations index" in missing.output


def test_check_finds_a_missing_entry_log_and_a_moved_entry(bkctl, bookie_dir):
    clean = bkctl("bookie", "check-db-index", *dirs(bookie_dir), "--verify-entries", "-o", "json")
    assert clean.exit_code == 0, clean.output
    [report] = json.loads(clean.output)
    assert (report["ledgers"], report["locations"], report["entriesVerified"]) == (2, 400, 400)
    first = list_log_ids(bookie_dir / "ledgers")[0]
    data = bytearray(log_path(bookie_dir / "ledgers", first).read_bytes())
    data[1024 + 4 : 1024 + 12] = (99).to_bytes(8, "big")  # the first entry now claims to be of ledger 99
    log_path(bookie_dir / "ledgers", first).write_bytes(bytes(data))
    damaged = bkctl("bookie", "check-db-index", *dirs(bookie_dir), "--verify-entries")
    assert damaged.exit_code == ExitCode.PROBLEMS
    assert "holds ledger 99 entry 0" in damaged.output
    log_path(bookie_dir / "ledgers", first).unlink()
    gone = bkctl("bookie", "check-db-index", *dirs(bookie_dir))
    assert gone.exit_code == ExitCode.PROBLEMS and f"{first:x}.log, which is missing" in gone.output


def test_the_offline_tools_bars_go_to_stderr_and_leave_the_json_alone(bkctl, bookie_dir, monkeypatch):
    show_bars(monkeypatch)
    checked = bkctl("bookie", "check-db-index", *dirs(bookie_dir), "-o", "json")
    assert json.loads(checked.stdout)[0]["ledgers"] == 2
    assert "checking locations" in checked.stderr and "2/2 ledgers" in checked.stderr
    rebuilt = bkctl("bookie", "rebuild-db-index", "locations", *dirs(bookie_dir), "--dry-run", "-o", "json")
    assert json.loads(rebuilt.stdout)[0]["entries"] == 400
    assert "scanning entry logs" in rebuilt.stderr and "2/2 entry logs" in rebuilt.stderr
    converted = bkctl("bookie", "convert-storage", "--to", "interleaved", *dirs(bookie_dir), "--dry-run", "-o", "json")
    assert json.loads(converted.stdout)[0]["ledgers"] == 2 and "2/2 ledgers" in converted.stderr


def test_rebuilt_indexes_serve_the_same_entries(bkctl, bookie_dir):
    before = locations(bkctl, bookie_dir)
    dry = bkctl("bookie", "rebuild-db-index", "locations", *dirs(bookie_dir), "--dry-run")
    assert dry.exit_code == 0 and "2 ledgers, 400 entries (dry run)" in dry.output
    done = bkctl("bookie", "rebuild-db-index", "locations", *dirs(bookie_dir))
    assert done.exit_code == 0, done.output
    assert locations(bkctl, bookie_dir) == before
    assert len(list((bookie_dir / "ledgers" / "current").glob("locations.BACKUP-*"))) == 1
    done = bkctl("bookie", "rebuild-db-index", "ledgers", *dirs(bookie_dir), "-o", "json")
    assert json.loads(done.output)[0]["ledgers"] == 2
    storage = reopened(bookie_dir)
    try:
        assert storage.is_fenced(2)  # rebuilt ledgers are fenced: nothing is known of their writers
        assert entry(storage, 2, 299).payload == payload(2, 299)
    finally:
        storage.shutdown()


def test_convert_to_interleaved_and_back(bkctl, bookie_dir):
    before = locations(bkctl, bookie_dir)
    refused = bkctl("bookie", "convert-storage", "--to", "interleaved", *dirs(bookie_dir))
    assert refused.exit_code == ExitCode.USAGE and "--yes" in refused.output
    done = bkctl("bookie", "convert-storage", "--to", "interleaved", *dirs(bookie_dir), "--yes")
    assert done.exit_code == 0 and "2 ledgers, 400 entries converted to interleaved" in done.output
    index = bkctl("bookie", "inspect", "index", str(bookie_dir / "ledgers/current/0/1/1.idx"), "-o", "json")
    assert json.loads(index.output)["fenced"] is True
    assert not (bookie_dir / "ledgers/current/locations").exists()
    done = bkctl("bookie", "convert-storage", "--to", "db", *dirs(bookie_dir), "--yes")
    assert done.exit_code == 0, done.output
    assert locations(bkctl, bookie_dir) == before
    assert not list((bookie_dir / "ledgers/current").glob("*/*/*.idx"))
    storage = reopened(bookie_dir)
    try:
        assert storage.is_fenced(1) and not storage.is_fenced(2)
        assert entry(storage, 1, 99).payload == payload(1, 99)
    finally:
        storage.shutdown()


def test_changes_are_refused_while_the_bookie_runs_and_a_lost_index_is_rebuilt(bkctl, bookie_dir):
    locks = DirectoryLocks()
    locks.acquire([bookie_dir / "journal", bookie_dir / "ledgers"])
    try:
        for args in (["rebuild-db-index", "locations"], ["convert-storage", "--to", "interleaved", "--yes"]):
            done = bkctl("bookie", *args, *dirs(bookie_dir))
            assert done.exit_code == ExitCode.PROBLEMS and "stop that bookie first" in done.output
    finally:
        locks.release()
    shutil.rmtree(bookie_dir / "ledgers" / "current" / "locations")
    assert bkctl("bookie", "check-db-index", *dirs(bookie_dir)).exit_code == ExitCode.NOT_FOUND
    rebuilt = bkctl("bookie", "rebuild-db-index", "locations", *dirs(bookie_dir))
    assert rebuilt.exit_code == 0 and "the old one" not in rebuilt.output
    assert bkctl("bookie", "check-db-index", *dirs(bookie_dir), "--verify-entries").exit_code == 0


def three_dirs(root):
    """A storage configuration of ``root`` with three ledger directories (the index files with the entry logs)."""
    ledgers = tuple(root / f"ledgers{i}" for i in range(3))
    return StorageConfig((root / "journal",), ledgers, ledgers, entry_log_size_limit=20_000)


def three_dir_args(root):
    return ["--journal-dir", str(root / "journal")] + [f"--ledger-dir={d}" for d in three_dirs(root).ledger_dirs]


def test_conversion_puts_each_ledger_where_db_storage_reads_it_with_three_ledger_dirs(bkctl, tmp_path):
    """An interleaved bookie spreads index files and entry logs over its directories at random; DbLedgerStorage
    reads ledger L from directory L mod 3 only, from that directory's own entry logs."""
    config = three_dirs(tmp_path)
    interleaved = InterleavedLedgerStorage(config)
    interleaved.start()
    # one batch of ten 1 kB entries per 20 kB log, each log in a directory picked at random: all 36 logs in one
    # directory once in 3^35 (one batch of 60 per ledger made 6 logs, all in one directory once in 243)
    for ledger_id in range(1, 7):
        for first in range(0, 60, 10):
            add(interleaved, ledger_id, first, 10, size=1000)
    interleaved.shutdown()
    assert sum(bool(list_log_ids(d)) for d in config.ledger_dirs) >= 2
    done = bkctl("bookie", "convert-storage", "--to", "db", *three_dir_args(tmp_path), "--yes", "-o", "json")
    assert done.exit_code == 0, done.output
    converted = json.loads(done.output)
    assert [d["ledgers"] for d in converted] == [2, 2, 2] and sum(d["entriesCopied"] for d in converted) > 0
    db = DbLedgerStorage(config)
    db.start()
    try:
        assert db.ledger_ids() == list(range(1, 7))
        for ledger_id in range(1, 7):
            assert [entry(db, ledger_id, e).payload for e in range(60)] == [
                payload(ledger_id, e, 1000) for e in range(60)
            ]
        add(db, 7, 0, 60, size=1000)  # each directory now numbers its own logs: their ids collide across them
        db.checkpoint()
    finally:
        db.shutdown()
    ids = [set(list_log_ids(d)) for d in config.ledger_dirs]
    assert ids[0] & ids[1] & ids[2]
    done = bkctl("bookie", "convert-storage", "--to", "interleaved", *three_dir_args(tmp_path), "--yes")
    assert done.exit_code == 0, done.output
    interleaved = InterleavedLedgerStorage(config)
    interleaved.start()
    try:
        for ledger_id in range(1, 8):
            assert [entry(interleaved, ledger_id, e).payload for e in range(60)] == [
                payload(ledger_id, e, 1000) for e in range(60)
            ]
    finally:
        interleaved.shutdown()


def test_rebuilt_ledgers_index_has_each_ledger_in_its_own_directory(bkctl, tmp_path):
    config = three_dirs(tmp_path)
    storage = DbLedgerStorage(config)
    storage.start()
    for ledger_id in range(1, 4):
        add(storage, ledger_id, 0, 10)
    storage.shutdown()
    done = bkctl("bookie", "rebuild-db-index", "ledgers", *three_dir_args(tmp_path), "-o", "json")
    assert [d["ledgers"] for d in json.loads(done.output)] == [1, 1, 1]  # the journal has all three
    storage = DbLedgerStorage(config)
    storage.start()
    try:
        assert storage.ledger_ids() == [1, 2, 3]
        assert entry(storage, 2, 9).payload == payload(2, 9)
    finally:
        storage.shutdown()


def test_check_local_checks_the_locations_index_and_rebuild_index_refuses(bkctl, bookie_dir):
    """A DbLedgerStorage bookie has no index files: check-local said "ok: 0 entries", rebuild-index went ahead."""
    ok = bkctl("bookie", "check-local", *dirs(bookie_dir))
    assert (ok.exit_code, ok.stdout) == (0, "ok: 400 entries of 2 ledgers point at their entries\n")
    first = list_log_ids(bookie_dir / "ledgers")[0]
    data = bytearray(log_path(bookie_dir / "ledgers", first).read_bytes())
    data[1024 + 12 : 1024 + 20] = (1000).to_bytes(8, "big")  # the first entry (ledger 1's 0) now claims to be 1000
    log_path(bookie_dir / "ledgers", first).write_bytes(bytes(data))
    damaged = bkctl("bookie", "check-local", *dirs(bookie_dir), "-o", "json")
    assert damaged.exit_code == ExitCode.PROBLEMS
    report = json.loads(damaged.stdout)
    assert (report["storage"], report["ledgers"], report["entries"]) == ("db", 2, 400)
    assert [(i["ledgerId"], i["entryId"], i["problem"]) for i in report["inconsistencies"]] == [(1, 0, "wrong-entry")]
    refused = bkctl("bookie", "rebuild-index", "1", "--password", "pw", *dirs(bookie_dir))
    assert refused.exit_code == ExitCode.USAGE
    assert refused.stderr == (
        "error: a DbLedgerStorage bookie has no index files to rebuild: use bkctl bookie rebuild-db-index locations\n"
    )

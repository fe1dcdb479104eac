"""The storage view (bookie/storage/usage.py) of a bookie's directories read offline while a storage runs on them, in
one process: every log with its whole ledgers map, the current one too; the index's ledgers and where one ledger's
entries are; and not a byte of the directories changed by reading them."""

import os
import threading
from pathlib import Path
from types import SimpleNamespace

from bookie.codec.storage_view import from_message, to_message
from bookie.server.config import BookieConfig
from bookie.storage import usage
from bookie.storage.db.storage import DbLedgerStorage
from bookie.storage.entry_log import HEADER, HEADER_SIZE, MAGIC, VERSION, list_log_ids, log_path, read_ledgers_map
from bookie.storage.gc import GarbageCollector, GcConfig
from bookie.storage.gc_group import GarbageCollectors
from bookie.storage.usage import EntryRange, entry_ranges, ledger_locations, view_of_bookie, view_of_dirs

from support.storage import add, records

RECORD = len(records(1, 0, 1))
PER_LOG = 10


def tree(*roots: Path) -> dict[str, tuple[int, int]]:
    """Every file and directory under the roots: (size, mtime in ns) by path."""
    found = {}
    for root in roots:
        for parent, dirs, files in os.walk(root):
            for name in dirs + files:
                st = os.lstat(os.path.join(parent, name))
                found[os.path.join(parent, name)] = (st.st_size, st.st_mtime_ns)
    return found


def offline_config(config) -> BookieConfig:
    """The bookie's configuration as the offline commands make it from --journal-dir and --ledger-dir."""
    return BookieConfig.load(
        None,
        {
            "journalDirectories": ",".join(map(str, config.journal_dirs)),
            "ledgerDirectories": ",".join(map(str, config.ledger_dirs)),
        },
    )


def fill(storage) -> None:
    """Logs 0 and 1 sealed (ledgers 1 and 2 in log 0, 2 and 3 in log 1), log 2 current with ledger 3's last entry;
    entry 5 of ledger 2 in log 1 (each log holds PER_LOG records)."""
    assert add(storage, 1, 0, 5) == [] and add(storage, 2, 0, 5) == []
    assert add(storage, 2, 5, 1) == [] and add(storage, 3, 0, 9) == []
    assert add(storage, 3, 9, 1) == []
    storage.checkpoint()


def test_entry_ranges_are_runs_of_consecutive_entries_in_one_log():
    pairs = [(0, 4), (1, 4), (2, 5), (3, 4), (5, 4), (6, 4)]
    assert entry_ranges(pairs) == [EntryRange(0, 1, 4), EntryRange(2, 2, 5), EntryRange(3, 3, 4), EntryRange(5, 6, 4)]
    assert entry_ranges([]) == []


def test_a_running_interleaved_storage_read_offline(open_storage, config, tmp_path):
    storage = open_storage(entry_log_size_limit=HEADER_SIZE + PER_LOG * RECORD)
    fill(storage)
    ledger_dir = config.ledger_dirs[0]
    assert list_log_ids(ledger_dir) == [0, 1, 2]
    before = tree(tmp_path)
    view = view_of_dirs(offline_config(config))
    assert tree(tmp_path) == before
    assert (view.storage, view.source, view.bookie_id) == ("interleaved", "offline", None)
    assert [(log.log_id, log.active) for log in view.logs] == [(0, False), (1, False), (2, True)]
    assert [set(log.ledgers) for log in view.logs] == [{1, 2}, {2, 3}, {3}]
    for log in view.logs[:2]:  # the whole map, whatever is alive
        assert log.ledgers == read_ledgers_map(log_path(ledger_dir, log.log_id))
        assert log.size == log_path(ledger_dir, log.log_id).stat().st_size
    assert view.logs[2].ledgers == {3: RECORD} == storage.entry_logger.ledger_sizes
    assert view.local_ledgers == {1: 5, 2: 6, 3: 10}
    (ledger_dir_view, journal_view) = view.dirs
    assert (ledger_dir_view.kind, journal_view.kind) == ("ledger", "journal")
    assert ledger_dir_view.bytes["entryLogs"] == sum(log.size for log in view.logs)
    assert ledger_dir_view.bytes["index"] > 0 and ledger_dir_view.bytes["journal"] == 0
    assert journal_view.bytes["journal"] > 0 and journal_view.disk_size >= journal_view.disk_free > 0
    assert (view.gc.major_threshold, view.gc.next_run) == (0.8, None)
    assert ledger_locations(offline_config(config), 2) == [EntryRange(0, 4, 0), EntryRange(5, 5, 1)]
    assert ledger_locations(offline_config(config), 9) == []
    assert from_message(to_message(view)) == view


def test_a_running_db_storage_read_offline_writes_nothing_in_its_databases(open_db, config, tmp_path):
    storage: DbLedgerStorage = open_db(entry_log_size_limit=HEADER_SIZE + PER_LOG * RECORD)
    fill(storage)
    before = tree(tmp_path)
    conf = offline_config(config)
    view = view_of_dirs(conf)
    assert tree(tmp_path) == before  # no rocksdict-config.json, LOG or LOCK touched: nothing at all
    assert view.storage == "db"
    ledger_dir = config.ledger_dirs[0]
    assert list_log_ids(ledger_dir) == [0]
    (log,) = view.logs
    assert (log.log_id, log.active, log.ledgers) == (0, True, {1: 5 * RECORD, 2: 6 * RECORD, 3: 10 * RECORD})
    assert view.local_ledgers == {1: 5, 2: 6, 3: 10}
    assert view.dirs[0].bytes["index"] > 0
    ranges = ledger_locations(conf, 3)
    assert ranges == [EntryRange(0, 9, 0)]  # the checkpoint wrote the write cache into log 0, ledger by ledger
    assert tree(tmp_path) == before


def test_a_java_bookie_keeps_no_rocksdict_file_after_reading(open_db, config, tmp_path):
    """A database rocksdict never opened (a Java bookie's) gets no rocksdict-config.json from our read either."""
    fill(open_db())
    for found in Path(config.ledger_dirs[0], "current").glob("*/rocksdict-config.json"):
        found.unlink()
    before = tree(tmp_path)
    assert view_of_dirs(offline_config(config)).local_ledgers == {1: 5, 2: 6, 3: 10}
    assert tree(tmp_path) == before


def test_the_current_log_is_the_last_written_of_the_unsealed_ones(open_storage, config):
    """Log 2 has entries and no map. A log 3 of 0 bytes is BookKeeper's next log, created in advance with its header
    not yet written (entryLogPreAllocationEnabled): current too; two such logs are its current log and the next. A
    log 3 with a header and no entry, written after log 2, is the one a bookie created when it restarted, after its
    stop left log 2 unsealed: only log 3 is current."""
    storage = open_storage(entry_log_size_limit=HEADER_SIZE + PER_LOG * RECORD)
    fill(storage)
    ledger_dir = config.ledger_dirs[0]

    def current() -> list[int]:
        return [log.log_id for log in view_of_dirs(offline_config(config)).logs if log.active]

    assert current() == [2]
    log_path(ledger_dir, 3).write_bytes(b"")
    assert current() == [2, 3]
    log_path(ledger_dir, 4).write_bytes(b"")
    assert current() == [3, 4]
    log_path(ledger_dir, 4).unlink()
    log_path(ledger_dir, 3).write_bytes(HEADER.pack(MAGIC, VERSION, 0, 0).ljust(HEADER_SIZE, b"\0"))
    written = log_path(ledger_dir, 2).stat().st_mtime
    os.utime(log_path(ledger_dir, 3), (written + 10, written + 10))
    assert current() == [3]
    os.utime(log_path(ledger_dir, 3), (written - 10, written - 10))
    assert current() == [2, 3]


def test_past_the_count_limit_ledgers_are_listed_without_counts(open_each_storage, config, monkeypatch):
    """Counting reads every index entry: a bookie with more than COUNT_LIMIT of them gets its ledger ids only (21
    locations; index files of a page, 1,024 slots, each)."""
    fill(open_each_storage(entry_log_size_limit=HEADER_SIZE + PER_LOG * RECORD))
    monkeypatch.setattr(usage, "COUNT_LIMIT", 20)
    assert view_of_dirs(offline_config(config)).local_ledgers == {1: -1, 2: -1, 3: -1}
    monkeypatch.setattr(usage, "COUNT_LIMIT", 3 * 1024)
    assert view_of_dirs(offline_config(config)).local_ledgers == {1: 5, 2: 6, 3: 10}


def test_each_db_directory_numbers_its_own_logs(open_db, config, tmp_path):
    """DbLedgerStorage over two directories: ledger L in directory L mod 2, each with its own 0.log, current."""
    dirs = (tmp_path / "a", tmp_path / "b")
    fill(open_db(ledger_dirs=dirs, index_dirs=dirs))
    view = view_of_dirs(offline_config(config))
    assert [(log.directory, log.log_id, set(log.ledgers), log.active) for log in view.logs] == [
        (str(dirs[0]), 0, {2}, True),
        (str(dirs[1]), 0, {1, 3}, True),
    ]
    kinds = [(str(dirs[0]), "ledger"), (str(dirs[1]), "ledger"), (str(config.journal_dirs[0]), "journal")]
    assert [(d.path, d.kind) for d in view.dirs] == kinds
    assert view.local_ledgers == {1: 5, 2: 6, 3: 10}
    assert ledger_locations(offline_config(config), 2) == [EntryRange(0, 5, 0)]


def test_an_unreadable_log_is_listed_with_its_size_and_why(open_storage, config):
    """Log 0's magic damaged (CorruptData) and log 1 a directory (an OSError on reading it): both listed with their
    sizes, no ledgers and why; the current log is still told."""
    storage = open_storage(entry_log_size_limit=HEADER_SIZE + PER_LOG * RECORD)
    fill(storage)
    ledger_dir = config.ledger_dirs[0]
    damaged = log_path(ledger_dir, 0)
    size = damaged.stat().st_size
    with open(damaged, "r+b") as f:
        f.write(b"XXXX")
    log_path(ledger_dir, 1).unlink()
    log_path(ledger_dir, 1).mkdir()
    logs = {log.log_id: log for log in view_of_dirs(offline_config(config)).logs}
    assert (logs[0].size, logs[0].ledgers) == (size, {})
    assert logs[0].stalled.startswith("unreadable: ") and "not an entry log" in logs[0].stalled
    assert logs[1].ledgers == {} and logs[1].stalled.startswith("unreadable: ")
    assert logs[2].ledgers and logs[2].stalled == ""
    assert [log_id for log_id, log in logs.items() if log.active] == [2]


def test_a_running_interleaved_storage_locates_a_ledger_without_the_add_path_lock(open_storage, config):
    """Its index file read as the offline reader reads it: the ledger cache's lock, which every add takes, is held
    by another thread meanwhile."""
    storage = open_storage(entry_log_size_limit=HEADER_SIZE + PER_LOG * RECORD)
    fill(storage)
    bookie = SimpleNamespace(storage=storage, config=config)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with storage.cache.lock:
            held.set()
            release.wait(10)

    found: list[list[EntryRange]] = []
    holder = threading.Thread(target=hold)
    reader = threading.Thread(target=lambda: found.append(usage.ledger_locations_of_bookie(bookie, 2)))
    holder.start()
    try:
        assert held.wait(10)
        reader.start()
        reader.join(5)
        assert found == [[EntryRange(0, 4, 0), EntryRange(5, 5, 1)]]
    finally:
        release.set()
        holder.join()
        if reader.is_alive():
            reader.join()


def test_a_running_bookie_has_one_active_log_its_current_one(open_storage, config):
    """A compaction's log being written is listed and not active."""
    storage = open_storage(entry_log_size_limit=HEADER_SIZE + PER_LOG * RECORD)
    fill(storage)
    logger = storage.entry_logger
    dirs = SimpleNamespace(is_full=lambda _: False)
    collectors = GarbageCollectors([GarbageCollector(storage, GcConfig())])
    bookie = SimpleNamespace(
        bookie_id="b",
        config=config,
        storage=storage,
        collectors=collectors,
        ledger_dirs=dirs,
        index_dirs=dirs,
        read_only=False,
    )
    copies = logger.new_log()
    try:
        logs = view_of_bookie(bookie).logs
        assert [log.log_id for log in logs if log.active] == [logger.current_id]
        assert copies.id in [log.log_id for log in logs]
    finally:
        logger.discard_new(copies)

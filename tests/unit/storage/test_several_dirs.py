"""Storage over several journal, ledger and index directories, as BookKeeper spreads them: entry logs over the
ledger directories with ids unique across them, index files over the index directories, a journal per journal
directory with adds routed by ledger id, a lastMark per journal in every ledger directory, and a full directory
taking no new file. Which directory is full comes from a table here; real full disks: tests/integration/server."""

import threading
from pathlib import Path

import pytest

from bookie.storage import journal as jf
from bookie.storage.checkpoint import read_last_mark
from bookie.storage.config import StorageConfig
from bookie.storage.dirs import DiskSpace, DiskThresholds, LedgerDirs
from bookie.storage.entry_log import EntryLogger, list_log_ids
from bookie.storage.index import index_name, index_path
from bookie.storage.interleaved import InterleavedLedgerStorage

from support.storage import KEY, add, crash, payload
from support.storage import stored_entry as entry
from support.waiting import wait_for

GB = 1 << 30


class Disks:
    """Usage per directory (0..1, default 0.1), each directory on a filesystem of its own."""

    def __init__(self):
        self.used: dict[Path, float] = {}

    def __call__(self, d: Path) -> DiskSpace:
        return DiskSpace(int((1 - self.used.get(d, 0.1)) * 100 * GB), 100 * GB, hash(d))


@pytest.fixture
def layout(tmp_path):
    journals = tuple(tmp_path / f"journal{i}" for i in range(2))
    ledgers = tuple(tmp_path / f"ledgers{i}" for i in range(3))
    return journals, ledgers


@pytest.fixture
def open_several(layout):
    opened = []
    disks = Disks()

    def make(index_dirs=None, **changes):
        journals, ledgers = layout
        config = StorageConfig(journals, ledgers, index_dirs or ledgers, flush_interval_ms=3_600_000, **changes)
        thresholds = DiskThresholds(0.9, 0.8, min_usable_for_new_log=GB)
        ledger_dirs = LedgerDirs(ledgers, thresholds, disks)
        index = ledger_dirs if index_dirs is None else LedgerDirs(index_dirs, thresholds, disks)
        storage = InterleavedLedgerStorage(config, ledger_dirs=ledger_dirs, index_dirs=index)
        storage.start()
        opened.append(storage)
        return storage

    make.disks = disks
    yield make
    for storage in opened:
        for journal in storage.journals:
            journal.stop()


def fence(storage, ledger_id):
    done = threading.Event()
    storage.fence(ledger_id, KEY, lambda e: done.set())
    assert done.wait(5)


def test_each_ledger_goes_to_its_journal_and_a_crash_replays_them_all(open_several, layout):
    journals, ledgers = layout
    storage = open_several()
    for ledger_id in range(1, 7):
        assert add(storage, ledger_id, 0, 50) == []
    # journal signSafeMod(ledgerId, 2): odd ledgers in journal1, even ones in journal0
    for index, directory in enumerate(journals):
        (path,) = sorted((directory / "current").glob("*.txn"))
        found = {r.ledger_id for r in jf.scan_journal(path)}
        assert found == {i for i in range(1, 7) if i % 2 == index}
    marks = storage.checkpoint()
    assert len(marks) == 2
    for d in ledgers:  # a lastMark per journal, in every ledger directory
        assert [read_last_mark(d, f"lastMark.{i}") for i in (0, 1)] == marks
        assert read_last_mark(d) is None
    for ledger_id in range(1, 7):
        assert add(storage, ledger_id, 50, 50) == []  # after the marks: only in the journals
    fence(storage, 3)
    crash(storage)
    again = open_several()
    for ledger_id in range(1, 7):
        assert again.entry_ids(ledger_id) == list(range(100))
        assert entry(again, ledger_id, 99).payload == payload(ledger_id, 99)
    assert again.is_fenced(3) and not again.is_fenced(4)


def test_adds_of_ledgers_of_both_journals_in_one_batch_are_acknowledged_once_both_are_durable(open_several):
    from bookie.storage.ledger_storage import AddKey

    from support.storage import records

    storage = open_several()
    done = []
    stored, refused = storage.add_batch(
        {1: AddKey(KEY), 2: AddKey(KEY)}, records(1, 0, 5) + records(2, 0, 5), done.append
    )
    assert (stored, refused) == (10, [])
    wait_for(lambda: done, "the batch to be durable")
    assert done == [None]  # once, after both journals synced
    assert storage.entry_ids(1) == storage.entry_ids(2) == list(range(5))


def test_entry_logs_spread_over_the_ledger_dirs_with_ids_unique_across_them(tmp_path):
    dirs = LedgerDirs([tmp_path / f"l{i}" for i in range(3)])
    logger = EntryLogger(dirs, size_limit=1024 + 28)
    for i in range(60):
        logger.append(b"\0\0\0\x18" + bytes(24), {i: 28})  # 28 bytes a record, one per log
    logger.flush()
    where = {log_id: d for d in dirs.all for log_id in list_log_ids(d)}
    assert sorted(where) == list(range(len(where))) and len(where) >= 3
    assert len(where) == 60 and set(where.values()) == set(dirs.all)  # random dirs: 60 in 2 of 3 is < 1e-9
    for d in dirs.all:  # every dir knows the highest id
        assert (d / "current" / "lastId").read_text() == f"{logger.current_id:x}\n"
    logger.close()
    again = EntryLogger(dirs)
    assert again.current_id == max(where) + 1 and again.log_ids() == sorted([*where, again.current_id])
    assert again.log_path(0) == where[0] / "current" / "0.log"
    again.close()


def test_a_full_ledger_dir_takes_no_new_log_and_its_current_log_rolls_over(open_several):
    storage = open_several(entry_log_size_limit=64 << 10)
    first = storage.entry_logger.current_dir
    add(storage, 1, 0, 10)
    open_several.disks.used[first] = 0.95
    storage.ledger_dirs.check()
    assert storage.ledger_dirs.full == (first,) and storage.ledger_dirs.has_writable
    for start in range(10, 2000, 100):
        add(storage, 1, start, 100)  # ~200 KB: several new logs
    new_logs = [log_id for log_id in storage.entry_logger.log_ids() if log_id > 0]
    assert new_logs and all(storage.entry_logger.log_path(i).parents[1] != first for i in new_logs)
    for ledger_id in range(2, 20):  # new index files: none on the full dir
        add(storage, ledger_id, 0, 1)
    storage.checkpoint()
    assert all(storage.index_dirs.find(index_name(i)).parents[3] != first for i in range(2, 20))
    assert read_last_mark(first, "lastMark.0") < read_last_mark(storage.ledger_dirs.writable[0], "lastMark.0")
    assert [entry(storage, 1, e).payload for e in (0, 9, 10, 1999)] == [payload(1, e) for e in (0, 9, 10, 1999)]


def test_an_index_file_written_on_a_full_dir_moves_to_a_writable_one(open_several, tmp_path):
    index_dirs = (tmp_path / "index0", tmp_path / "index1")
    storage = open_several(index_dirs=index_dirs)
    for ledger_id in range(1, 9):
        add(storage, ledger_id, 0, 10)
    storage.checkpoint()
    on_first = [i for i in range(1, 9) if index_path(index_dirs[0], i).exists()]
    assert on_first, "8 new ledgers, none in the first of two index dirs"
    open_several.disks.used[index_dirs[0]] = 0.95
    storage.index_dirs.check()
    for ledger_id in on_first:
        add(storage, ledger_id, 10, 10)
    storage.checkpoint()
    for ledger_id in on_first:
        assert not index_path(index_dirs[0], ledger_id).exists() and index_path(index_dirs[1], ledger_id).exists()
        assert storage.entry_ids(ledger_id) == list(range(20))
    crash(storage)
    again = open_several(index_dirs=index_dirs)
    assert {i: again.entry_ids(i) for i in range(1, 9)} == {
        i: list(range(20 if i in on_first else 10)) for i in range(1, 9)
    }


def test_a_move_cut_by_a_crash_is_finished_or_undone_at_start(tmp_path):
    from bookie.storage.index import recover_relocations

    dirs = [tmp_path / "a", tmp_path / "b"]
    done, undone = index_path(dirs[0], 5), index_path(dirs[0], 6)
    for path in (done, undone):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.with_name(path.name + ".rloc").write_bytes(b"copy")
    index_path(dirs[1], 6).parent.mkdir(parents=True, exist_ok=True)
    index_path(dirs[1], 6).write_bytes(b"old")  # the move had not removed the old file yet
    recover_relocations(dirs)
    assert done.read_bytes() == b"copy" and not undone.with_name("6.idx.rloc").exists()
    assert index_path(dirs[1], 6).read_bytes() == b"old" and not undone.exists()

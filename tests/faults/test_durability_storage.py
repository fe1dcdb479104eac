"""Ledger storage in-process on a disk that loses power (tests/faults/lossyfs): the steps up to a crash point are
done by hand, then the power is cut and the storage opened again from what the disk kept. Each test failed before
the fix it names, at the crash point given."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from faults.lossyfs.mount import LossyMount, fuse_missing

from bookie.storage.config import StorageConfig
from bookie.storage.db import offline
from bookie.storage.db.storage import DbLedgerStorage
from bookie.storage.dirs import DiskSpace, DiskThresholds, LedgerDirs
from bookie.storage.entry_log import HEADER_SIZE
from bookie.storage.gc import GarbageCollector, GcConfig, Throttle
from bookie.storage.index import index_name
from bookie.storage.interleaved import InterleavedLedgerStorage
from bookie.storage.journalled import JournalledStorage

from support.storage import add, crash_db, payload, records
from support.storage import stored_entry as entry

pytestmark = pytest.mark.root
if reason := fuse_missing():
    pytest.skip(f"lossyfs cannot mount here: {reason}", allow_module_level=True)

GB = 1 << 30
RECORD = len(records(1, 0, 1))


class Disks:
    """Which directories are full (the others 10% used), each on a filesystem of its own."""

    def __init__(self, *full: Path):
        self.full = set(full)

    def __call__(self, d: Path) -> DiskSpace:
        return DiskSpace(0 if d in self.full else 90 * GB, 100 * GB, hash(d))


def config_on(root: Path, ledgers: int = 1, indexes: int = 0, **changes) -> StorageConfig:
    ledger_dirs = tuple(root / f"ledgers{i}" for i in range(ledgers))
    index_dirs = tuple(root / f"index{i}" for i in range(indexes)) or ledger_dirs
    return StorageConfig((root / "journal",), ledger_dirs, index_dirs, flush_interval_ms=3_600_000, **changes)


def power_off(storage: JournalledStorage) -> None:
    """Stop the storage's threads without a checkpoint (the cut that follows takes what they did not sync)."""
    storage._stop.set()
    storage._flush_due.set()
    if storage._sync_thread is not None:
        storage._sync_thread.join()
    if isinstance(storage, DbLedgerStorage):
        crash_db(storage)  # RocksDB's files closed before the disk goes
    else:
        for journal in storage.journals:
            journal.stop()


def cut(disk: LossyMount, storage: JournalledStorage) -> None:
    power_off(storage)
    disk.cut()
    disk.mount()


def test_a_new_ledgers_index_file_survives_a_cut_after_its_checkpoint(disk):
    """Crash point: the checkpoint after a ledger's first adds (index file fsynced, lastMark past their journal
    records). The new ``.idx`` name was never fsynced in its directory: the ledger came back missing, its entries
    and master key with it, and nothing left in the journal to replay them from."""
    config = config_on(disk.mountpoint)
    storage = InterleavedLedgerStorage(config)
    storage.start()
    add(storage, 1, 0, 100)
    storage.checkpoint()
    cut(disk, storage)
    again = InterleavedLedgerStorage(config)
    again.start()
    assert again.entry_ids(1) == list(range(100))
    assert entry(again, 1, 99).payload == payload(1, 99)
    again.shutdown()


def test_index_files_closed_for_open_file_limit_are_synced_by_the_checkpoint(disk):
    """Crash point: the checkpoint's lastMark, with more ledgers than ``open_file_limit``. Pages evicted to files
    that were then closed to stay under the limit must still be fsynced by the checkpoint: it opens them again."""
    config = config_on(disk.mountpoint, page_limit=16, open_file_limit=2)
    storage = InterleavedLedgerStorage(config)
    storage.start()
    for first in (0, 5):  # the second time, the headers are clean: most files are written only by evictions
        for ledger_id in range(1, 31):
            add(storage, ledger_id, first, 5)
        storage.checkpoint()
    cut(disk, storage)
    again = InterleavedLedgerStorage(config)
    again.start()
    assert all(again.entry_ids(ledger_id) == list(range(10)) for ledger_id in range(1, 31))
    assert entry(again, 1, 9).payload == payload(1, 9)
    again.shutdown()


def test_entries_compaction_moved_into_a_new_entry_log_survive_a_cut(disk):
    """Crash point: DbLedgerStorage's compaction, after the synced batch that points the locations at the copies
    and before the old log is removed. The copies' new entry log must be durable, name included, by then: a cut
    that took it left the index pointing into nothing (the entries too old for the journal)."""
    config = config_on(disk.mountpoint, entry_log_size_limit=HEADER_SIZE + 10 * RECORD)
    storage = DbLedgerStorage(config)
    storage.start()
    add(storage, 1, 0, 10)
    add(storage, 2, 0, 10)
    storage.checkpoint()  # log 0: ledgers 1 and 2
    add(storage, 3, 0, 1)
    storage.checkpoint()  # log 1, durable with the lastMark written after it
    single = storage.dirs[0]
    gc = GarbageCollector(single, GcConfig(), lambda ids: set(ids) - {2})
    gc.run()  # ledger 2 deleted; log 0 half live
    done = gc._compact(gc.logs[0], Throttle(0, threading.Event()))  # into a new log of the compaction's own
    assert done is not None and done.entries == 10 and done.new_log is not None
    cut(disk, storage)
    again = DbLedgerStorage(config)
    again.start()
    assert [entry(again, 1, e).payload for e in range(10)] == [payload(1, e) for e in range(10)]
    again.shutdown()


def test_an_entry_log_in_a_directory_that_filled_up_survives_a_cut(disk):
    """Crash point: the checkpoint after the current entry log's directory filled up (lastMark written into the
    other, writable, directory only). The log had been created since that directory's last lastMark, so nothing
    had fsynced its name: the cut took it with entries the journal no longer replays."""
    config = config_on(disk.mountpoint, ledgers=2, indexes=1, entry_log_size_limit=HEADER_SIZE + 10 * RECORD)
    first, second = config.ledger_dirs
    disks = Disks(second)
    ledger_dirs = LedgerDirs(config.ledger_dirs, DiskThresholds(0.9, 0.8, min_usable_for_new_log=GB), disks)
    ledger_dirs.check()
    storage = InterleavedLedgerStorage(config, ledger_dirs=ledger_dirs)
    storage.start()  # log 0 in the first directory, and a lastMark
    add(storage, 1, 0, 10)
    add(storage, 1, 10, 5)  # log 1, in the first directory again
    assert storage.entry_logger.directory_of(1) == first
    disks.full = {first}
    ledger_dirs.check()
    storage.checkpoint()  # lastMark into the second directory only
    cut(disk, storage)
    disks.full = set()
    ledger_dirs = LedgerDirs(config.ledger_dirs, DiskThresholds(0.9, 0.8, min_usable_for_new_log=GB), disks)
    again = InterleavedLedgerStorage(config, ledger_dirs=ledger_dirs)
    again.start()
    assert [entry(again, 1, e).payload for e in range(15)] == [payload(1, e) for e in range(15)]
    again.shutdown()


def test_an_index_file_moved_off_a_full_directory_stays_moved_after_a_cut(disk):
    """Crash point: the checkpoint that moved a ledger's index file off its full directory, and the next one. The
    old file's removal was never fsynced in its directory: the cut brought it back, and the start read that stale
    copy (the first directory's) instead of the moved one, without the entries added since the move."""
    config = config_on(disk.mountpoint, indexes=2)
    first, second = config.index_dirs
    disks = Disks(second)
    index_dirs = LedgerDirs(config.index_dirs, DiskThresholds(0.9, 0.8), disks)
    index_dirs.check()
    storage = InterleavedLedgerStorage(config, index_dirs=index_dirs)
    storage.start()
    add(storage, 1, 0, 10)
    storage.checkpoint()  # the index file in the first directory
    assert (first / "current" / index_name(1)).exists()
    disks.full = {first}
    index_dirs.check()
    add(storage, 1, 10, 10)
    storage.checkpoint()  # moved to the second directory, then written there
    assert not (first / "current" / index_name(1)).exists()
    add(storage, 1, 20, 10)
    storage.checkpoint()
    cut(disk, storage)
    again = InterleavedLedgerStorage(config)
    again.start()
    assert again.entry_ids(1) == list(range(30))
    assert entry(again, 1, 29).payload == payload(1, 29)
    again.shutdown()


def test_dbledgerstorage_index_directories_survive_a_cut_after_the_first_checkpoint(disk):
    """Crash point: the first checkpoint of a DbLedgerStorage whose RocksDB databases live in index directories of
    their own (the locations batch synced, lastMark in the ledger directory). RocksDB fsyncs its own folder, not
    the ``current`` holding it: the cut took both databases, and the start opened empty ones (fixed by private_dirs
    fsyncing each directory it makes in its parent)."""
    config = config_on(disk.mountpoint, indexes=1)
    storage = DbLedgerStorage(config)
    storage.start()
    add(storage, 1, 0, 20)
    storage.checkpoint()
    cut(disk, storage)
    again = DbLedgerStorage(config)
    again.start()
    assert [entry(again, 1, e).payload for e in range(20)] == [payload(1, e) for e in range(20)]
    again.shutdown()


def test_a_rebuilt_ledgers_index_stays_in_place_after_a_cut(disk):
    """Crash point: right after ``bkctl bookie rebuild-db-index --ledgers`` (offline). Its two renames (the old
    index aside, the rebuilt one in place) were never fsynced: the cut brought the old index back and left the
    rebuilt one under its temporary name."""
    config = config_on(disk.mountpoint)
    storage = DbLedgerStorage(config)
    storage.start()
    add(storage, 1, 0, 10)
    storage.shutdown()
    assert not offline.ledgers(config.index_dir)[1].fenced
    offline.rebuild_ledgers(list(config.journal_dirs), config.ledger_dir, config.index_dir)
    disk.cut()
    disk.mount()
    assert offline.ledgers(config.index_dir)[1].fenced  # the rebuilt index: every ledger fenced

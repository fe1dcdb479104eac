"""Ledger storage in one process: adds, reads, fencing, LAC, eviction, and crashes at every checkpoint step."""

import itertools
import os
import threading
import time

import pytest

from bookie.codec.entry import parse_entry
from bookie.errors import CorruptData, NoSuchEntry, NoSuchLedger
from bookie.storage import journalled
from bookie.storage.checkpoint import read_last_mark, write_last_mark
from bookie.storage.index import IndexFile, index_path
from bookie.storage.interleaved import InterleavedLedgerStorage

from support.storage import DIGESTER, KEY, add, crash, payload
from support.storage import stored_entry as entry
from support.waiting import wait_for


def test_add_read_last_and_list(open_each_storage):  # and DbLedgerStorage's: the same promise
    storage = open_each_storage()
    assert add(storage, 3, 0, 50) == []
    assert entry(storage, 3, 17).payload == payload(3, 17)
    assert parse_entry(DIGESTER, storage.read_entry(3, -1)).entry_id == 49
    assert storage.lac(3) == 48  # the highest piggy-backed LAC
    assert storage.entry_ids(3) == list(range(50))
    with pytest.raises(NoSuchEntry):
        storage.read_entry(3, 50)
    with pytest.raises(NoSuchLedger):
        storage.read_entry(4, 0)


def test_crash_before_any_checkpoint_replays_everything(open_storage, config):
    storage = open_storage()
    add(storage, 1, 0, 300)
    done = threading.Event()
    storage.fence(1, KEY, lambda e: done.set())
    done.wait(5)
    crash(storage)
    again = open_storage()
    assert again.entry_ids(1) == list(range(300))
    assert entry(again, 1, 299).payload == payload(1, 299)
    assert again.is_fenced(1) and again.lac(1) == 298


@pytest.mark.parametrize("step", ["after entry log flush", "after index flush", "after lastMark"])
def test_crash_at_each_checkpoint_step_loses_nothing(open_storage, config, step):
    storage = open_storage()
    add(storage, 1, 0, 200)
    mark = storage.journals[0].last_log_mark
    add(storage, 1, 200, 100)  # after the mark: only in the journal until the next checkpoint
    storage.entry_logger.flush()
    if step != "after entry log flush":
        storage.cache.flush()
    if step == "after lastMark":
        write_last_mark(config.ledger_dir, mark)
    crash(storage)
    again = open_storage()
    assert again.entry_ids(1) == list(range(300))
    assert all(entry(again, 1, e).payload == payload(1, e) for e in (0, 199, 200, 299))


def test_checkpoint_moves_lastmark_and_cleans_old_journals(open_storage, config):
    storage = open_storage(journal_max_backups=1)
    add(storage, 1, 0, 10)
    (mark,) = storage.checkpoint()
    assert read_last_mark(config.ledger_dir) == mark and mark.offset > 512
    storage.shutdown()
    for _ in range(3):  # each start opens a new journal
        open_storage(journal_max_backups=1).shutdown()
    journals = sorted((config.journal_dir / "current").glob("*.txn"))
    assert len(journals) == 2  # the current one and one backup
    assert entry(open_storage(), 1, 9).payload == payload(1, 9)


def test_small_page_limit_evicts_dirty_pages_to_their_files(open_storage):
    storage = open_storage(page_limit=16)
    for ledger_id in range(1, 41):  # 40 ledgers x 1 page each > 16 pages
        add(storage, ledger_id, 0, 5)
    assert storage.cache.page_count <= 16
    assert all(entry(storage, ledger_id, 4).payload == payload(ledger_id, 4) for ledger_id in range(1, 41))
    evicted = [i for i in range(1, 41) if IndexFile(storage.config.index_dir, i).exists()]
    assert evicted  # pages went to files before any checkpoint


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_index_files_kept_open_stay_under_open_file_limit(open_storage):
    """Every index file stayed open for the bookie's life: a 45-minute soak's bookies went from 35 to 72 descriptors,
    and a bookie with more ledgers than its ulimit would have failed its disks on EMFILE."""
    storage = open_storage(page_limit=16, open_file_limit=4)
    before = open_fds()
    for ledger_id in range(1, 61):  # pages evicted to their files, files opened
        add(storage, ledger_id, 0, 5)
    storage.checkpoint()  # every file written and synced
    assert all(entry(storage, ledger_id, 4).payload == payload(ledger_id, 4) for ledger_id in range(1, 61))
    assert open_fds() - before <= 4 + 2  # and the entry log rolled at most once or twice meanwhile
    assert storage.cache.open_files <= 4
    storage.shutdown()
    again = open_storage(open_file_limit=4)
    assert all(again.entry_ids(ledger_id) == list(range(5)) for ledger_id in range(1, 61))
    assert again.cache.open_files <= 4


def test_a_ledger_deleted_while_a_checkpoint_writes_it_stays_deleted(open_storage, config):
    """GC deletes a ledger while the checkpoint, without the cache's lock, writes that ledger's pages: the
    checkpoint's writes went to a file it opened again, and the deleted ledger came back (a blank-header index)."""
    storage = open_storage()
    add(storage, 7, 0, 5)
    file = storage.cache.ledgers[7].file
    write_page = file.write_page

    def delete_first(page_no, page):
        storage.cache.delete(7)  # as GC would, between the checkpoint's lock and its write
        write_page(page_no, page)

    file.write_page = delete_first
    storage.checkpoint()
    assert not index_path(config.index_dir, 7).exists()
    assert not file.is_open
    assert not storage.ledger_exists(7)


def test_index_entry_pointing_at_another_entry_is_corruption(open_storage, config):
    storage = open_storage()
    add(storage, 9, 0, 3)
    storage.shutdown()
    path = index_path(config.index_dir, 9)
    data = bytearray(path.read_bytes())
    data[1024 + 8 : 1024 + 16] = data[1024 + 16 : 1024 + 24]  # entry 1 now points at entry 2's record
    path.write_bytes(bytes(data))
    again = open_storage()
    with pytest.raises(CorruptData, match="holds ledger 9 entry 2, the index says ledger 9 entry 1"):
        again.read_entry(9, 1)
    assert entry(again, 9, 2).payload == payload(9, 2)


def test_oversized_and_unknown_ledger_records_are_refused(open_storage):
    storage = open_storage(max_entry_size=150)
    [(ledger, entry_id, error)] = add(storage, 2, 0, 1, size=200)
    assert (ledger, entry_id) == (2, 0) and "over the 150-byte limit" in str(error)
    with pytest.raises(NoSuchEntry):
        storage.read_entry(2, 0)


def test_clean_shutdown_needs_no_replay(open_storage):
    storage = open_storage()
    add(storage, 1, 0, 20)
    storage.shutdown()
    again = InterleavedLedgerStorage(storage.config)
    assert again.replay() == 0
    assert again.cache.get(1).last_entry == 19


def test_replay_does_not_trust_index_entries_it_has_not_repointed_yet(open_storage, config):
    """kill -9 in the middle of a checkpoint: the index on disk already points at entries whose bytes were still
    in the entry log's write buffer (lost), while lastMark is older. Replay must repair it, and start."""
    storage = open_storage()
    add(storage, 1, 0, 100)
    storage.checkpoint()  # lastMark after entry 99
    add(storage, 1, 100, 50)  # in the entry log's write buffer only, and in the journal
    storage.cache.flush()  # ... but the index on disk already points at them
    storage.entry_logger._buffer = bytearray()  # the crash loses the write buffer
    crash(storage)
    again = open_storage()
    assert again.lac(1) == 148
    assert all(entry(again, 1, e).payload == payload(1, e) for e in (0, 99, 100, 149))


def test_an_index_entry_whose_add_never_reached_the_journal_is_not_the_last_entry(open_storage, config):
    """kill -9 after a checkpoint flushed an index page holding an add whose journal record was never written:
    the index on disk points past the end of the entry log. Acknowledged entries are all intact; the bookie's
    "last entry" (read -1, used by fencing and READ_LAC) must be the last real one."""
    from bookie.storage.ledger_storage import AddKey

    from support.storage import KEY, records

    storage = open_storage()
    add(storage, 1, 0, 100)
    storage.checkpoint()
    storage.journals[0].stop()  # the crash comes before the journal writes the next add
    storage.add_batch({1: AddKey(KEY)}, records(1, 100, 10), lambda error: None)
    storage.cache.flush()
    storage.entry_logger._buffer = bytearray()  # the write buffer dies with the process
    again = open_storage()
    assert parse_entry(DIGESTER, again.read_entry(1, -1)).entry_id == 99
    assert again.lac(1) == 98


@pytest.mark.parametrize("flush_bytes", [0, 64 * 1024])
def test_flush_entrylog_bytes_writes_back_without_waiting(open_storage, monkeypatch, flush_bytes):
    """flushEntrylogBytes: the sync thread fsyncs the entry log as soon as that many bytes were added, long before
    the checkpoint (an hour) or the periodic writeback (an hour too, here); with 0 nothing extra happens."""
    monkeypatch.setattr(journalled, "WRITEBACK_INTERVAL", 3600.0)
    storage = open_storage(entry_log_flush_bytes=flush_bytes)
    logger = storage.entry_logger
    flushes = logger.flushes
    for first in range(0, 120, 10):  # ~127 KB of records in batches of ~10.6 KB
        add(storage, 1, first, 10, size=1000)
    if flush_bytes:
        wait_for(lambda: logger.flushes > flushes and logger.unflushed_bytes < flush_bytes, "a writeback", 5)
    else:
        time.sleep(0.5)
        assert logger.flushes == flushes and logger.unflushed_bytes > 120_000


def test_checkpoints_keep_their_schedule_while_flush_entrylog_bytes_fire(open_storage, config):
    storage = open_storage(flush_interval_ms=300, entry_log_flush_bytes=1)  # every add wakes the sync thread
    first = read_last_mark(config.ledger_dir)
    entry_ids = itertools.count()
    wait_for(
        lambda: add(storage, 1, next(entry_ids), 1) == [] and read_last_mark(config.ledger_dir) > first,
        "a checkpoint",
        5,
    )

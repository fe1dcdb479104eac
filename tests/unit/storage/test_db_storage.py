"""DbLedgerStorage in one process: adds through the write cache, checkpoints into entry logs and RocksDB, replay
after a crash, read-ahead, a full write cache, deletion and compaction. What it promises alike with the ledger storage
(add, read, LAC, list) is tested over both in test_ledger_storage.py (the ``open_each_storage`` fixture)."""

import dataclasses
import threading

import pytest

from bookie.errors import LedgerFenced, Unauthorized
from bookie.storage.checkpoint import read_last_mark
from bookie.storage.db.kv import MB
from bookie.storage.db.storage import DbConfig, DbLedgerStorage
from bookie.storage.entry_log import list_log_ids, split_location
from bookie.storage.gc import GarbageCollector, GcConfig

from support.storage import KEY, add, crash_db, payload
from support.storage import stored_entry as entry


def test_fence_master_key_and_explicit_lac_survive_a_restart(open_db):
    storage = open_db()
    add(storage, 5, 0, 3)
    [(_, _, error)] = add(storage, 5, 3, 1, key=b"wrong" * 4)
    assert isinstance(error, Unauthorized)
    done = threading.Event()
    storage.write_explicit_lac(5, KEY, 2, b"lac-buffer", lambda e: None)
    storage.fence(5, KEY, lambda e: done.set())
    assert done.wait(5) and storage.is_fenced(5)
    [(_, _, error)] = add(storage, 5, 3, 1)
    assert isinstance(error, LedgerFenced)
    storage.shutdown()
    again = open_db()
    assert again.is_fenced(5) and again.explicit_lac(5) == b"lac-buffer"
    assert again.storage_of(5).ledgers.get(5).masterKey == KEY


def test_a_checkpoint_writes_the_cache_sorted_into_the_entry_log_and_the_index(open_db, config):
    storage = open_db()
    add(storage, 2, 0, 20)
    add(storage, 1, 0, 20)
    add(storage, 2, 20, 20)
    (mark,) = storage.checkpoint()
    assert read_last_mark(config.ledger_dir) == mark
    single = storage.dirs[0]
    assert single.write_cache.count == single.flushing.count == 0
    index = list(single.locations.all())
    assert [(lid, eid) for lid, eid, _ in index] == [(1, e) for e in range(20)] + [(2, e) for e in range(40)]
    positions = [split_location(loc)[1] for _, _, loc in index]
    assert positions == sorted(positions)  # written in key order: a ledger's entries lie together
    assert entry(storage, 2, 39).payload == payload(2, 39)


@pytest.mark.parametrize("checkpointed", [False, True])
def test_a_crash_loses_no_acknowledged_add(open_db, checkpointed):
    storage = open_db()
    add(storage, 1, 0, 200)
    if checkpointed:
        storage.checkpoint()
    add(storage, 1, 200, 100)  # only in the write cache and the journal
    done = threading.Event()
    storage.fence(1, KEY, lambda e: done.set())
    assert done.wait(5)
    crash_db(storage)
    again = open_db()
    assert again.entry_ids(1) == list(range(300))
    assert all(entry(again, 1, e).payload == payload(1, e) for e in (0, 199, 200, 299))
    assert again.is_fenced(1) and again.lac(1) == 298


def test_sequential_reads_are_served_by_read_ahead(open_db):
    storage = open_db(DbConfig(read_ahead_batch_size=10))
    add(storage, 7, 0, 100)
    storage.shutdown()
    again = open_db(DbConfig(read_ahead_batch_size=10))
    single = again.dirs[0]
    for e in range(100):
        assert entry(again, 7, e).payload == payload(7, e)
    assert single.read_cache.misses == 10 and single.read_cache.hits == 90  # one disk read per 11 entries


def test_a_full_write_cache_checkpoints_and_the_adds_go_on(open_db):
    storage = open_db(DbConfig(write_cache_size=2 * 64 * 1024), flush_interval_ms=3_600_000)
    for first in range(0, 3000, 100):
        assert add(storage, 9, first, 100, size=500) == []
    assert list_log_ids(storage.dirs[0].ledger_dir)  # written by the checkpoints the full cache asked for
    assert storage.dirs[0].locations.last_entry(9) > 0
    assert [entry(storage, 9, e).payload for e in (0, 1500, 2999)] == [payload(9, e, 500) for e in (0, 1500, 2999)]


def test_a_deleted_ledger_leaves_the_indexes_at_the_next_checkpoint(open_db):
    storage = open_db()
    add(storage, 4, 0, 10)
    add(storage, 6, 0, 10)
    storage.checkpoint()
    storage.delete_ledger(4)
    assert storage.ledger_ids() == [6]
    storage.checkpoint()
    assert {lid for lid, _, _ in storage.dirs[0].locations.all()} == {6}


def test_compaction_moves_entries_and_updates_their_locations(open_db):
    storage = open_db(entry_log_size_limit=64 * 1024)
    add(storage, 1, 0, 100, size=300)
    add(storage, 2, 0, 100, size=300)
    storage.checkpoint()  # log 0: ledgers 1 and 2
    add(storage, 3, 0, 100, size=300)
    storage.checkpoint()  # log 1 (log 0 is full)
    single = storage.dirs[0]
    assert single.entry_logger.current_id == 1
    before = [single.locations.location(2, e) for e in range(100)]
    storage.delete_ledger(1)
    storage.checkpoint()
    collector = GarbageCollector(single, GcConfig(minor_threshold=0.99, major_threshold=0.99, compaction_rate=0))
    run = collector.run(forced=(True, True))
    assert run.error == "" and run.logs_compacted == 1 and 0 not in list_log_ids(single.ledger_dir)
    after = [single.locations.location(2, e) for e in range(100)]
    assert {split_location(loc)[0] for loc in before} == {0} and 0 not in {split_location(loc)[0] for loc in after}
    assert all(entry(storage, 2, e).payload == payload(2, e, 300) for e in range(100))


def test_three_ledger_directories_one_storage_each_ledgers_by_id(config, tmp_path):
    dirs = tuple(tmp_path / f"d{i}" for i in range(3))
    db = DbConfig(write_cache_size=6 * MB)
    config = dataclasses.replace(config, ledger_dirs=dirs, index_dirs=dirs)
    storage = DbLedgerStorage(config, db)
    storage.start()
    assert [s.write_cache.max_size for s in storage.dirs] == [MB] * 3
    for ledger_id in range(6):
        add(storage, ledger_id, 0, 20)
    storage.shutdown()
    again = DbLedgerStorage(config, db)
    again.start()
    try:
        for rank, single in enumerate(again.dirs):  # ledgerId mod 3, each in its own entry logs and indexes
            assert single.ledger_dir == dirs[rank] and read_last_mark(dirs[rank]) is not None
            assert {lid for lid, _, _ in single.locations.all()} == {rank, rank + 3} == set(single.ledger_ids())
        assert again.ledger_ids() == list(range(6))
        assert all(entry(again, lid, 19).payload == payload(lid, 19) for lid in range(6))
    finally:
        again.shutdown()

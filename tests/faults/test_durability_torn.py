"""Files as a power cut leaves them, built directly: torn tails, torn seals, headers lost, half-created journals.
What a crash leaves must not refuse a start nor fail garbage collection forever; each test failed before its fix."""

from __future__ import annotations

import os
import struct

from bookie.storage.config import StorageConfig
from bookie.storage.entry_log import HEADER_SIZE, EntryLogger, log_path
from bookie.storage.gc import GarbageCollector, GcConfig, log_metadata
from bookie.storage.interleaved import InterleavedLedgerStorage

from support.storage import add, records

RECORD = len(records(1, 0, 1))


def sealed_and_current(directory) -> EntryLogger:
    """Log 0 sealed with 10 entries of ledger 1; log 1, the current one, with 5 of ledger 2, flushed."""
    logger = EntryLogger(directory, size_limit=HEADER_SIZE + 10 * RECORD)
    logger.append(records(1, 0, 10), {1: 10 * RECORD})
    logger.append(records(2, 0, 5), {2: 5 * RECORD})
    logger.flush()
    assert logger.current_id == 1
    return logger


def test_a_torn_tail_of_the_unsealed_log_ends_its_scan(tmp_path):
    """A cut while the current log's last write was reaching the disk: its size field survived, not all of its
    entry. The scan raised CorruptData, so every garbage collection after the restart failed."""
    sealed_and_current(tmp_path).close()
    with open(log_path(tmp_path, 1), "ab") as f:
        f.write(struct.pack(">i", 4000) + records(2, 5, 1, size=4000)[4:512])  # the first sector of 4 KB
    assert log_metadata(log_path(tmp_path, 1), 1).ledgers == {2: 5 * RECORD}


def test_a_torn_seal_is_read_by_scanning(tmp_path):
    """A cut while a log was sealed: the header's patched map offset reached the disk, the map did not. Reading
    the map raised CorruptData (cut short) instead of scanning the log as BookKeeper does."""
    sealed_and_current(tmp_path).close()
    os.truncate(log_path(tmp_path, 0), HEADER_SIZE + 10 * RECORD)  # the map after the entries, lost
    assert log_metadata(log_path(tmp_path, 0), 0).ledgers == {1: 10 * RECORD}


def test_a_log_whose_header_was_lost_is_scanned(tmp_path):
    """A cut that kept a log's entries but not its header (zeros): "not an entry log", for ever. The log is
    scanned as one without a map, up to its ledgers map."""
    sealed_and_current(tmp_path).close()
    for log_id, ledgers in ((0, {1: 10 * RECORD}), (1, {2: 5 * RECORD})):
        with open(log_path(tmp_path, log_id), "r+b") as f:
            f.write(bytes(HEADER_SIZE))
        assert log_metadata(log_path(tmp_path, log_id), log_id).ledgers == ledgers


def test_garbage_collection_goes_on_past_a_log_it_cannot_read(tmp_path):
    """One unreadable log (not an entry log at all) failed every GC run, so no other log was ever reclaimed. As
    BookKeeper's GarbageCollectorThread, that log is left as it is and the others are collected."""
    ledgers = tmp_path / "ledgers"
    config = StorageConfig(
        (tmp_path / "journal",), (ledgers,), (ledgers,), entry_log_size_limit=HEADER_SIZE + 10 * RECORD
    )
    storage = InterleavedLedgerStorage(config)
    storage.start()
    add(storage, 1, 0, 10)  # log 0
    add(storage, 2, 0, 10)  # log 1
    add(storage, 3, 0, 1)  # log 2, the current one
    with open(log_path(ledgers, 0), "r+b") as f:
        f.write(b"JUNK")
    run = GarbageCollector(storage, GcConfig(), lambda ids: set(ids) - {2}).run()
    storage.shutdown()
    assert run.error == "" and run.logs_deleted == 1
    assert not log_path(ledgers, 1).exists() and log_path(ledgers, 0).exists()

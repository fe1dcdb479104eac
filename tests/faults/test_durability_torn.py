"""Files as a power cut leaves them, built directly: torn tails, torn seals, headers lost, half-created journals.
What a crash leaves must not refuse a start nor fail garbage collection forever; each test failed before its fix."""

from __future__ import annotations

import logging
import os
import struct

from bookie.storage import journal as jf
from bookie.storage.checkpoint import write_last_mark
from bookie.storage.config import StorageConfig
from bookie.storage.entry_log import HEADER_SIZE, EntryLogger, log_path
from bookie.storage.gc import GarbageCollector, GcConfig, log_metadata
from bookie.storage.group_commit import LogMark
from bookie.storage.index import index_path
from bookie.storage.interleaved import InterleavedLedgerStorage

from support.storage import add, crash, payload, records
from support.storage import stored_entry as entry

RECORD = len(records(1, 0, 1))


def open_storage(tmp_path, **changes) -> InterleavedLedgerStorage:
    ledgers = tmp_path / "ledgers"
    storage = InterleavedLedgerStorage(StorageConfig((tmp_path / "journal",), (ledgers,), (ledgers,), **changes))
    storage.start()
    return storage


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
    storage = open_storage(tmp_path, entry_log_size_limit=HEADER_SIZE + 10 * RECORD)
    ledgers = storage.config.ledger_dir
    add(storage, 1, 0, 10)  # log 0
    add(storage, 2, 0, 10)  # log 1
    add(storage, 3, 0, 1)  # log 2, the current one
    with open(log_path(ledgers, 0), "r+b") as f:
        f.write(b"JUNK")
    run = GarbageCollector(storage, GcConfig(), lambda ids: set(ids) - {2}).run()
    storage.shutdown()
    assert run.error == "" and run.logs_deleted == 1
    assert not log_path(ledgers, 1).exists() and log_path(ledgers, 0).exists()


def test_a_journal_a_crash_left_without_its_header_replays_nothing(tmp_path, caplog):
    """A cut while a new journal was created, its name durable (journal and ledger directory shared: a lastMark's
    directory fsync), its zeros and header not: every later start was refused ("not a journal file"), even with
    --skip-journal-corruption. As BookKeeper (JournalChannel: no magic, a version 1 journal; a zero length ends it)
    it holds no records."""
    storage = open_storage(tmp_path)
    add(storage, 1, 0, 10)
    crash(storage)
    newest = max(jf.list_journal_ids(storage.config.journal_dir))
    jf.journal_path(storage.config.journal_dir, newest + 1).write_bytes(b"")
    jf.journal_path(storage.config.journal_dir, newest + 2).write_bytes(bytes(4096))
    with caplog.at_level(logging.WARNING):
        again = open_storage(tmp_path)
    assert [entry(again, 1, e).payload for e in range(10)] == [payload(1, e) for e in range(10)]
    again.shutdown()
    assert caplog.text.count("nothing but zeros (a crash while it was created)") == 2


def test_an_index_file_a_crash_left_without_its_header_is_replayed_anew(tmp_path):
    """A cut in the first checkpoint after a ledger's first adds: its ``.idx`` name durable (another new index
    file's directory fsync in the same directory), its header not. Replaying the ledger's master key raised
    CorruptData ("not an index file") and refused every start; the journal holds all of that ledger."""
    storage = open_storage(tmp_path)
    add(storage, 1, 0, 10)
    crash(storage)
    path = index_path(storage.config.index_dir, 1)
    path.parent.mkdir(parents=True)
    path.write_bytes(bytes(4096))  # zeros where its header and first page were to be
    again = open_storage(tmp_path)
    assert [entry(again, 1, e).payload for e in range(10)] == [payload(1, e) for e in range(10)]
    again.shutdown()


def test_a_lastmark_past_what_the_journal_holds_is_reported(tmp_path, caplog):
    """A journal that lost what its lastMark points past (or is gone): the start replayed nothing and said
    nothing."""
    storage = open_storage(tmp_path)
    add(storage, 1, 0, 10)
    (mark,) = storage.checkpoint()
    storage.shutdown()
    write_last_mark(storage.config.ledger_dir, LogMark(mark.journal_id, mark.offset + 64 * 4096))
    with caplog.at_level(logging.WARNING):
        open_storage(tmp_path).shutdown()
    assert "points past what journal" in caplog.text


def test_a_journal_write_torn_inside_an_entry_is_not_replayed(tmp_path, caplog):
    """A cut while a group commit's write reached the disk in part: the sectors up to one inside its last entry.
    That entry was replayed with zeros for the rest of its body and served; the client's digest check failed it
    (found by the power-loss nemesis, F4). Nothing of that write was acknowledged: its fsync never returned."""
    storage = open_storage(tmp_path)
    add(storage, 1, 0, 5)
    add(storage, 1, 5, 3, size=3000)  # one write: three records and its padding
    crash(storage)
    (journal,) = [
        jf.journal_path(storage.config.journal_dir, j) for j in jf.list_journal_ids(storage.config.journal_dir)
    ]
    last = list(jf.scan_journal(journal))[-1]
    assert last.entry_id == 7
    tear = (last.offset + 512) // 512 * 512  # a sector boundary inside the last entry
    with open(journal, "r+b") as f:
        f.seek(tear)
        f.write(bytes(4096))
    with caplog.at_level(logging.WARNING):
        again = open_storage(tmp_path)
    assert again.entry_ids(1) == list(range(5))
    assert [entry(again, 1, e).payload for e in range(5)] == [payload(1, e) for e in range(5)]
    again.shutdown()
    assert "did not reach the disk whole (a crash cut it): its 3 records were never acknowledged" in caplog.text

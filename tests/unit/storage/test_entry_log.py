import struct

import pytest

from bookie.errors import CorruptData
from bookie.storage.entry_log import (
    EntryLogger,
    log_path,
    read_ledgers_map,
    rebuild_ledgers_map,
    scan_log,
    split_location,
)


def record(ledger_id, entry_id, body=b"payload"):
    data = struct.pack(">qq", ledger_id, entry_id) + body
    return struct.pack(">i", len(data)) + data


def test_append_read_from_buffer_and_file(tmp_path):
    logger = EntryLogger(tmp_path)
    offset = logger.append(record(1, 0) + record(2, 0), {1: 27, 2: 27})
    assert offset == 1024
    assert logger.read((logger.current_id << 32) | (offset + 4), 1, 0)[16:] == b"payload"  # from the buffer
    logger.flush()
    assert logger.read((logger.current_id << 32) | (offset + 27 + 4), 2, 0)[:16] == struct.pack(">qq", 2, 0)
    logger.close()


def test_rotation_seals_with_a_ledgers_map(tmp_path):
    logger = EntryLogger(tmp_path, size_limit=1024 + 60)
    logger.append(record(1, 0) + record(2, 0), {1: 27, 2: 27})
    first = logger.current_id
    logger.append(record(1, 1), {1: 27})  # does not fit: a new log
    assert logger.current_id == first + 1
    assert read_ledgers_map(log_path(tmp_path, first)) == {1: 27, 2: 27}
    assert read_ledgers_map(log_path(tmp_path, logger.current_id)) is None  # not sealed yet
    assert (tmp_path / "current" / "lastId").read_text() == f"{logger.current_id:x}\n"
    logger.close()
    assert rebuild_ledgers_map(log_path(tmp_path, first + 1)) == {1: 27}
    assert [e[2:] for e in scan_log(log_path(tmp_path, first))] == [(1, 0), (2, 0)]


def test_bad_size_prefix_is_reported_with_file_and_offset(tmp_path):
    logger = EntryLogger(tmp_path)
    offset = logger.append(record(1, 0), {1: 27})
    logger.flush()
    path = log_path(tmp_path, logger.current_id)
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(struct.pack(">i", 999_999_999))
    with pytest.raises(CorruptData, match=rf"{path}: bad entry size 999999999 at offset {offset}"):
        logger.read((logger.current_id << 32) | (offset + 4), 1, 0)
    logger.close()


def test_another_entry_at_the_location_is_never_served(tmp_path):
    logger = EntryLogger(tmp_path)
    offset = logger.append(record(1, 0) + record(1, 1), {1: 54})
    logger.flush()
    loc = (logger.current_id << 32) | (offset + 27 + 4)
    with pytest.raises(
        CorruptData, match=rf"offset {offset + 27} holds ledger 1 entry 1, the index says ledger 1 entry 0"
    ):
        logger.read(loc, 1, 0)
    assert split_location(loc) == (logger.current_id, offset + 31)
    logger.close()


def test_flush_bytes_signals_once_per_crossing_until_flushed(tmp_path):
    signals = []
    logger = EntryLogger(tmp_path, flush_bytes=100, on_flush_due=lambda: signals.append(logger.unflushed_bytes))
    for entry_id in range(3):
        logger.append(record(1, entry_id), {1: 27})  # 81 bytes
    assert signals == []
    logger.append(record(1, 3), {1: 27})  # 108: crosses
    logger.append(record(1, 4), {1: 27})  # still over, but already signalled
    assert signals == [108]
    logger.flush()
    assert (logger.unflushed_bytes, logger.flushes) == (0, 1)
    for entry_id in range(5, 9):
        logger.append(record(1, entry_id), {1: 27})
    assert signals == [108, 108]
    logger.close()


def test_flush_bytes_zero_never_signals(tmp_path):
    signals = []
    logger = EntryLogger(tmp_path, on_flush_due=lambda: signals.append(1))
    logger.append(record(1, 0) * 1000, {1: 27_000})
    assert signals == [] and logger.unflushed_bytes == 27_000
    logger.close()

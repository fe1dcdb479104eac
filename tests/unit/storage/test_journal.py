import logging
import os
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bookie.errors import CorruptData
from bookie.storage import journal as jf


@given(st.integers(512, 10**7))
def test_padding_realigns_to_512(position):
    pad = jf.padding(position)
    assert (position + len(pad)) % 512 == 0 and len(pad) >= 8
    assert jf.PADDING.unpack_from(pad) == (jf.PADDING_MARKER, len(pad) - 8)


def write_journal(tmp_path, *chunks):
    journal = jf.JournalFile(tmp_path, 1, prealloc_bytes=1 << 20)
    for chunk in chunks:
        journal.append(chunk)
    journal.close()
    return jf.journal_path(tmp_path, 1)


def entry_record(ledger_id, entry_id, body=b"x" * 20):
    data = jf.META.pack(ledger_id, entry_id) + body
    return jf.INT.pack(len(data)) + data


def test_records_round_trip(tmp_path):
    path = write_journal(
        tmp_path,
        jf.master_key_record(7, b"k" * 20) + entry_record(7, 0),
        jf.fence_record(7) + jf.explicit_lac_record(7, b"lac-buffer") + entry_record(7, 1),
    )
    assert path.name == "1.txn" and path.read_bytes()[:8] == b"BKLG\x00\x00\x00\x06"
    records = list(jf.scan_journal(path))
    assert [(r.kind, r.ledger_id, r.entry_id) for r in records] == [
        ("master_key", 7, -1),
        ("entry", 7, 0),
        ("fence", 7, -1),
        ("explicit_lac", 7, -1),
        ("entry", 7, 1),
    ]
    assert records[0].data == b"k" * 20 and records[3].data == b"lac-buffer"
    assert records[0].offset == 512


def test_torn_tail_replays_up_to_the_last_whole_write(tmp_path):
    path = write_journal(tmp_path, entry_record(1, 0), entry_record(1, 1))  # two writes, each padded
    data = path.read_bytes()
    second = 1024
    # the crash cut the file inside the second record's body, or inside its length field
    for cut in (second + 4 + 10, second + 2):
        path.write_bytes(data[:cut])
        assert [r.entry_id for r in jf.scan_journal(path)] == [0]
    # the second write never reached the disk: preallocated zeros where its length would be
    path.write_bytes(data[:second] + bytes(len(data) - second))
    assert [r.entry_id for r in jf.scan_journal(path)] == [0]


@pytest.mark.parametrize("boundary", [512, 4096])
def test_a_write_torn_inside_an_entry_is_not_replayed_at_all(tmp_path, boundary):
    """Found by the power-loss nemesis (F4): the tail of a group commit torn at a sector or page boundary left its
    last record's length and head on disk and zeros for the rest of its entry; replayed, the bookie served that
    entry, which failed the client's digest check (the reader went to another replica). The write's other records
    were never acknowledged either: its fsync did not return."""
    first = entry_record(1, 0, b"a" * 100)
    torn = entry_record(1, 1, b"b" * 200) + entry_record(1, 2, b"c" * (boundary + 300))
    path = write_journal(tmp_path, first, torn)
    data = path.read_bytes()
    start = 1024  # the torn write's
    tear = start + boundary  # inside its second record's body
    assert start + len(entry_record(1, 1, b"b" * 200)) < tear < start + len(torn)
    path.write_bytes(data[:tear] + bytes(len(data) - tear))  # what the disk kept: the write up to the boundary
    scan = jf.JournalScan(path)
    assert [r.entry_id for r in scan] == [0]
    assert scan.unfinished == (start, 2) and scan.torn_tail is None


def test_a_write_ending_on_a_boundary_without_padding_is_whole(tmp_path):
    """BookKeeper pads a write only when it does not end on a 512-byte boundary: such a journal's last write has no
    padding, and is replayed."""
    path = write_journal(tmp_path, entry_record(1, 0))
    body = b"z" * (512 - 4 - jf.META.size)
    with open(path, "r+b") as f:
        f.seek(1024)
        f.write(entry_record(1, 1, body))  # 512 bytes, as BookKeeper writes them: no padding
    scan = jf.JournalScan(path)
    assert [r.entry_id for r in scan] == [0, 1]
    assert scan.unfinished is None


def test_corrupt_record_names_file_and_offset(tmp_path):
    path = write_journal(tmp_path, entry_record(1, 0) + entry_record(1, 1))
    data = bytearray(path.read_bytes())
    second = 512 + len(entry_record(1, 0))
    data[second : second + 4] = jf.INT.pack(-7)
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptData, match=rf"{path}: corrupt journal record at offset {second} \(length -7\)"):
        list(jf.scan_journal(path))


def test_not_a_journal(tmp_path):
    path = tmp_path / "x.txn"
    path.write_bytes(b"nope" + bytes(600))
    with pytest.raises(CorruptData, match="not a journal file"):
        list(jf.scan_journal(path))


def test_writes_land_on_zeros_already_on_disk_so_a_sync_has_no_metadata_to_write(tmp_path):
    """A group commit's fdatasync writes the group and nothing else when the blocks under it were allocated and
    synced before: an append neither grows the file nor gives it blocks (docs/bookie.md, "Sharing a machine")."""
    journal = jf.JournalFile(tmp_path, 2, prealloc_bytes=4 << 20)
    path = jf.journal_path(tmp_path, 2)
    assert (path.stat().st_size, journal.allocated) == (4 << 20, 4 << 20)  # zeroed and synced when created
    entry = 0
    while journal.position < (2 << 20) - 200_000:  # up to half of the zeros used
        before = path.stat()
        journal.append(entry_record(1, entry, bytes(100_000)))
        entry += 1
        after = path.stat()
        assert (after.st_size, after.st_blocks) == (before.st_size, before.st_blocks)
    for _ in range(30):  # the zeros run low: the next half is zeroed and synced aside, then handed over
        journal.append(entry_record(1, entry, bytes(100_000)))
        entry += 1
    # past the first 4 MB on the thread's 2 MB halves (zeroing itself, the journal would have stopped at 5 MB)
    assert journal.position > 4 << 20 and journal.allocated >= 6 << 20
    journal.close()
    assert path.stat().st_size >= journal.allocated
    assert [r.entry_id for r in jf.scan_journal(path)] == list(range(entry))


def test_the_zeroing_thread_writes_through_an_open_file_of_its_own(tmp_path):
    """Linux reports a failed writeback once to each open file: had the thread's fdatasync shared the journal's,
    it could take the error of the journal's own pages, and the journal's fsync then return success for a group
    that never reached the disk. An open file of its own has an offset of its own (a dup would share it)."""
    journal = jf.JournalFile(tmp_path, 1, prealloc_bytes=1 << 20)
    os.lseek(journal.fd, 4096, os.SEEK_SET)
    assert os.lseek(journal._ahead_fd, 0, os.SEEK_CUR) == 0
    assert os.fstat(journal._ahead_fd).st_ino == os.fstat(journal.fd).st_ino
    journal.close()


def test_a_write_larger_than_the_zeroed_space_still_fits(tmp_path):
    journal = jf.JournalFile(tmp_path, 1, prealloc_bytes=1 << 20)
    journal.append(entry_record(1, 0, bytes(3 << 20)))
    journal.append(entry_record(1, 1))
    journal.close()
    path = jf.journal_path(tmp_path, 1)
    assert path.stat().st_size >= journal.position
    assert [r.entry_id for r in jf.scan_journal(path)] == [0, 1]


def test_when_zeroing_ahead_fails_the_journal_zeroes_what_it_writes_on(tmp_path, monkeypatch, caplog):
    """ENOSPC or EIO on the zeros ahead: the journal goes on over what is zeroed, then zeroes as it writes, where a
    failing disk fails the group commit (and the bookie turns read-only) as before."""

    def full(fd, offset, size):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(jf, "write_back", full)
    journal = jf.JournalFile(tmp_path, 1, prealloc_bytes=1 << 20)
    with caplog.at_level(logging.WARNING, "bookie.storage.journal"):  # whatever level earlier tests left on root
        for entry in range(40):
            journal.append(entry_record(1, entry, bytes(100_000)))
        journal.close()
    path = jf.journal_path(tmp_path, 1)
    assert path.stat().st_size >= journal.position > 3 << 20  # well past the 1 MB zeroed when created
    assert [r.entry_id for r in jf.scan_journal(path)] == list(range(40))
    failed = "zeroing ahead of the journal failed ([Errno 28] No space left on device): the journal's writes zero it"
    assert [r.message for r in caplog.records].count(f"{path}: {failed}") == 1


def three_flushes(tmp_path):
    """A journal of three group commits (each ends with its padding on a 512-byte boundary); their offsets."""
    flushes = [entry_record(1, 0) + entry_record(1, 1), entry_record(1, 2), entry_record(1, 3) + entry_record(1, 4)]
    journal = jf.JournalFile(tmp_path, 1, prealloc_bytes=1 << 20)
    starts = []
    for chunk in flushes:
        starts.append(journal.position)
        journal.append(chunk)
    journal.close()
    return jf.journal_path(tmp_path, 1), starts


def damage(path, offset, data):
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


def test_clean_end_is_not_a_torn_tail(tmp_path):
    path, _ = three_flushes(tmp_path)
    scan = jf.JournalScan(path)
    assert [r.entry_id for r in scan] == [0, 1, 2, 3, 4]
    assert scan.torn_tail is None and scan.skipped == []


def test_hole_inside_the_last_write_is_a_torn_tail(tmp_path):
    # a power loss: the last write reached the disk only in part, a hole of zeros with some of its bytes after it
    path, starts = three_flushes(tmp_path)
    damage(path, starts[2], bytes(len(entry_record(1, 3))))
    scan = jf.JournalScan(path)
    assert [r.entry_id for r in scan] == [0, 1, 2]
    assert scan.torn_tail == starts[2] and scan.skipped == []


@pytest.mark.parametrize(
    "bad, reason",
    [
        (bytes(4), "length 0"),  # a zeroed sector
        (jf.INT.pack(1 << 30), f"length {1 << 30} runs past the end of the file"),
        (jf.INT.pack(-7), "length -7"),
        (jf.INT.pack(10), "10 bytes, too short"),
    ],
)
def test_bad_record_followed_by_valid_data_refuses_replay(tmp_path, bad, reason):
    path, starts = three_flushes(tmp_path)
    damage(path, starts[1], bad)
    with pytest.raises(jf.JournalCorruption) as caught:
        list(jf.scan_journal(path))
    assert str(caught.value).startswith(
        f"{path}: corrupt journal record at offset {starts[1]} ({reason}), and valid records follow at offset "
        f"{starts[2]}: replay would drop them; to start anyway, skipping the damaged bytes, use "
        "--skip-journal-corruption"
    )


def test_corruption_inside_a_write_resumes_at_the_next_write(tmp_path):
    path, starts = three_flushes(tmp_path)
    damage(path, starts[0], bytes(4))  # the first record of the first write: its second record is lost with it
    scan = jf.JournalScan(path, skip_corruption=True)
    assert [r.entry_id for r in scan] == [2, 3, 4]
    assert scan.skipped == [jf.Skipped(starts[0], starts[1], "length 0")]
    assert scan.torn_tail is None


def test_skip_over_corruption_at_the_tail(tmp_path):
    path, starts = three_flushes(tmp_path)
    damage(path, starts[2], jf.INT.pack(-7))
    scan = jf.JournalScan(path, skip_corruption=True)
    assert [r.entry_id for r in scan] == [0, 1, 2]
    assert scan.skipped == [jf.Skipped(starts[2], path.stat().st_size, "length -7")]


def test_a_run_of_records_without_its_padding_is_not_valid_data(tmp_path):
    # bytes after the bad record that parse as records but do not end a write on a 512-byte boundary are what a
    # torn last write leaves: not a reason to refuse the start
    path, starts = three_flushes(tmp_path)
    tail = entry_record(1, 5) + entry_record(1, 6)
    damage(path, starts[2] + 1024, tail)  # aligned, records, but no padding after them
    damage(path, starts[2], bytes(512))
    scan = jf.JournalScan(path)
    assert [r.entry_id for r in scan] == [0, 1, 2]
    assert scan.torn_tail == starts[2]


@settings(max_examples=200, deadline=None)
@given(st.integers(512, 2048), st.binary(min_size=1, max_size=600))
def test_any_damage_is_either_replayed_around_or_refused_by_name(at, garbage):
    with tempfile.TemporaryDirectory() as directory:
        path, _ = three_flushes(Path(directory))
        damage(path, at, garbage)
        try:
            list(jf.scan_journal(path))
        except jf.JournalCorruption as exc:
            assert str(exc).startswith(f"{path}: corrupt journal record at offset ")
        scan = jf.JournalScan(path, skip_corruption=True)
        records = list(scan)  # never raises with the override
        assert all(r.kind in ("entry", "master_key", "fence", "explicit_lac") for r in records)
        assert all(s.offset < s.resume for s in scan.skipped)


def test_valid_data_is_found_after_a_megabyte_of_garbage_quickly(tmp_path):
    journal = jf.JournalFile(tmp_path, 1, prealloc_bytes=4 << 20)
    journal.append(entry_record(1, 0))
    damaged = journal.position
    journal.append(entry_record(1, 1) * 26000)  # ~1 MB in one write
    last = journal.position
    journal.append(entry_record(1, 2))
    journal.close()
    path = jf.journal_path(tmp_path, 1)
    damage(path, damaged, os.urandom(last - damaged))
    started = time.monotonic()
    scan = jf.JournalScan(path, skip_corruption=True)
    assert [r.entry_id for r in scan if r.entry_id == 2] == [2]
    assert scan.skipped[-1].resume == last and time.monotonic() - started < 10

"""Journal files (BookKeeper: bookie/Journal.java, JournalChannel.java): ``<journalDir>/current/<hex id>.txn``.

Byte layout::

    offset 0     512-byte header: b"BKLG" | int32 format version (6) | zeros
    offset 512   records, each: int32 length | that many bytes
                   - an entry record is an add record (bookie/codec/records.py): the framed entry (ledgerId,
                     entryId >= 0, lastAddConfirmed, ...)
                   - metadata records start int64 ledgerId | int64 marker:
                       MASTER_KEY   -0x1000  then int32 keyLen | key
                       FENCE        -0x2000  (nothing more)
                       EXPLICIT_LAC -0x8000  then int32 len | LAC buffer
                 padding after each flush, to a 512-byte boundary:
                   int32 0xFFFFFF00 | int32 padLen | padLen zero bytes
    ...          zeros (preallocated: journalPreAllocSizeMB, 16 MB, kept ahead of the writes)

Scanning stops at a zero length (preallocated space) or a record cut short (a torn tail); a bad record with valid
data after it is corruption, reported with the file and offset (see JournalScan).
"""

from __future__ import annotations

import logging
import os
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Final, Literal, NamedTuple

from bookie.codec.records import MIN_ADD
from bookie.errors import CorruptData
from bookie.files import fsync_dir, open_private, private_dirs, pwrite_all, write_back
from bookie.storage.dir_files import hex_ids

log = logging.getLogger(__name__)

MAGIC = b"BKLG"
VERSION = 6
HEADER_SIZE = 512
ALIGN = 512
PADDING_MARKER = -256  # 0xFFFFFF00 as an int32
INT = struct.Struct(">i")
PADDING = struct.Struct(">ii")
META = struct.Struct(">qq")
HEADER = struct.Struct(">4si")
assert HEADER.size == 8 and META.size == 16

MASTER_KEY, FENCE, EXPLICIT_LAC = -0x1000, -0x2000, -0x8000
ZEROS = bytes(1 << 20)
ZEROS_VIEW = memoryview(ZEROS)
# Zeros ahead of the journal go back this many at a time, a pause between, so that they leave the disk to the
# group commits (8 MB in one go: our client's p99 at 10k adds/s 5.3-12.4 ms over 5 runs, 3.9-6.7 paced so).
ZERO_PIECE = 128 << 10
ZERO_PAUSE = 0.001


def journal_path(directory: Path, journal_id: int) -> Path:
    return Path(directory) / "current" / f"{journal_id:x}.txn"


def list_journal_ids(directory: Path) -> list[int]:
    return hex_ids(directory, ".txn")


def holds_position(directory: Path, journal_id: int, offset: int, window: int = 8192) -> bool:
    """Whether the journal seems to still hold what comes before ``offset`` (a lastMark: the end of a flush, or the
    header's): something other than zeros in the ``window`` bytes before it. Each flush ends with a padding record
    whose marker is not zero, and a padding is shorter than the alignment (512 bytes here, at most 4096 in
    BookKeeper); what a cut lost reads as the zeros the file was preallocated with."""
    start = max(0, offset - window)
    try:
        with open(journal_path(directory, journal_id), "rb") as f:
            before = os.pread(f.fileno(), offset - start, start)
    except FileNotFoundError:
        return False
    return len(before) == offset - start and any(before)


def padding(position: int) -> bytes:
    """The padding record that re-aligns ``position`` to a 512-byte boundary."""
    remaining = ALIGN - position % ALIGN
    pad = ALIGN - (PADDING.size - remaining) if remaining < PADDING.size else remaining - PADDING.size
    return PADDING.pack(PADDING_MARKER, pad) + bytes(pad)


def master_key_record(ledger_id: int, key: bytes) -> bytes:
    body = META.pack(ledger_id, MASTER_KEY) + INT.pack(len(key)) + key
    return INT.pack(len(body)) + body


def fence_record(ledger_id: int) -> bytes:
    return INT.pack(META.size) + META.pack(ledger_id, FENCE)


def explicit_lac_record(ledger_id: int, lac_buffer: bytes) -> bytes:
    body = META.pack(ledger_id, EXPLICIT_LAC) + INT.pack(len(lac_buffer)) + lac_buffer
    return INT.pack(len(body)) + body


class Record(NamedTuple):
    offset: int  # of the record's length field
    kind: str  # "entry", "master_key", "fence", "explicit_lac"
    ledger_id: int
    entry_id: int  # entries only; -1 otherwise
    data: bytes  # the framed entry, the master key, the LAC buffer, or b""


class JournalCorruption(CorruptData):
    """A bad record in a journal: replaying on would drop what follows, stopping there would drop it silently."""


class Skipped(NamedTuple):
    offset: int  # of the bad record
    resume: int  # where valid data resumes (the file's size when nothing valid follows)
    reason: str


# What _read finds at a position, told by the first item: where the records stop (_END: a torn write may end
# there; _BAD: no crash writes that), a padding record, or a record.
_END: Final = 0
_BAD: Final = 1
_PADDING: Final = 2
_RECORD: Final = 3
_Found = (
    tuple[Literal[0, 1], str, None]  # _END or _BAD, why the records stop
    | tuple[Literal[2], int, int]  # _PADDING, its length, where the next record starts
    | tuple[Literal[3], Record, int]  # _RECORD, the record, where the next one starts
)


class JournalScan:
    """The records of one journal file from ``start``, and what ended them.

    Where the records stop, at offset P, the scan tells a torn tail from corruption:

    - A torn tail is normal: the crash cut the last write. The journal file was zeroed before any write (it is
      created new, preallocated with zeros), so a write that did not fully reach the disk shows as a record cut
      short, or as zeros where a record should be (and perhaps pages of that write after them). The scan ends
      there; ``torn_tail`` is P when non-zero bytes after P were ignored (None when all is zeros: a clean end).
    - Corruption is a bad record followed by valid data. Every group commit ends with a padding record that
      re-aligns the file to 512 bytes, so every later write starts at a 512-byte boundary. Valid data after P is
      *a whole flush*: from a 512-byte boundary after P, records that parse (positive lengths inside the file,
      known markers, entries of at least 24 bytes) up to a padding record whose zero bytes end exactly on a
      512-byte boundary. Random or zeroed bytes hit that padding marker by chance too rarely to matter. A
      negative length that is not the padding marker, or a record that does not parse, is corruption even with
      nothing valid after it: no crash writes those.
    - An unfinished write is not replayed: a write ends with its padding (ours always; BookKeeper's when it does not
      end on a 512-byte boundary already), and is acknowledged only once all of it is synced. Records that end
      short of a boundary with no padding after them, where the records stop, are what remains of a write the
      crash cut: ``unfinished`` gives their offset and count. One of them may be cut inside its body, zeros where
      the rest of its entry should be: replayed, it would be served as an entry that fails its digest.
    - Limit: a power loss can also reach the disk out of order within the *last* write, leaving a hole with a
      whole record run and its final padding after it; that looks like corruption and refuses the start, which
      the operator may then override (the skipped records were never acknowledged: the fsync did not return).

    Corruption raises :class:`JournalCorruption` naming the file and offset, unless ``skip_corruption``: then the
    damaged bytes up to the next whole flush are skipped and listed in ``skipped`` (what they held cannot be
    framed: each skip counts as the one bad record found at its offset).
    """

    def __init__(self, path: Path, start: int = HEADER_SIZE, skip_corruption: bool = False):
        self.path = Path(path)
        self.start = start
        self.skip_corruption = skip_corruption
        self.torn_tail: int | None = None
        self.unfinished: tuple[int, int] | None = None  # (offset, records) of the write a crash cut: not replayed
        self.skipped: list[Skipped] = []
        self.blank = False  # nothing but zeros: see __iter__

    def __iter__(self) -> Iterator[Record]:
        with open(self.path, "rb") as f:
            head = f.read(HEADER_SIZE)
            size = os.fstat(f.fileno()).st_size
            if not head.strip(b"\0") and _next_nonzero(f, len(head), size) is None:
                # A crash while the journal was created (its name made durable by another file's directory fsync,
                # its zeros and header not): no record was ever written to it. BookKeeper reads a journal without
                # its magic as a version 1 one and finds a zero length at once: no records.
                self.blank = True
                return
            magic, version = HEADER.unpack_from(head.ljust(HEADER.size, b"\0"))
            if magic != MAGIC or version != VERSION:
                raise CorruptData(f"{self.path}: not a journal file (magic {magic!r}, version {version})")
            position = max(self.start, HEADER_SIZE)
            write: list[Record] = []  # the records since the last padding: their write is done when one follows
            while True:
                found = _read(f, position, size)
                if found[0] == _RECORD:
                    write.append(found[1])
                    position = found[2]
                elif found[0] == _PADDING:
                    yield from write
                    write = []
                    position = found[2]
                else:
                    if write and found[0] == _END and position % ALIGN:
                        self.unfinished = (write[0].offset, len(write))
                    else:
                        yield from write
                    write = []
                    resume = self._after_stop(f, found[0], found[1], position, size)
                    if resume is None:
                        return
                    position = resume

    def _after_stop(self, f: BinaryIO, kind: int, reason: str, position: int, size: int) -> int | None:
        """Where to go on after the records stopped at ``position``: None to end the scan."""
        dirty = _next_nonzero(f, position, size)
        if dirty is None:
            return None  # the end of the data: preallocated zeros
        resume = _next_flush(f, position, dirty, size)
        if resume is None and kind == _END:
            self.torn_tail = position
            return None
        where = f"{self.path}: corrupt journal record at offset {position} ({reason})"
        if not self.skip_corruption:
            follows = (
                f"and valid records follow at offset {resume}: replay would drop them"
                if resume is not None
                else "which no crash leaves behind"
            )
            raise JournalCorruption(
                f"{where}, {follows}; to start anyway, skipping the damaged bytes, use "
                "--skip-journal-corruption (skipReplayJournalInvalidRecord=true)"
            )
        self.skipped.append(Skipped(position, size if resume is None else resume, reason))
        return resume


def scan_journal(path: Path, start: int = HEADER_SIZE, skip_corruption: bool = False) -> Iterator[Record]:
    """The records of one journal file from ``start`` (see :class:`JournalScan`)."""
    return iter(JournalScan(path, start, skip_corruption))


def _read(f: BinaryIO, position: int, size: int) -> _Found:
    """What is at ``position``: (_RECORD, record, next), (_PADDING, length, next), (_END or _BAD, reason, None)."""
    f.seek(position)
    raw = f.read(4)
    if len(raw) < 4:
        return _END, "cut short", None
    (length,) = INT.unpack(raw)
    if length == 0:
        return _END, "length 0", None
    if length == PADDING_MARKER:
        raw = f.read(4)
        if len(raw) < 4:
            return _END, "padding cut short", None
        pad = INT.unpack(raw)[0]
        if pad < 0 or position + PADDING.size + pad > size:
            return _BAD, f"padding length {pad}", None
        return _PADDING, pad, position + PADDING.size + pad
    if length < 0:
        return _BAD, f"length {length}", None
    if position + 4 + length > size:
        return _END, f"length {length} runs past the end of the file", None
    data = f.read(length)
    record = _record(position, data)
    if isinstance(record, str):
        return _BAD, record, None
    return _RECORD, record, position + 4 + length


def _record(offset: int, data: bytes) -> Record | str:
    """The record, or why it is not one."""
    if len(data) < META.size:
        return f"{len(data)} bytes, too short"
    ledger_id, marker = META.unpack_from(data)
    if ledger_id < 0:
        return f"ledger id {ledger_id}"
    if marker >= 0:
        if len(data) < MIN_ADD:  # replay reads its ids and LAC
            return f"entry of {len(data)} bytes, too short"
        return Record(offset, "entry", ledger_id, marker, data)
    if marker == FENCE:
        return Record(offset, "fence", ledger_id, -1, b"")
    if marker in (MASTER_KEY, EXPLICIT_LAC) and len(data) >= META.size + 4:
        size = INT.unpack_from(data, META.size)[0]
        payload = data[META.size + 4 : META.size + 4 + size]
        if size >= 0 and len(payload) == size:
            return Record(offset, "master_key" if marker == MASTER_KEY else "explicit_lac", ledger_id, -1, payload)
    return f"marker {marker}"


def _next_nonzero(f: BinaryIO, position: int, size: int) -> int | None:
    """The offset of the first non-zero byte at or after ``position``, None if there is none."""
    f.seek(position)
    while position < size:
        chunk = f.read(min(len(ZEROS), size - position))
        if not chunk:
            return None
        if chunk != ZEROS[: len(chunk)]:
            return position + len(chunk) - len(chunk.lstrip(b"\0"))
        position += len(chunk)
    return None


def _next_flush(f: BinaryIO, stop: int, dirty: int, size: int) -> int | None:
    """The first 512-byte boundary after ``stop`` where a whole flush starts (see :class:`JournalScan`); zeros
    are skipped without parsing, and a record offset already seen to lead nowhere is not followed twice."""
    dead: set[int] = set()
    candidate = max((stop // ALIGN + 1) * ALIGN, dirty // ALIGN * ALIGN)
    while candidate < size:
        if _whole_flush_at(f, candidate, size, dead):
            return candidate
        nonzero = _next_nonzero(f, candidate + ALIGN, size)
        if nonzero is None:
            return None
        candidate = nonzero // ALIGN * ALIGN
    return None


def _whole_flush_at(f: BinaryIO, position: int, size: int, dead: set[int]) -> bool:
    """Whether records from ``position`` run to a padding that ends on a 512-byte boundary; ``dead`` collects
    the offsets whose run is known to fail (a padding record is never one: run to from a record, it may end a
    flush)."""
    visited: list[int] = []
    records = 0
    while position not in dead:
        found = _read(f, position, size)
        if found[0] == _PADDING:
            _, pad, after = found
            if records and after % ALIGN == 0 and _next_nonzero(f, after - pad, after) is None:
                return True
            break
        visited.append(position)
        if found[0] != _RECORD:
            break
        records += 1
        position = found[2]
    dead.update(visited)
    return False


class JournalFile:
    """One journal being written, over zeros that reached the disk before the writes do.

    ``prealloc_bytes`` of zeros are written and fsynced when the file is created; once less than half of them is
    left ahead of the writes, a thread zeroes the next half, fdatasyncs it and hands it over. A group commit thus
    overwrites blocks already allocated and durable, and its fdatasync writes the group and nothing else, where a
    file that grows with each write has each fdatasync write its inode and block bitmap too, blocks the bookies of
    one disk share (docs/bookie.md, "Sharing a machine"). Until the thread's fdatasync the inode is dirty again, so
    that window is kept short: 8 MB in about 0.1 s. The thread writes through a descriptor of its own, so that a
    write error it meets is still reported to the journal's next fsync (Linux reports one to each open file once).
    A write that outruns the zeroed space hurries the thread, waits for it, then zeroes the rest itself.
    """

    def __init__(self, directory: Path, journal_id: int, prealloc_bytes: int):
        self.id = journal_id
        self.path = journal_path(directory, journal_id)
        private_dirs(self.path.parent)
        self.prealloc_bytes = max(prealloc_bytes, len(ZEROS))
        self.fd = open_private(self.path, os.O_RDWR | os.O_EXCL)
        self.allocated = 0  # zeroed up to here, and durable unless this journal's writes zeroed it themselves
        while self.allocated < self.prealloc_bytes:
            self._zero(self.fd, self.allocated, len(ZEROS))
            self.allocated += len(ZEROS)
        pwrite_all(self.fd, HEADER.pack(MAGIC, VERSION), 0)
        self.position = HEADER_SIZE
        os.fsync(self.fd)
        fsync_dir(self.path.parent)
        self._ahead_fd = os.open(self.path, os.O_WRONLY | os.O_CLOEXEC)
        self._ahead: threading.Thread | None = None
        self._ahead_failed = False
        self._hurry = threading.Event()  # the journal waits for the thread: no pauses
        self._closing = threading.Event()  # stop between pieces

    @staticmethod
    def _zero(fd: int, offset: int, size: int) -> None:
        pwrite_all(fd, ZEROS_VIEW[:size], offset)

    def append(self, data: bytes) -> int:
        """Write ``data`` and the padding after it at the current position; return the new position. No fsync."""
        block = data + padding(self.position + len(data))
        end = self.position + len(block)
        if self.allocated - end < self.prealloc_bytes // 2:
            self._zero_ahead()
        if end > self.allocated:
            self._wait_ahead()
            while self.allocated < end:  # zeroed with this write: the group's fsync makes them durable
                self._zero(self.fd, self.allocated, len(ZEROS))
                self.allocated += len(ZEROS)
        pwrite_all(self.fd, block, self.position)
        self.position = end
        return end

    def _zero_ahead(self) -> None:
        if self._ahead_failed or (self._ahead is not None and self._ahead.is_alive()):
            return
        start, size = self.allocated, self.prealloc_bytes // 2
        self._ahead = threading.Thread(target=self._zero_range, args=(start, size), name="journal-zeros", daemon=True)
        self._ahead.start()

    def _zero_range(self, start: int, size: int) -> None:
        try:
            for offset in range(start, start + size, ZERO_PIECE):
                if self._closing.is_set():
                    return
                self._zero(self._ahead_fd, offset, ZERO_PIECE)
                write_back(self._ahead_fd, offset, ZERO_PIECE)
                if not self._hurry.is_set() and start - self.position > self.prealloc_bytes // 4:
                    time.sleep(ZERO_PAUSE)
            os.fdatasync(self._ahead_fd)
        except Exception as exc:  # noqa: BLE001 - whatever it was, the journal zeroes what it writes on from now on
            self._ahead_failed = True
            log.warning("%s: zeroing ahead of the journal failed (%s): the journal's writes zero it", self.path, exc)
            return
        self.allocated = start + size

    def _wait_ahead(self) -> None:
        if self._ahead is not None:
            self._hurry.set()
            self._ahead.join()
            self._hurry.clear()
            self._ahead = None

    def sync(self) -> None:
        os.fdatasync(self.fd)

    def close(self) -> None:
        self._closing.set()  # the zeros it has not written yet are of no use now
        self._wait_ahead()
        os.close(self._ahead_fd)
        os.close(self.fd)

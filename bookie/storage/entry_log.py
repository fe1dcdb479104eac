"""Entry logs (BookKeeper: bookie/DefaultEntryLogger.java): ``<ledgerDir>/current/<hex log id>.log``, interleaving all
ledgers' entries.

Byte layout::

    offset 0      1024-byte header: b"BKLO" | int32 version (1) | int64 ledgersMapOffset (at 8) |
                  int32 ledgersCount (at 16) | zeros
    offset 1024   entries, each an add record (bookie/codec/records.py): int32 size | framed entry
                  an entry's location is (logId << 32) | pos, pos = offset of the framed entry (after the size)
    ledgersMap    appended when the log is sealed, in batches of <= 10,000 ledgers, each:
                  int32 (batchLength - 4) | int64 -1 | int64 -2 | int32 count | count x (int64 ledgerId, int64 bytes)
                  (bytes include the 4-byte size prefixes); then the header's map offset and count are patched.
                  A log without a map (offset 0) is scanned to rebuild it.

``lastId`` in each ledger directory holds the highest log id handed out in any of them, as hex text and a newline.
"""

from __future__ import annotations

import logging
import os
import struct
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from bookie.codec.entry import IDS, entry_ids
from bookie.codec.records import MIN_STORED, PREFIX, RECORD_IDS, SIZE, records_in
from bookie.errors import CorruptData
from bookie.files import fsync_dir, open_private, private_dirs, pwrite_all, write_private
from bookie.storage.dir_files import hex_ids
from bookie.storage.dirs import DirEvent, LedgerDirs, NoWritableLedgerDir

log = logging.getLogger(__name__)

MAGIC = b"BKLO"
VERSION = 1
HEADER_SIZE = 1024
HEADER = struct.Struct(">4siqi")
assert HEADER.size == 20
MAP_BATCH_HEADER = struct.Struct(">iqqi")
MAP_ENTRY = struct.Struct(">qq")
MAP_BATCH = 10_000
MAX_ENTRY_SIZE = 64 * 1024 * 1024
WRITE_BUFFER = 1 << 20
RETIRE_AFTER = 5.0  # seconds a removed log's read descriptor stays open for reads in flight
READ_AHEAD_WINDOW = 4 << 20  # the most read-ahead reads at once


def log_path(directory: Path, log_id: int) -> Path:
    return Path(directory) / "current" / f"{log_id:x}.log"


def location(log_id: int, pos: int) -> int:
    return (log_id << 32) | pos


def split_location(loc: int) -> tuple[int, int]:
    return loc >> 32, loc & 0xFFFFFFFF


def list_log_ids(directory: Path) -> list[int]:
    return hex_ids(directory, ".log")


def last_log_id(directory: Path) -> int:
    """The highest log id a ledger directory knows: of its logs, or in its ``lastId`` file (-1: none)."""
    ids = list_log_ids(directory)
    last = ids[-1] if ids else -1
    try:
        text = (Path(directory) / "current" / "lastId").read_text().strip()
        last = max(last, int(text, 16))
    except (FileNotFoundError, ValueError):  # BookKeeper reads a bad lastId as none too
        pass
    return last


def _head(f: BinaryIO, path: Path) -> tuple[int, int] | None:
    """``(ledgersMapOffset, ledgersCount)`` from a log's header; None when the log has no header yet (created, not
    written). A zeroed magic is a header a crash lost while later data stayed: read as a log without a map, to be
    scanned, as BookKeeper reads any header it can (DefaultEntryLogger.getHeaderForLogId skips the magic)."""
    head = f.read(HEADER.size)
    if len(head) < HEADER.size:
        return None
    magic, _, map_offset, count = HEADER.unpack(head)
    if magic == bytes(len(MAGIC)):
        log.warning("%s: header lost (zeros): scanning the log as one without a ledgers map", path)
        return 0, 0
    if magic != MAGIC:
        raise CorruptData(f"{path}: not an entry log (magic {magic!r})")
    return map_offset, count


def read_ledgers_map(path: Path) -> dict[int, int] | None:
    """The sealed log's ledgers map ``{ledgerId: bytes}``, or None when it has none, or a crash damaged it (a torn
    seal): the log is then scanned, as BookKeeper's getEntryLogMetadata falls back to scanning."""
    with open(path, "rb") as f:
        head = _head(f, path)
        if head is None or head[0] == 0:
            return None
        map_offset, count = head
        f.seek(map_offset)
        result: dict[int, int] = {}
        while len(result) < count:
            at = f.tell()
            batch = f.read(MAP_BATCH_HEADER.size)
            _, m1, m2, n = MAP_BATCH_HEADER.unpack(batch.ljust(MAP_BATCH_HEADER.size, b"\0"))
            body = f.read(n * MAP_ENTRY.size) if (m1, m2) == (-1, -2) and 0 <= n <= MAP_BATCH else b""
            if len(body) != n * MAP_ENTRY.size or (m1, m2) != (-1, -2):
                log.warning("%s: ledgers map damaged at offset %d (a torn seal): scanning the log instead", path, at)
                return None
            for i in range(n):
                ledger_id, size = MAP_ENTRY.unpack_from(body, i * MAP_ENTRY.size)
                result[ledger_id] = size
        return result


def iter_records(path: Path, chunk: int = 4 << 20) -> Iterator[tuple[int, int, int, memoryview]]:
    """``(pos, ledgerId, entryId, record)`` of every entry, up to the ledgers map or the end of the data;
    ``record`` is ``int32 size | framed entry``, valid until the next item. Reads the log in large chunks: compaction
    and map rebuilding read whole logs, and a read per entry costs more than the entry.

    Stops, with a warning, at a record a crash damaged (a size that runs past the data, an entry cut short), as
    BookKeeper's scanEntryLog stops at a short read: what follows was never synced, so nothing acknowledged relies on
    it (the journal has it), and a scan that raised would fail every garbage collection after the crash."""
    with open(path, "rb", buffering=0) as f:
        head = _head(f, path)
        if head is None:
            return  # a log created but not written yet (the next one is pre-created): no entries
        end = head[0] or os.fstat(f.fileno()).st_size
        data, base, position = b"", HEADER_SIZE, HEADER_SIZE  # data holds the file from offset base
        while position + PREFIX <= end:
            start = position - base
            if start + PREFIX + IDS.size > len(data):
                data = data[start:] + os.pread(f.fileno(), chunk, base + len(data))
                base, start = position, 0
            if start + PREFIX > len(data):
                return  # cut short
            (size,) = SIZE.unpack_from(data, start)
            if size == 0:
                return  # unwritten tail
            if size < MIN_STORED or position + PREFIX + size > end:
                log.warning("%s: scan stops at a bad entry size %d at offset %d (a torn write)", path, size, position)
                return
            if start + PREFIX + size > len(data):
                data = data[start:] + os.pread(f.fileno(), max(chunk, PREFIX + size), base + len(data))
                base, start = position, 0
                if PREFIX + size > len(data):
                    log.warning("%s: scan stops at an entry cut short at offset %d (a torn write)", path, position)
                    return
            ledger_id, entry_id = IDS.unpack_from(data, start + PREFIX)
            if ledger_id == -1:
                return  # the ledgers map, after a header that lost its offset
            yield position + PREFIX, ledger_id, entry_id, memoryview(data)[start : start + PREFIX + size]
            position += PREFIX + size


def record_head(fd: int, pos: int) -> tuple[int, int, int] | None:
    """``(size, ledgerId, entryId)`` of the record whose framed entry is at ``pos`` (a location's offset) in an open
    entry log; None when the file ends before them."""
    head = os.pread(fd, RECORD_IDS.size, pos - PREFIX) if pos >= PREFIX else b""
    return RECORD_IDS.unpack(head) if len(head) == RECORD_IDS.size else None


def scan_log(path: Path) -> Iterator[tuple[int, int, int, int]]:
    """``(pos, size, ledgerId, entryId)`` of every entry, up to the ledgers map or the end of the data."""
    for pos, ledger_id, entry_id, record in iter_records(path):
        yield pos, len(record) - PREFIX, ledger_id, entry_id


def rebuild_ledgers_map(path: Path) -> dict[int, int]:
    sizes: dict[int, int] = defaultdict(int)
    for _, size, ledger_id, _ in scan_log(path):
        sizes[ledger_id] += PREFIX + size
    return dict(sizes)


class LogFile:
    """One entry log being written: the header when created, records appended through a write buffer, and when
    sealed the ledgers map, the header's map offset and an fsync. The current log of an :class:`EntryLogger` is one;
    compaction writes each log's copies into one of its own (:meth:`EntryLogger.new_log`)."""

    def __init__(self, path: Path, log_id: int):
        self.path, self.id = path, log_id
        self.fd = open_private(path, os.O_RDWR | os.O_EXCL)
        pwrite_all(self.fd, HEADER.pack(MAGIC, VERSION, 0, 0).ljust(HEADER_SIZE, b"\0"), 0)
        self.flushed = HEADER_SIZE  # file offset where the buffer starts
        self.buffer = bytearray()
        self.ledger_sizes: dict[int, int] = defaultdict(int)

    @property
    def position(self) -> int:
        return self.flushed + len(self.buffer)

    def append(self, records: bytes | memoryview, sizes: dict[int, int]) -> int:
        """Buffer ``records`` (``int32 size | framed entry`` each; ``sizes`` their bytes by ledger); their offset."""
        offset = self.position
        self.buffer += records
        for ledger_id, size in sizes.items():
            self.ledger_sizes[ledger_id] += size
        if len(self.buffer) >= WRITE_BUFFER:
            self.flush_buffer()
        return offset

    def flush_buffer(self) -> None:
        if self.buffer:
            pwrite_all(self.fd, self.buffer, self.flushed)
            self.flushed += len(self.buffer)
            self.buffer = bytearray()

    def buffered(self, pos: int, size: int) -> bytes:
        """``size`` bytes from file offset ``pos`` (at or past ``flushed``): still in the buffer."""
        start = pos - self.flushed
        return bytes(self.buffer[start : start + size])

    def seal(self) -> None:
        """Flush, append the ledgers map, patch the header, fsync, close."""
        self.flush_buffer()
        map_offset = self.flushed
        items = sorted(self.ledger_sizes.items())
        blob = bytearray()
        for start in range(0, len(items), MAP_BATCH):
            batch = items[start : start + MAP_BATCH]
            body = b"".join(MAP_ENTRY.pack(lid, size) for lid, size in batch)
            blob += MAP_BATCH_HEADER.pack(MAP_BATCH_HEADER.size - 4 + len(body), -1, -2, len(batch)) + body
        pwrite_all(self.fd, blob, map_offset)
        pwrite_all(self.fd, struct.pack(">qi", map_offset, len(items)), 8)
        os.fsync(self.fd)
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class EntryLogger:
    """Appends to the current entry log (with a write buffer), rotates at ``logSizeLimit``, reads any log — across
    the bookie's ledger directories, as BookKeeper's DefaultEntryLogger: a new log goes to a random writable
    directory (``dirs.pick_for_new_log``), and a log whose directory fills up (or nearly) is rolled over at the next
    append; log ids are unique across the directories (the next id is past every log and every ``lastId`` file in
    any of them, and ``lastId`` is written to all of them); a log is read from whichever directory holds it.

    Args:
        dirs: the ledger directories (logs live in their ``current`` subdirectories); a path is one directory.
        size_limit: ``logSizeLimit``: a log is sealed and a new one started past this many bytes.
        flush_bytes: ``flushEntrylogBytes``: call ``on_flush_due`` once this many bytes were appended since the last
            :meth:`flush`; 0 = never.
        on_flush_due: called on the appending thread, so it must only signal whoever flushes, never flush itself.
    """

    def __init__(
        self,
        dirs: LedgerDirs | Path,
        size_limit: int = 1 << 30,
        flush_bytes: int = 0,
        on_flush_due: Callable[[], None] | None = None,
    ):
        self.dirs = dirs if isinstance(dirs, LedgerDirs) else LedgerDirs([dirs])
        self._log_dirs: dict[int, Path] = {}  # log id -> the ledger directory holding it
        for directory in self.dirs.all:
            private_dirs(directory / "current")
            for log_id in list_log_ids(directory):
                self._log_dirs.setdefault(log_id, directory)
        self.size_limit = size_limit
        self.flush_bytes = flush_bytes
        self.on_flush_due = on_flush_due
        self.unflushed_bytes = 0  # appended since the last flush() or roll
        self.flushes = 0
        self.lock = threading.RLock()
        self._read_fds: dict[int, int] = {}
        self._retired: list[tuple[float, int]] = []  # (when, fd) of removed logs
        self.current_id = -1
        self.current_dir = self.dirs.all[0]
        self._roll_due = False  # the current log's directory filled up: the next append starts a new log
        self._current: LogFile | None = None
        self._compacting: set[int] = set()  # ids of compaction logs being written (see new_log)
        self.unsynced: set[int] = set()
        self.dirs.add_listener(self._on_dir_event)
        try:
            self._roll()
        except NoWritableLedgerDir as exc:  # every disk full: the first append tries again (a read-only bookie)
            log.warning("no entry log opened yet: %s", exc)

    def _on_dir_event(self, directory: Path, event: DirEvent) -> None:
        if event != "writable" and directory == self.current_dir:
            self._roll_due = True  # EntryLogManagerForSingleEntryLog's diskFull / diskAlmostFull

    # ---- the logs and their directories ----
    def log_path(self, log_id: int) -> Path:
        """Where log ``log_id`` is: FileNotFoundError when no ledger directory has it."""
        directory = self._log_dirs.get(log_id)
        if directory is None:
            found = next((d for d in self.dirs.all if log_path(d, log_id).exists()), None)
            if found is None:
                where = ", ".join(map(str, self.dirs.all))
                raise FileNotFoundError(f"entry log {log_id:x}.log is in none of {where}")
            directory = self._log_dirs[log_id] = found
        return log_path(directory, log_id)

    def directory_of(self, log_id: int) -> Path | None:
        """The ledger directory of a log this logger has seen (None: not known, or removed)."""
        return self._log_dirs.get(log_id)

    def log_ids(self) -> list[int]:
        """Every entry log in the ledger directories, ascending."""
        return sorted({log_id for d in self.dirs.all for log_id in list_log_ids(d)})

    def sealed_log_ids(self) -> list[int]:
        """The logs no one writes to any more: all but the current one and the compaction logs being written."""
        with self.lock:
            writing = {self.current_id, *self._compacting}
        return [log_id for log_id in self.log_ids() if log_id not in writing]

    # ---- writing ----
    def _next_id(self) -> int:
        return max(last_log_id(d) for d in self.dirs.all) + 1

    def _create(self, directory: Path) -> LogFile:
        """A new log in ``directory``, with the next id (``lastId`` updated in every directory)."""
        log_id = self._next_id()
        created = LogFile(log_path(directory, log_id), log_id)
        # The name durable before any location points into the log: a compaction's index update, or a checkpoint
        # whose lastMark goes to another directory, would otherwise outlive it (and its id be handed out again).
        fsync_dir(directory / "current")
        for d in self.dirs.all:  # as EntryLoggerAllocator: every directory knows the highest id handed out
            try:
                write_private(d / "current" / "lastId", f"{log_id:x}\n".encode())
            except OSError as exc:  # a full disk: the next start also looks at the logs themselves
                log.error("cannot write %s: %s", d / "current" / "lastId", exc)
        self._log_dirs[log_id] = directory
        return created

    def new_log(self) -> LogFile:
        """A log of its own for a compaction's copies (its name durable, as every new log's). :meth:`seal_new` makes
        its data durable, before the index may point into it; :meth:`discard_new` removes it when the compaction
        gives up."""
        with self.lock:
            new = self._create(self.dirs.pick_for_new_log())
            self._compacting.add(new.id)
            return new

    def seal_new(self, new: LogFile) -> None:
        new.seal()
        with self.lock:
            self._compacting.discard(new.id)

    def discard_new(self, new: LogFile) -> None:
        """Remove a compaction's log nothing points into (its copies were never indexed)."""
        new.close()
        with self.lock:
            self._log_dirs.pop(new.id, None)
            self._compacting.discard(new.id)
        new.path.unlink(missing_ok=True)

    def _roll(self) -> None:
        directory = self.dirs.pick_for_new_log()
        if self._current is not None:
            self._seal()
        self._current = current = self._create(directory)
        self.current_dir = self._log_dirs[current.id]
        self._roll_due = False
        self.current_id = current.id
        self.unflushed_bytes = 0  # sealing fsynced the previous log
        self.unsynced.add(current.id)

    def _seal(self) -> None:
        assert self._current is not None
        self._current.seal()
        self.unsynced.discard(self._current.id)
        self._current = None

    def append(self, records: bytes, sizes: dict[int, int]) -> int:
        """Append ``records`` (``int32 size | framed entry`` each) and return the file offset of the first record.
        ``sizes`` is ``{ledgerId: bytes}`` of the records, for the ledgers map."""
        with self.lock:
            current = self._current
            if current is None or (
                current.position > HEADER_SIZE and (self._roll_due or current.position + len(records) > self.size_limit)
            ):
                self._roll()
                current = self._current
                assert current is not None
            offset = current.append(records, sizes)
            before, self.unflushed_bytes = self.unflushed_bytes, self.unflushed_bytes + len(records)
            if self.flush_bytes > 0 and before < self.flush_bytes <= self.unflushed_bytes and self.on_flush_due:
                self.on_flush_due()  # once per crossing: the flush resets the count
            return offset

    @property
    def position(self) -> int:
        return self._current.position if self._current is not None else HEADER_SIZE

    @property
    def ledger_sizes(self) -> dict[int, int]:
        """Bytes of each ledger in the current log."""
        return self._current.ledger_sizes if self._current is not None else {}

    def flush(self) -> None:
        """Make everything appended durable (the checkpoint's half for entry logs)."""
        with self.lock:
            current = self._current
            if current is not None:
                current.flush_buffer()
            self.unflushed_bytes = 0  # what the fsyncs below cover
            pending = set(self.unsynced)
            self._close_retired(RETIRE_AFTER)
        for log_id in pending:
            fd = current.fd if current is not None and log_id == current.id else self._reader(log_id)
            os.fsync(fd)
            if log_id != self.current_id:
                self.unsynced.discard(log_id)
        with self.lock:  # the sync thread and a checkpoint may flush at once
            self.flushes += 1

    def remove_log(self, log_id: int) -> int:
        """Delete a sealed log (garbage collection); return its size. A read that already looked up the log's
        descriptor may still be using it, so the descriptor is closed a few seconds later, not now."""
        with self.lock:
            if log_id == self.current_id:
                raise ValueError(f"entry log {log_id:x} is the current log")
            path = self.log_path(log_id)
            size = path.stat().st_size
            path.unlink()
            self._log_dirs.pop(log_id, None)
            fd = self._read_fds.pop(log_id, None)
            if fd is not None:
                self._retired.append((time.monotonic(), fd))
            self._close_retired(RETIRE_AFTER)
        fsync_dir(path.parent)
        return size

    def _close_retired(self, age: float) -> None:
        now = time.monotonic()
        keep = []
        for when, fd in self._retired:
            if now - when >= age:
                os.close(fd)
            else:
                keep.append((when, fd))
        self._retired = keep

    def close(self) -> None:
        with self.lock:
            self._close_retired(0)
            if self._current is not None:
                self._current.flush_buffer()
                os.fsync(self._current.fd)
                self._current.close()
                self._current = None
            for fd in self._read_fds.values():
                os.close(fd)
            self._read_fds.clear()

    # ---- reading ----
    def holds(self, loc: int) -> bool:
        """Whether a location lies inside data this logger has (its files, or the write buffer)."""
        log_id, pos = split_location(loc)
        with self.lock:
            if log_id == self.current_id:
                return pos + MIN_STORED <= self.position
        try:
            return pos + MIN_STORED <= os.stat(self.log_path(log_id)).st_size
        except FileNotFoundError:
            return False

    def _reader(self, log_id: int) -> int:
        fd = self._read_fds.get(log_id)
        if fd is None:
            try:
                path = self.log_path(log_id)
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError as exc:
                raise CorruptData(f"entry log {log_id:x}.log is missing: {exc}") from None
            self._read_fds[log_id] = fd
        return fd

    def read_following(self, loc: int, ledger_id: int, count: int, size: int) -> list[tuple[int, bytes]]:
        """Read-ahead: ``(entryId, framed entry)`` of the entries stored one after the other from ``loc`` (the
        location of an entry's data, past its size), while they belong to ``ledger_id``; at most ``count`` entries
        and about ``size`` bytes, in one read of the file (never of the write buffer)."""
        log_id, pos = split_location(loc)
        with self.lock:
            current = self._current
            end = current.flushed if current is not None and log_id == current.id else None
        try:
            fd = self._reader(log_id)
        except CorruptData:
            return []
        window = min(size, READ_AHEAD_WINDOW) if end is None else min(size, READ_AHEAD_WINDOW, end - pos + PREFIX)
        data = os.pread(fd, max(window, 0), pos - PREFIX) if window > PREFIX else b""
        found: list[tuple[int, bytes]] = []
        for offset, length, found_ledger, found_entry in records_in(data):
            if len(found) == count or length > MAX_ENTRY_SIZE or found_ledger != ledger_id:
                break
            found.append((found_entry, data[offset + PREFIX : offset + PREFIX + length]))
        return found

    def read(self, loc: int, ledger_id: int, entry_id: int) -> bytes:
        """The framed entry at ``loc``, checked to be the one asked for."""
        log_id, pos = split_location(loc)
        size: int
        data: bytes | None = None
        with self.lock:
            current = self._current
            if current is not None and log_id == current.id and pos - PREFIX >= current.flushed:
                head = current.buffered(pos - PREFIX, PREFIX)
                size = SIZE.unpack(head)[0] if len(head) == PREFIX else -1
                data = current.buffered(pos, size) if size > 0 else b""
        if data is None:
            fd = self._reader(log_id)
            head = os.pread(fd, PREFIX + 4096, pos - PREFIX)
            size = SIZE.unpack_from(head)[0] if len(head) >= PREFIX else -1
            if MIN_STORED <= size <= MAX_ENTRY_SIZE:
                data = head[PREFIX : PREFIX + size]
                if len(data) < size:
                    data += os.pread(fd, size - len(data), pos + len(data))
            else:
                data = b""  # refused below
        if not MIN_STORED <= size <= MAX_ENTRY_SIZE or len(data) != size:
            raise CorruptData(
                f"{self._path(log_id)}: bad entry size {size} at offset {pos - PREFIX} "
                f"(ledger {ledger_id} entry {entry_id})"
            )
        found = entry_ids(data)
        if found != (ledger_id, entry_id):
            raise CorruptData(
                f"{self._path(log_id)}: offset {pos - PREFIX} holds ledger {found[0]} entry {found[1]}, "
                f"the index says ledger {ledger_id} entry {entry_id}"
            )
        return data

    def _path(self, log_id: int) -> Path:
        """The entry log file ``log_id`` (for error messages: not built on the read path)."""
        return log_path(self._log_dirs.get(log_id, self.current_dir), log_id)

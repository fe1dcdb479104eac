"""Index files (BookKeeper: bookie/FileInfo.java): one per ledger,
``<indexDir>/current/<hex((id & 0xff00) >> 8)>/<hex(id & 0xff)>/<hex(id)>.idx``.

Byte layout::

    offset 0      1024-byte header: b"BKLE" | int32 version (1) | int32 masterKeyLen | master key |
                  int32 state bits (0x1 = fenced) | int32 explicitLacLen | explicit LAC buffer | zeros
    offset 1024   int64 location per entry id, at 1024 + 8 * entryId; 0 = absent.
                  Pages of 8192 bytes (1024 entries).

With several index directories a ledger's file is in one of them (a new ledger's in a random writable one), and is
moved to another when its directory fills up: copied to ``<new dir>/.../<hex(id)>.idx.rloc``, synced, the old file
removed, then renamed to ``.idx`` (BookKeeper's FileInfo.moveToNewLocation). A crash in between leaves a ``.rloc``
that the next start completes (:func:`recover_relocations`).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

from bookie.errors import CorruptData
from bookie.files import fsync_dir, open_private, private_dirs, pwrite_all
from bookie.storage.ledger_header import LedgerHeader

MAGIC = b"BKLE"
VERSION = 1
HEADER_SIZE = 1024
PAGE_SIZE = 8192
ENTRIES_PER_PAGE = PAGE_SIZE // 8
FENCED = 0x1
INT = struct.Struct(">i")
LOCATION = struct.Struct(">q")


RELOCATING = ".rloc"


def index_name(ledger_id: int) -> Path:
    """The index file's path under ``current/``."""
    return Path(f"{(ledger_id & 0xFF00) >> 8:x}") / f"{ledger_id & 0xFF:x}" / f"{ledger_id:x}.idx"


def index_path(directory: Path, ledger_id: int) -> Path:
    return Path(directory) / "current" / index_name(ledger_id)


def ledger_id_of(path: Path) -> int | None:
    try:
        return int(path.stem, 16) if path.suffix == ".idx" else None
    except ValueError:
        return None


def recover_relocations(directories: list[Path]) -> None:
    """Finish or undo the moves a crash interrupted: a ``.idx.rloc`` whose ledger still has its ``.idx`` somewhere
    is removed (the move had not deleted the old file yet), else renamed to ``.idx`` (it had)."""
    for directory in directories:
        current = Path(directory) / "current"
        for rloc in current.glob(f"*/*/*.idx{RELOCATING}") if current.exists() else ():
            ledger_id = ledger_id_of(rloc.with_suffix(""))
            if ledger_id is None:
                continue
            if any(index_path(d, ledger_id).exists() for d in directories):
                rloc.unlink()
            else:
                os.replace(rloc, rloc.with_suffix(""))


@dataclass(frozen=True)
class IndexHeader(LedgerHeader):
    """A ledger's header as its index file holds it (the layout above)."""

    def encode(self) -> bytes:
        lac = self.explicit_lac or b""
        head = MAGIC + INT.pack(VERSION) + INT.pack(len(self.master_key)) + self.master_key
        head += INT.pack(FENCED if self.fenced else 0) + INT.pack(len(lac)) + lac
        if len(head) > HEADER_SIZE:
            raise CorruptData(f"index header of {len(head)} bytes does not fit {HEADER_SIZE}")
        return head.ljust(HEADER_SIZE, b"\0")

    @classmethod
    def decode(cls, data: bytes, where: str) -> IndexHeader:
        if len(data) < 16 or data[:4] != MAGIC:
            raise CorruptData(f"{where}: not an index file")
        (version,) = INT.unpack_from(data, 4)
        if version != VERSION:
            raise CorruptData(f"{where}: unknown index file version {version}")
        offset = 8
        (key_len,) = INT.unpack_from(data, offset)
        if not 0 <= key_len <= HEADER_SIZE - 20:
            raise CorruptData(f"{where}: bad master key length {key_len} at offset {offset}")
        key = data[offset + 4 : offset + 4 + key_len]
        offset += 4 + key_len
        state, lac_len = struct.unpack_from(">ii", data, offset)
        if not 0 <= lac_len <= HEADER_SIZE - offset - 8:
            raise CorruptData(f"{where}: bad explicit LAC length {lac_len} at offset {offset + 4}")
        lac = data[offset + 8 : offset + 8 + lac_len] if lac_len else None
        return cls(key, bool(state & FENCED), lac)


class IndexFile:
    """Page-level access to one ledger's index file (created on first write).

    Its descriptor opens on first use and may be closed between uses (the ledger cache bounds how many are open);
    ``pins`` counts the users doing I/O without the cache's lock, while which it stays open. Once deleted, writes
    and syncs do nothing: a checkpoint still writing a ledger GC just deleted must not create its file again."""

    def __init__(self, directory: Path, ledger_id: int, path: Path | None = None):
        self.path = path or index_path(directory, ledger_id)
        self._fd = -1
        self._new_name = False  # created since the last sync: its directory is fsynced with it
        self.pins = 0
        self.deleted = False

    def exists(self) -> bool:
        return self._fd >= 0 or self.path.exists()

    def _open(self, create: bool) -> int:
        if self._fd < 0:
            if create:
                private_dirs(self.path.parent)
                try:
                    self._fd = open_private(self.path, os.O_RDWR | os.O_EXCL)
                    self._new_name = True
                except FileExistsError:
                    self._fd = open_private(self.path, os.O_RDWR)
            else:
                self._fd = os.open(self.path, os.O_RDWR)
        return self._fd

    def blank(self) -> bool:
        """Whether the header is only zeros (or missing: a file shorter than a header)."""
        return not os.pread(self._open(False), HEADER_SIZE, 0).strip(b"\0")

    def read_header(self) -> IndexHeader:
        return IndexHeader.decode(os.pread(self._open(False), HEADER_SIZE, 0), str(self.path))

    def write_raw_header(self, encoded: bytes) -> None:
        if not self.deleted:
            pwrite_all(self._open(True), encoded, 0)

    @property
    def is_open(self) -> bool:
        return self._fd >= 0

    def page_count(self) -> int:
        size = os.fstat(self._open(False)).st_size
        return max(0, (size - HEADER_SIZE + PAGE_SIZE - 1) // PAGE_SIZE)

    def read_page(self, page_no: int) -> bytearray:
        if not self.exists():
            return bytearray(PAGE_SIZE)
        data = os.pread(self._open(False), PAGE_SIZE, HEADER_SIZE + page_no * PAGE_SIZE)
        return bytearray(data.ljust(PAGE_SIZE, b"\0"))

    def write_page(self, page_no: int, page: bytes | bytearray) -> None:
        if not self.deleted:
            pwrite_all(self._open(True), page, HEADER_SIZE + page_no * PAGE_SIZE)

    def sync(self) -> None:
        """Make what was written durable, and the file's name when it is new (a checkpoint's lastMark follows). The
        file's descriptor may have been closed since the writes: fsync through a new one syncs them all the same."""
        if self.deleted:
            return
        os.fsync(self._open(False))
        if self._new_name:
            fsync_dir(self.path.parent)
            self._new_name = False

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    @property
    def directory(self) -> Path:
        """The index directory the file is in."""
        return self.path.parents[3]

    def move_to(self, path: Path) -> None:
        """Move the file to ``path`` (another index directory), crash-safe by way of a ``.rloc`` copy."""
        if not self.exists():
            self.path = path  # nothing written yet: it will be created there
            return
        rloc = path.with_name(path.name + RELOCATING)
        private_dirs(rloc.parent)
        source = self._open(False)
        size = os.fstat(source).st_size
        target = open_private(rloc, os.O_WRONLY | os.O_TRUNC)
        try:
            for offset in range(0, size, 1 << 20):
                pwrite_all(target, os.pread(source, 1 << 20, offset), offset)
            os.fsync(target)
        finally:
            os.close(target)
        fsync_dir(rloc.parent)  # the copy's name durable before the original goes
        self.close()
        self.path.unlink()
        fsync_dir(self.path.parent)  # else a cut brings the stale original back, and dirs.find may pick it
        os.replace(rloc, path)
        fsync_dir(path.parent)
        self.path = path

    def delete(self) -> None:
        self.deleted = True
        if not self.pins:  # else the last user closes it (the name goes now)
            self.close()
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass

"""lastMark (BookKeeper: bookie/Journal.java's LastLogMark): ``<ledgerDir>/current/lastMark``, 16 bytes
``int64 journalId | int64 offset``.

Every entry before that journal position is persisted in entry logs and index files, so a restart replays the
journal from there. As in BookKeeper (Journal.LastLogMark): with several journal directories each journal has its
own mark, ``lastMark.<journal index>``; a checkpoint writes the marks into every writable ledger directory, and a
start takes, per journal, the highest mark found in any ledger directory (a full directory keeps an older one).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterable
from pathlib import Path

from bookie.errors import CorruptData
from bookie.files import private_dirs, write_private
from bookie.storage.group_commit import LogMark

log = logging.getLogger(__name__)
MARK = struct.Struct(">qq")
FILE = "lastMark"


def mark_file(journal_index: int, journals: int) -> str:
    """The mark's file name: ``lastMark`` with one journal directory, ``lastMark.<index>`` with several."""
    return FILE if journals == 1 else f"{FILE}.{journal_index}"


def read_last_mark(directory: Path, name: str = FILE) -> LogMark | None:
    path = Path(directory) / "current" / name
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    if len(data) != MARK.size:
        raise CorruptData(f"{path}: {len(data)} bytes, expected {MARK.size}")
    return LogMark(*MARK.unpack(data))


def highest_mark(directories: Iterable[Path], name: str = FILE) -> LogMark | None:
    """The highest of the marks named ``name`` in ``directories`` (None when none has one)."""
    marks = [m for m in (read_last_mark(d, name) for d in directories) if m is not None]
    return max(marks) if marks else None


def write_last_mark(directory: Path, mark: LogMark, name: str = FILE) -> None:
    current = private_dirs(Path(directory) / "current")
    write_private(current / name, MARK.pack(*mark), sync=True)


def write_last_marks(directories: Iterable[Path], mark: LogMark, name: str = FILE) -> int:
    """Write the mark into each directory and return how many took it. A directory that fails (its disk out of
    space) is logged and skipped, as BookKeeper's rollLog does: a start takes the highest mark of all, and an older
    one only replays more — as long as the journals after it are kept, so callers remove old journals only when
    some directory took the mark."""
    written = 0
    for directory in directories:
        try:
            write_last_mark(directory, mark, name)
            written += 1
        except OSError as exc:
            log.error("cannot write %s in %s: %s", name, directory, exc)
    return written

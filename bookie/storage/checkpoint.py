"""lastMark (BookKeeper: bookie/Journal.java's LastLogMark): ``<ledgerDir>/current/lastMark``, 16 bytes
``int64 journalId | int64 offset``.

Every entry before that journal position is persisted in entry logs and index files, so a restart replays the
journal from there.
"""

from __future__ import annotations

import struct
from pathlib import Path

from bookie.errors import CorruptData
from bookie.files import private_dirs, write_private
from bookie.storage.group_commit import LogMark

MARK = struct.Struct(">qq")
FILE = "lastMark"


def read_last_mark(directory: Path) -> LogMark | None:
    path = Path(directory) / "current" / FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    if len(data) != MARK.size:
        raise CorruptData(f"{path}: {len(data)} bytes, expected {MARK.size}")
    return LogMark(*MARK.unpack(data))


def write_last_mark(directory: Path, mark: LogMark) -> None:
    current = private_dirs(Path(directory) / "current")
    write_private(current / FILE, MARK.pack(*mark), sync=True)

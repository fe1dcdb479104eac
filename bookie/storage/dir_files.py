"""Small file helpers shared by the storage formats."""

from __future__ import annotations

import ctypes
import os
import struct
from collections.abc import Iterable
from pathlib import Path

from bookie.files import libc


def hex_ids(directory: Path, suffix: str) -> list[int]:
    """The ids of ``<directory>/current/<hex id><suffix>`` files, ascending."""
    current = Path(directory) / "current"
    ids = []
    for path in current.glob(f"*{suffix}") if current.exists() else ():
        try:
            ids.append(int(path.stem, 16))
        except ValueError:
            continue
    return sorted(ids)


def files_by_age(directories: Iterable[Path], extension: str) -> list[Path]:
    """Every ``*.<extension>`` under the directories (at any depth), oldest first, as BookKeeper's shell lists them
    (BookieShell.listFilesAndSort: by creation time, then modification time; Java 17 reads the creation time with
    statx where the filesystem keeps one). A sort that keeps the listing's order for equal times."""
    found = []
    for directory in directories:
        for parent, _, names in sorted(os.walk(directory)):
            found += [Path(parent, n) for n in sorted(names) if n.endswith(f".{extension}")]
    return sorted(found, key=_age)


def _age(path: Path) -> tuple[int, int]:
    """(creation time, modification time) in ns; the modification time stands for a creation time not kept."""
    try:
        modified = path.stat().st_mtime_ns
    except OSError:  # gone meanwhile (a compacted entry log): BookKeeper's comparator says "equal"
        return 0, 0
    return created_ns(path) or modified, modified


_STATX = struct.Struct("<I")  # stx_mask, at offset 0 of struct statx
_STATX_BTIME_AT = 80  # struct statx_timestamp stx_btime: int64 tv_sec | uint32 tv_nsec
_STATX_BTIME = 0x800
_AT_FDCWD = -100


def created_ns(path: Path) -> int | None:
    """A file's creation (birth) time by statx(2), in ns; None where the system or filesystem does not keep it."""
    statx = getattr(libc(), "statx", None)
    if statx is None:
        return None
    buffer = ctypes.create_string_buffer(256)
    if statx(_AT_FDCWD, os.fsencode(path), 0, _STATX_BTIME, buffer) != 0:
        return None
    if not _STATX.unpack_from(buffer.raw)[0] & _STATX_BTIME:
        return None
    seconds, nanos = struct.unpack_from("<qI", buffer.raw, _STATX_BTIME_AT)
    return int(seconds) * 1_000_000_000 + int(nanos)

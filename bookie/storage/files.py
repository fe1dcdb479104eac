"""Small file helpers shared by the storage formats."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


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


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def files_by_age(directories: Iterable[Path], extension: str) -> list[Path]:
    """Every ``*.<extension>`` under the directories (at any depth), oldest first, as BookKeeper's shell lists them
    (BookieShell.listFilesAndSort: by creation time, which Java 17 reads on Linux as the modification time; a
    sort that keeps the listing's order for equal times)."""
    found = []
    for directory in directories:
        for parent, _, names in sorted(os.walk(directory)):
            found += [Path(parent, n) for n in sorted(names) if n.endswith(f".{extension}")]
    return sorted(found, key=_modified)


def _modified(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:  # gone meanwhile (a compacted entry log): BookKeeper's comparator says "equal"
        return 0

"""Small file helpers shared by the storage formats."""

from __future__ import annotations

import os
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

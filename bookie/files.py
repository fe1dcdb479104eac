"""Private files and directories: a bookie's and the sandbox's state is its owner's alone (index files hold ledgers'
master keys, journals and entry logs their entries, configurations their credentials).

Modes are set at creation and then made exact with chmod, so neither a lax umask (022 gives 0644 files) nor a
strange one (0200 would take the owner's write bit) decides them; what an earlier bkctl left readable is made private
the next time it is opened for writing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


def private_dirs(path: str | os.PathLike[str]) -> Path:
    """Create ``path`` and its missing parents, each 0700; an existing ``path`` is made 0700 too (parents that
    existed are left as they are: they may be shared, like /var/lib)."""
    path = Path(path)
    missing = []
    parent = path
    while not parent.exists() and parent != parent.parent:
        missing.append(parent)
        parent = parent.parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, PRIVATE_DIR)
        except FileExistsError:  # made by another thread or process meanwhile: still ours to make private
            pass
        os.chmod(directory, PRIVATE_DIR)
    if not missing and (path.stat().st_mode & 0o777) != PRIVATE_DIR:
        os.chmod(path, PRIVATE_DIR)
    return path


def open_private(path: str | os.PathLike[str], flags: int) -> int:
    """``os.open`` with ``O_CREAT`` and mode 0600; the file is made 0600 whether it was created or not."""
    fd = os.open(path, flags | os.O_CREAT, PRIVATE_FILE)
    try:
        os.fchmod(fd, PRIVATE_FILE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def append_private(path: str | os.PathLike[str]) -> BinaryIO:
    """A log file opened for appending, 0600 (its directory created 0700)."""
    private_dirs(Path(path).parent)
    return os.fdopen(open_private(path, os.O_WRONLY | os.O_APPEND), "ab")


def write_private(path: str | os.PathLike[str], data: bytes, sync: bool = False) -> None:
    """Replace ``path`` atomically with ``data`` in a 0600 file (a temporary file renamed over it; fsynced first
    when ``sync``)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    fd = open_private(tmp, os.O_WRONLY | os.O_TRUNC)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        if sync:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)

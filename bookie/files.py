"""Private files and directories: a bookie's and the sandbox's state is its owner's alone (index files hold ledgers'
master keys, journals and entry logs their entries, configurations their credentials).

Modes are set at creation and then made exact with chmod, so neither a lax umask (022 gives 0644 files) nor a
strange one (0200 would take the owner's write bit) decides them; what an earlier bkctl left readable is made private
the next time it is opened for writing.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


def pwrite_all(fd: int, data: bytes | bytearray | memoryview, offset: int) -> None:
    """``os.pwrite`` until every byte is written. A write that fills the disk may take only part of its bytes and
    return how many (a short write; the next one fails with ENOSPC): taking it for the whole leaves a hole under data
    that is then acknowledged (journal) or checkpointed (entry logs, index pages)."""
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        if written <= 0:
            raise OSError(errno.EIO, f"pwrite wrote nothing at offset {offset}")
        view, offset = view[written:], offset + written


def write_back(fd: int, offset: int, size: int) -> None:
    """Write ``size`` bytes of ``fd`` from ``offset`` back to the disk and wait (sync_file_range(2): the data, not
    the metadata, and no cache flush: an fsync still makes it durable). An fdatasync where the call is missing or
    the filesystem or a sandbox refuses it."""
    call = _sync_file_range()
    if call is not None and call(fd, offset, size, _WRITE_AND_WAIT) == 0:
        return
    code = ctypes.get_errno() if call is not None else errno.ENOSYS
    if code not in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EPERM):
        raise OSError(code, os.strerror(code))
    os.fdatasync(fd)


_WRITE_AND_WAIT = 1 | 2 | 4  # SYNC_FILE_RANGE_WAIT_BEFORE | _WRITE | _WAIT_AFTER


@functools.cache
def libc() -> ctypes.CDLL:
    """The C library's calls Python's os module lacks (sync_file_range, statx), errno kept for ctypes.get_errno."""
    return ctypes.CDLL(None, use_errno=True)


@functools.cache
def _sync_file_range():
    call = getattr(libc(), "sync_file_range", None)
    if call is not None:
        call.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
        call.restype = ctypes.c_int
    return call


def fsync_dir(directory: str | os.PathLike[str]) -> None:
    """Make the names in ``directory`` durable: a file created, renamed or unlinked there survives a power cut only
    once its directory is fsynced."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def private_dirs(path: str | os.PathLike[str]) -> Path:
    """Create ``path`` and its missing parents, each 0700 and durable (its parent fsynced after it is made); an
    existing ``path`` is made 0700 too (parents that existed are left as they are: they may be shared, like
    /var/lib)."""
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
        fsync_dir(directory.parent)
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


def write_atomic(path: str | os.PathLike[str], data: bytes, mode: int | None = PRIVATE_FILE, sync: bool = True) -> None:
    """Replace ``path`` atomically with ``data``: a reader sees the old file or the new one, never a part of one.

    ``data`` goes to a temporary file of a name no other writer uses (``mkstemp``'s, in ``path``'s directory, so
    two overlapping writers never share one), is fsynced, renamed over ``path``, and the directory fsynced, so a
    crash leaves the old file or the new one (``sync`` False skips both fsyncs: a crash may then leave an empty file).
    ``mode``: the new file's exact permission bits; None keeps those of the file it replaces, and gives a new file
    what ``open`` would (0666 less the umask), for files other users read, as node_exporter reads a textfile.
    """
    path = Path(path)
    if mode is None:
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), mode)
            f.write(data)
            if sync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    if sync:
        fsync_dir(path.parent)


def write_private(path: str | os.PathLike[str], data: bytes, sync: bool = False) -> None:
    """:func:`write_atomic` into a 0600 file (fsynced, with its directory, when ``sync``)."""
    write_atomic(path, data, PRIVATE_FILE, sync)


def _umask() -> int:
    """The process's umask, read without changing it (``os.umask`` sets it, racing other threads' creations)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    return 0o022

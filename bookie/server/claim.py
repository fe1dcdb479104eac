"""What a bookie claims before it reads or writes anything: its directories, and the addresses it will listen on.

A second bookie started on a live bookie's directories used to replay that bookie's journal, checkpoint, rewrite
its lastMark, remove its registration — and only then fail to bind the port. So, first thing at start-up:

- every journal, ledger and index directory is locked with ``flock`` on ``<dir>/current/bookie.lock``
  (exclusive, non-blocking, held until the process exits; the kernel releases it even after ``kill -9``, so a
  crashed bookie never leaves a stale lock). The holder's pid is written inside, for the refusal message.
  Apache BookKeeper has no such lock; its cookies catch another cluster's disks, not a second process.
- the bookie port is test-bound, so that a port in use is reported before anything is touched.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
from pathlib import Path

from bookie.errors import BKError
from bookie.files import open_private, private_dirs, pwrite_all

LOCK_FILE = "bookie.lock"


class StartRefused(BKError):
    """The bookie cannot start: something it needs exclusively is taken."""


class DirectoryLocked(StartRefused):
    """Another process holds a bookie directory."""


class AddressInUse(StartRefused):
    """An address the bookie would listen on is taken."""


class DirectoryLocks:
    """The locks of one bookie process on its directories; held until :meth:`release` or the process exits."""

    def __init__(self) -> None:
        self._fds: list[int] = []

    def acquire(self, directories: list[Path]) -> None:
        seen = set()
        for directory in directories:
            private_dirs(directory)  # the bookie's own: 0700 (its parent may be shared, and is left alone)
            current = private_dirs(Path(directory) / "current")
            key = current.resolve()
            if key in seen:  # journal and ledgers on one directory: one lock (a second flock would refuse us)
                continue
            seen.add(key)
            self._fds.append(_lock(Path(directory), current / LOCK_FILE))

    def release(self) -> None:
        for fd in self._fds:
            os.close(fd)  # closing the last descriptor drops the flock
        self._fds.clear()


def _lock(directory: Path, path: Path) -> int:
    fd = open_private(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
        os.close(fd)
        raise DirectoryLocked(f"{directory} is locked by pid {holder} (another bookie runs on it; {path})") from None
    except OSError:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    pwrite_all(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def address_in_use(host: str, port: int, key: str, what: str) -> AddressInUse:
    """The error for a taken listening address, naming it and the configuration key that moves it."""
    return AddressInUse(
        f"{what} address {host}:{port} is already in use: another process listens there; set {key} to a free port"
    )


def check_port_free(host: str, port: int, key: str, what: str) -> None:
    """Bind ``host:port`` and let it go at once. With SO_REUSEADDR, as gRPC binds: a socket of an earlier run
    left in TIME_WAIT does not count, a listening one does. The socket is not kept: gRPC binds its own, and a
    socket kept listening would let clients connect (and wait) during a long journal replay instead of being
    refused and trying another replica. The moment between this test and gRPC's bind is covered by the
    directory locks for a second bookie on the same disks; any other process that takes the port in that
    moment still fails the start with the same message."""
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host.strip("[]"), port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise address_in_use(host, port, key, what) from None
            if exc.errno == errno.EADDRNOTAVAIL:
                raise StartRefused(
                    f"cannot listen on {host}:{port}: {host} is not an address of this machine (with "
                    "listeningInterface set, the bookie binds its bookie address: advertisedAddress "
                    "when set)"
                ) from None
            raise

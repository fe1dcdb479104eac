"""Child processes that we start and stop ourselves: each in its own process group, stopped by its pid.

A pid alone does not say that a process is ours: pids are reused, and a killed process stays a zombie until its
parent reaps it. :func:`running` asks the kernel for the process's state and command line, so a zombie or a reused
pid is never taken for the process we started.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Container
from pathlib import Path

from bookie.files import append_private, private_dirs

PROC = Path("/proc")


def spawn(args: list[str], log_path: Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> int:
    """Start ``args`` detached in its own process group (a terminal's Ctrl-C does not reach it; it is stopped by
    that group), output appended to ``log_path``; with umask 077, so that what it creates (ZooKeeper's snapshots,
    Spark's files) is private whatever our umask is.

    It stays in the caller's session, where BookKeeper's own scripts start theirs: Linux's autogroup scheduler makes
    each session a scheduling group, and a bookie alone in one waited up to half a second for a CPU beside a busy
    one (docs/bookie.md, "Sharing a machine")."""
    with append_private(log_path) as log:  # 0600: a server's log is its owner's
        proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            process_group=0,
            umask=0o077,
        )
    return proc.pid


def _state(stat: Path) -> str:
    # /proc/.../stat: "pid (comm) S ..."; comm may hold spaces and parentheses, the state follows the last ")"
    return stat.read_text().rpartition(")")[2].split()[0]


def _zombie(pid: int) -> bool:
    """Whether every thread of ``pid`` has exited. The main thread's state alone does not say it: killed, a
    process's threads exit one by one, and its main thread shows "Z" while others are still exiting and its files
    (a listening socket) are still open. A bookie taken for gone in that moment still accepted a connection, then
    reset it."""
    try:
        return all(_state(task / "stat") in ("Z", "X") for task in (PROC / str(pid) / "task").iterdir())
    except (OSError, IndexError):  # a thread gone between the listing and its stat: look again next time
        return False


def pid_alive(pid: int | None) -> bool:
    """Whether ``pid`` is a live process: a zombie (killed, not yet reaped by its parent) counts as gone."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child of ours: reap it
        waited, _ = os.waitpid(pid, os.WNOHANG)
        if waited:
            return False
    except ChildProcessError:
        pass
    return not _zombie(pid)


def command_line(pid: int) -> list[str]:
    """The arguments ``pid`` was started with; empty for a zombie or a process that is gone."""
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return []
    return raw.decode(errors="replace").split("\0")[:-1]


def _start_time(pid: int) -> int:
    try:
        return int((PROC / str(pid) / "stat").read_text().rpartition(")")[2].split()[19])
    except (OSError, IndexError, ValueError):
        return 0


def _names(args: list[str], markers: tuple[tuple[str, ...], ...]) -> bool:
    """Whether a command line holds every string of one of ``markers``."""
    return any(all(m in args for m in marker) for marker in markers)


def running(pid: int | None, *markers: tuple[str, ...]) -> bool:
    """Whether ``pid`` is alive and is the process we started: its command line holds every string of one of
    ``markers`` (a path under the sandbox's directory, say), so a reused pid or a zombie is not taken for it."""
    if not pid or not pid_alive(pid):
        return False
    args = command_line(pid)
    # Popen returns once exec closed its close-on-exec pipe, which the kernel does before it sets up the new
    # program's arguments: for that moment a live child's command line reads empty. A bookie caught in it was
    # reported "exited while starting", with an empty log, under load.
    deadline = time.monotonic() + 2.0
    while not args and time.monotonic() < deadline and pid_alive(pid):
        time.sleep(0.01)
        args = command_line(pid)
    return _names(args, markers)


def find(*markers: tuple[str, ...]) -> list[int]:
    """The live processes of this user whose command line holds every string of one of ``markers``, oldest first: what
    still runs of ours, whatever the state file says (it may be stale, or a start may have died before writing
    it)."""
    uid, me = os.getuid(), os.getpid()
    found = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        pid = int(entry.name)
        try:
            if entry.stat().st_uid != uid:
                continue
        except OSError:
            continue
        args = command_line(pid)
        if args and _names(args, markers) and pid_alive(pid):
            found.append(pid)
    return sorted(found, key=_start_time)


def stop_process_group(pid: int, timeout: float = 10.0, kill: bool = False) -> bool:
    """SIGTERM (or SIGKILL when ``kill``) the process group led by ``pid``; SIGKILL it if still alive after
    ``timeout``. Returns whether it had to: a SIGTERM the group did not end on in time."""
    sig = signal.SIGKILL if kill else signal.SIGTERM
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return False
        time.sleep(0.05)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    while pid_alive(pid) and time.monotonic() < deadline + 5:
        time.sleep(0.05)
    return not kill


_handed_out: set[int] = set()
# Ports handed out by any process of this user (tests, sandboxes, benchmarks) and not reused for this long: between
# free_port's probe and the server's bind, another process probing the same port found it free too, and one of the
# two servers failed with "address already in use" (seen with two test runs at once). A file per port, made with
# O_EXCL, is the machine-wide claim.
RESERVATIONS = Path(tempfile.gettempdir()) / f"bkctl-ports-{os.getuid()}"
RESERVATION_SECONDS = 600.0


class _Claims:
    """This process's side of the claims: a claim is an O_EXCL file; claims older than RESERVATION_SECONDS (their
    servers bound the ports long ago, or never started) are swept at most once a minute."""

    def __init__(self) -> None:
        self.next_sweep = 0.0  # time.monotonic()

    def claim(self, port: int) -> bool:
        """False when another process holds a claim on ``port``."""
        private_dirs(RESERVATIONS)
        if time.monotonic() >= self.next_sweep:
            self.next_sweep = time.monotonic() + 60
            now = time.time()
            for entry in os.scandir(RESERVATIONS):
                with contextlib.suppress(OSError):
                    if now - entry.stat().st_mtime >= RESERVATION_SECONDS:
                        os.unlink(entry.path)
        try:
            os.close(os.open(RESERVATIONS / str(port), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            return True
        except FileExistsError:
            return False


_claims = _Claims()


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = (int(x) for x in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999


def free_port(taken: Container[int] = frozenset()) -> int:
    """A free port on 127.0.0.1 for a server of ours, below the kernel's ephemeral range: a port from that range
    (what binding port 0 gives) can be taken by any outgoing connection before our server binds it. ``taken``:
    ports promised to servers that are not listening yet (a stopped bookie's). No other process of this user gets
    the same port for RESERVATION_SECONDS (see RESERVATIONS)."""
    low, _ = _ephemeral_range()
    candidates = list(range(max(1024, low - 12000), low))
    random.shuffle(candidates)
    for port in candidates:
        if port in _handed_out or port in taken:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        if not _claims.claim(port):
            continue
        _handed_out.add(port)
        return port
    raise OSError("no free port below the ephemeral range")


def tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return ""

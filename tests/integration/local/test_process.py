"""Processes we start, as the sandbox and the test harnesses see them."""

import os
import sys
from pathlib import Path

from bookie.local.process import pid_alive, running, spawn, stop_process_group

from support.waiting import wait_for


def test_a_process_is_running_from_the_moment_it_is_spawned(tmp_path):
    """Between exec closing Popen's pipe and the new program's arguments being set up, a live child's command line
    reads empty (for most Python starts here): a freshly started bookie was taken for one that had exited, with an
    empty log, whenever the check came that early (under load)."""
    args = [sys.executable, "-c", "import time; time.sleep(30)"]
    misses = 0
    for _ in range(60):
        pid = spawn(args, tmp_path / "out.log")
        try:
            misses += not running(pid, tuple(args))
        finally:
            stop_process_group(pid, kill=True)
    assert misses == 0


def autogroup(pid: int | str) -> str | None:
    """The autogroup the kernel schedules ``pid`` in ("/autogroup-N"); None where there is none: no such file, or
    an empty one for a process in the root autogroup (as everything under CI's runner is)."""
    try:
        fields = Path(f"/proc/{pid}/autogroup").read_text().split()
    except OSError:
        return None
    return fields[0] if fields else None


def test_a_server_gets_its_own_process_group_in_the_callers_session(tmp_path):
    """Not a session of its own: that is a scheduling group of its own, where a bookie waited up to half a second
    for a CPU beside a busy session (docs/bookie.md, "Sharing a machine")."""
    pid = spawn([sys.executable, "-c", "import time; time.sleep(60)"], tmp_path / "server.log")
    try:
        assert os.getpgid(pid) == pid != os.getpgid(0)
        assert os.getsid(pid) == os.getsid(0)
        assert autogroup(pid) == autogroup("self")
    finally:
        stop_process_group(pid)
    assert not pid_alive(pid)


def test_a_process_whose_main_thread_exited_is_alive_while_another_thread_runs(tmp_path):
    """Killed, a process's threads exit one by one: its main thread shows "Z" while the others still run and its
    sockets are still open. A bookie taken for gone in that moment still accepted a connection and reset it (`bookie
    info` of a just-killed bookie: "connection reset" instead of "unreachable"). Here the main thread exits for good
    while another serves."""
    script = (
        "import ctypes, threading, time\n"
        "threading.Thread(target=time.sleep, args=(60,)).start()\n"
        "ctypes.CDLL(None).pthread_exit(None)\n"
    )
    pid = spawn([sys.executable, "-c", script], tmp_path / "out.log")
    try:
        main_thread = Path(f"/proc/{pid}/stat")
        wait_for(lambda: main_thread.read_text().rpartition(")")[2].split()[0] == "Z", "its main thread to exit", 10)
        assert pid_alive(pid)
    finally:
        stop_process_group(pid, kill=True)
    assert not pid_alive(pid)


def test_processes_asking_for_ports_at_once_never_get_the_same_one():
    """free_port probes a port by binding it, then lets it go for the server to bind later: without a machine-wide
    claim, another process probing meanwhile got the same port, and one of two bookies failed to start ("already
    in use"; seen with two test runs at once)."""
    import subprocess

    script = "from bookie.local.process import free_port\nprint(*[free_port() for _ in range(300)])\n"
    runs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) for _ in range(4)]
    ports = [int(p) for run in runs for p in run.communicate(timeout=120)[0].split()]
    assert all(run.returncode == 0 for run in runs)
    assert len(ports) == 1200 and len(set(ports)) == 1200

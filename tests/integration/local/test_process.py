"""Processes we start, as the sandbox and the test harnesses see them."""

import sys

from bookie.local.process import running, spawn, stop_process_group


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

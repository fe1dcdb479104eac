"""What the benchmark scripts share: a throw-away sandbox cluster, stopped by the code that started it, and a
`bkctl` run whose JSON output is the result."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookie.local.sandbox import Sandbox


@contextlib.contextmanager
def temporary_sandbox(bookies: int, settings: dict[str, str] | None = None):
    """Yield ``(sandbox, state, env)``: a started sandbox in a temp dir, and an environment whose `bkctl` uses it.
    SIGTERM (a timeout, a kill) raises SystemExit, so the sandbox is still stopped."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with tempfile.TemporaryDirectory(prefix="bkctl-bench-") as state_dir:
        sandbox = Sandbox(state_dir)
        state = sandbox.start(bookies=bookies, settings=settings)
        try:
            yield sandbox, state, {**os.environ, "BKCTL_SANDBOX_DIR": state_dir}
        finally:
            sandbox.stop()


def cpu_seconds(pids: list[int]) -> float:
    """CPU-seconds (user + system) the processes have used so far."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def bkctl_json(env: dict[str, str] | None, *args: str):
    """Run ``bkctl ARGS -o json`` (in ``env``; None: this process's) as a user would, and parse what it prints.
    A failed command raises CalledProcessError."""
    out = subprocess.run(
        [sys.executable, "-m", "bkctl", *args, "-o", "json"], env=env, check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out)

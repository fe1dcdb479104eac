"""What the benchmark scripts share: a throw-away sandbox cluster, stopped by the code that started it."""

from __future__ import annotations

import contextlib
import os
import signal
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

"""Waiting for a condition, the failure saying what was awaited."""

from __future__ import annotations

import time


def wait_for(condition, what: str, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")

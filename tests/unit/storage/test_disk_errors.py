"""DiskErrors: read I/O errors counted, logged a line per 10 s, and ``limit`` within the window declaring failure."""

from __future__ import annotations

import errno
import logging

from bookie.storage.disk_errors import DiskErrors

EIO = OSError(errno.EIO, "Input/output error")


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_errors_are_logged_a_line_per_ten_seconds_with_the_count_left_out(caplog):
    clock = Clock()
    errors = DiskErrors(limit=0, clock=clock)
    with caplog.at_level(logging.ERROR, "bookie.storage.disk_errors"):
        for n in range(5):
            errors.record(EIO, f"ledger 1 entry {n}")
        clock.now += 10
        errors.record(EIO, "ledger 1 entry 5")
    assert [r.getMessage() for r in caplog.records] == [
        "I/O error reading ledger 1 entry 0: [Errno 5] Input/output error",
        "I/O error reading ledger 1 entry 5: [Errno 5] Input/output error (4 more since the last such line)",
    ]
    assert errors.total == 6 and errors.failed is None


def test_the_limit_within_the_window_declares_the_disks_failed_once():
    clock = Clock()
    declared = []
    errors = DiskErrors(limit=3, window=60, clock=clock)
    errors.on_failed = declared.append
    errors.record(EIO, "ledger 1 entry 0")
    errors.record(EIO, "ledger 1 entry 1")
    clock.now += 61  # the first two are out of the window
    errors.record(EIO, "ledger 1 entry 2")
    errors.record(EIO, "ledger 1 entry 3")
    assert declared == []
    errors.record(EIO, "ledger 1 entry 4")
    errors.record(EIO, "ledger 1 entry 5")
    assert declared == [
        "3 I/O errors reading its disks in 60 s (the last: ledger 1 entry 4: [Errno 5] Input/output error)"
    ]

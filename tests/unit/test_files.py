import os
import threading

import pytest

from admin.check.prometheus import write_textfile
from bookie.errors import BKError
from bookie.files import write_atomic, write_private


def test_overlapping_writers_of_one_file_never_mix_their_contents(tmp_path):
    """Two cron runs of `cluster check --prometheus-file` overlap: each writes whole files, in its own temporary file,
    so every version a reader sees is one writer's whole text."""
    target = tmp_path / "bkctl.prom"
    texts = [bytes([ord("a") + n]) * 200_000 for n in range(2)]
    seen, stop, errors = set(), threading.Event(), []

    def write(text):
        try:
            for _ in range(50):
                write_atomic(target, text, mode=None)
        except OSError as exc:  # pragma: no cover - the failure the test is for
            errors.append(exc)

    def read():
        while not stop.is_set():
            if target.exists():
                seen.add(target.read_bytes())

    reader = threading.Thread(target=read)
    reader.start()
    writers = [threading.Thread(target=write, args=(text,)) for text in texts]
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join()
    stop.set()
    reader.join()
    assert errors == []
    assert seen <= set(texts)
    assert target.read_bytes() in texts
    assert [p.name for p in tmp_path.iterdir()] == ["bkctl.prom"]


def test_modes_private_kept_or_as_open_gives(tmp_path):
    private = tmp_path / "key"
    private.write_bytes(b"old")
    private.chmod(0o644)
    write_private(private, b"secret")
    assert (private.read_bytes(), private.stat().st_mode & 0o777) == (b"secret", 0o600)

    shared = tmp_path / "shared.prom"
    old = os.umask(0o022)
    try:
        write_atomic(shared, b"x 1\n", mode=None)
        assert shared.stat().st_mode & 0o777 == 0o644  # as a new file from open(): readable by node_exporter
        shared.chmod(0o640)
        write_atomic(shared, b"x 2\n", mode=None)
        assert (shared.read_bytes(), shared.stat().st_mode & 0o777) == (b"x 2\n", 0o640)
    finally:
        os.umask(old)


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(tmp_path, monkeypatch):
    target = tmp_path / "config.yaml"
    target.write_bytes(b"old")

    def fail(*_args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError, match="No space"):
        write_atomic(target, b"new")
    assert [p.name for p in tmp_path.iterdir()] == ["config.yaml"]
    assert target.read_bytes() == b"old"


def test_overlapping_check_runs_write_one_textfile(tmp_path):
    """`cluster check --prometheus-file` from two overlapping cron runs: both succeed, the file is one run's."""
    target = tmp_path / "bkctl.prom"
    errors = []

    def run(n):
        try:
            for _ in range(200):
                write_textfile(target, {"OK": n}, {"ledgers": float(n) * 1e5})
        except BKError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    lines = target.read_text().splitlines()
    assert "bkctl_check_success 1" in lines
    assert {"bkctl_check_ok 1", "bkctl_check_ledgers 100000.0"} <= set(lines) or {
        "bkctl_check_ok 2",
        "bkctl_check_ledgers 200000.0",
    } <= set(lines)  # one run's whole file
    assert [p.name for p in tmp_path.iterdir()] == ["bkctl.prom"]

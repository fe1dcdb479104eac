"""Check results as node_exporter textfile gauges, written atomically (node_exporter may read at any moment).

Every run rewrites the file, failed runs too: ``bkctl_check_success`` says whether this run's counts are current,
and ``bkctl_check_last_success_timestamp_seconds`` is carried over from the previous file when a run fails, so an
audit that stopped working goes visibly stale instead of repeating its last "0 violations".
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from bookie.errors import BKError, InvalidArgument
from bookie.files import write_atomic

SUCCESS = "bkctl_check_success"
LAST_SUCCESS = "bkctl_check_last_success_timestamp_seconds"


def check_writable(path: str | os.PathLike) -> None:
    """Refuse a textfile path whose directory cannot take it before the check runs, not after an hour of it."""
    directory = Path(path).absolute().parent
    if not directory.is_dir():
        raise InvalidArgument(f"--prometheus-file {path}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise InvalidArgument(f"--prometheus-file {path}: directory {directory} is not writable")


def write_textfile(path: str | os.PathLike, counts: dict[str, int], extra: dict[str, float]) -> None:
    """A completed check: success 1, the last success now, and its counts."""
    gauges: dict[str, float] = {SUCCESS: 1, LAST_SUCCESS: round(time.time(), 3)}
    for name, value in {**{c.lower(): v for c, v in counts.items()}, **extra}.items():
        gauges[f"bkctl_check_{name}"] = value
    _write(Path(path), gauges)


def write_failure(path: str | os.PathLike) -> None:
    """A check that did not complete: success 0, the previous file's last success kept, and no counts (they would be
    the previous run's)."""
    gauges: dict[str, float] = {SUCCESS: 0}
    last = last_success(path)
    if last is not None:
        gauges[LAST_SUCCESS] = last
    _write(Path(path), gauges)


def last_success(path: str | os.PathLike) -> float | None:
    """The last success timestamp an earlier run wrote in ``path``, if any."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    found = re.search(rf"^{LAST_SUCCESS} (\S+)$", text, re.MULTILINE)
    try:
        return float(found.group(1)) if found else None
    except ValueError:
        return None


def _write(target: Path, gauges: dict[str, float]) -> None:
    lines = []
    for metric, value in gauges.items():
        lines += [f"# TYPE {metric} gauge", f"{metric} {value}"]
    try:
        # node_exporter runs as another user: the file keeps its mode (a new one gets the umask's)
        write_atomic(target, ("\n".join(lines) + "\n").encode(), mode=None)
    except OSError as exc:
        raise BKError(f"cannot write {target}: {exc.strerror}") from None

"""Check results as node_exporter textfile gauges, written atomically (node_exporter may read at any moment)."""

from __future__ import annotations

import os
from pathlib import Path

from bookie.errors import BKError, InvalidArgument
from bookie.files import write_atomic


def check_writable(path: str | os.PathLike) -> None:
    """Refuse a textfile path whose directory cannot take it before the check runs, not after an hour of it."""
    directory = Path(path).absolute().parent
    if not directory.is_dir():
        raise InvalidArgument(f"--prometheus-file {path}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise InvalidArgument(f"--prometheus-file {path}: directory {directory} is not writable")


def write_textfile(path: str | os.PathLike, counts: dict[str, int], extra: dict[str, float]) -> None:
    lines = []
    for name, value in {**{c.lower(): v for c, v in counts.items()}, **extra}.items():
        metric = f"bkctl_check_{name}"
        lines += [f"# TYPE {metric} gauge", f"{metric} {value}"]
    target = Path(path)
    try:
        # node_exporter runs as another user: the file keeps its mode (a new one gets the umask's)
        write_atomic(target, ("\n".join(lines) + "\n").encode(), mode=None)
    except OSError as exc:
        raise BKError(f"cannot write {target}: {exc.strerror}") from None

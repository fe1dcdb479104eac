"""Check results as node_exporter textfile gauges, written atomically (node_exporter may read at any moment)."""

from __future__ import annotations

import os
from pathlib import Path


def write_textfile(path: str | os.PathLike, counts: dict[str, int], extra: dict[str, float]) -> None:
    lines = []
    for name, value in {**{c.lower(): v for c, v in counts.items()}, **extra}.items():
        metric = f"bkctl_check_{name}"
        lines += [f"# TYPE {metric} gauge", f"{metric} {value}"]
    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, target)

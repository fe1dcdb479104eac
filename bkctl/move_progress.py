"""The progress of a ReplicaMover (bookie/client/move.py) on a terminal: what drain, rebalance and repair-placement
show while they move replicas."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def move_progress(
    app, description: str, moves: int, total_bytes: int, unit: str = "moves"
) -> Iterator[tuple[Callable[[str, int], None], dict[str, int]]]:
    """A bar over ``moves`` moves and ``total_bytes`` bytes; yields the mover's ``progress`` callback and the
    counts it keeps (``moves``, ``bytes``) for what an interruption says."""
    done = {"moves": 0, "bytes": 0}
    with app.terminal.progress(description, total=moves, unit=unit, total_bytes=total_bytes) as advance:

        def progress(kind: str, n: int) -> None:
            if kind in done:
                done[kind] += n
                advance(n if kind == "moves" else 0, n if kind == "bytes" else 0)

        yield progress, done

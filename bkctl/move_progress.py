"""The progress of a ReplicaMover (bookie/client/move.py) or a BookieRecovery (bookie/client/rereplication.py) on a
terminal: what drain, rebalance, repair-placement, recover and decommission show while they copy replicas."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def move_progress(
    app, description: str, moves: int, total_bytes: int, unit: str = "moves", counts: str = "moves"
) -> Iterator[tuple[Callable[[str, int], None], dict[str, int]]]:
    """A bar over ``moves`` items and ``total_bytes`` bytes, which moves with every entry copied; yields the
    ``progress`` callback and the counts it keeps (``counts``, the progress kind the bar counts, and ``bytes``) for
    what an interruption says."""
    done = {counts: 0, "bytes": 0}
    with app.terminal.progress(description, total=moves, unit=unit, total_bytes=total_bytes) as advance:

        def progress(kind: str, n: int) -> None:
            if kind in done:
                done[kind] += n
                advance(n if kind == counts else 0, n if kind == "bytes" else 0)

        yield progress, done

"""Round-robin striping (BookKeeper: client/RoundRobinDistributionSchedule.java): entry ``e`` goes to ensemble indexes
``(e + w) % E``, ``w = 0 .. WQ-1``. Equivalently, the bookie at index ``i`` holds ``e`` when ``(i - e) mod E < WQ``.
"""

from __future__ import annotations

from collections.abc import Iterator


def write_set(entry_id: int, ensemble_size: int, write_quorum: int) -> list[int]:
    """The ensemble indexes that store ``entry_id``, in write order."""
    return [(entry_id + w) % ensemble_size for w in range(write_quorum)]


def holds(index: int, entry_id: int, ensemble_size: int, write_quorum: int) -> bool:
    """Whether the bookie at ensemble ``index`` must hold ``entry_id``."""
    return (index - entry_id) % ensemble_size < write_quorum


def entries_of_bookie(index: int, first: int, last: int, ensemble_size: int, write_quorum: int) -> Iterator[int]:
    """The entry ids in ``[first, last]`` that the bookie at ``index`` must hold, ascending.

    Walks one stride of ``E`` at a time: in each stride the bookie holds a run of up to ``WQ`` consecutive ids
    (possibly wrapping), so the cost is proportional to the entries yielded, not to ``last - first``.
    """
    if write_quorum >= ensemble_size:
        yield from range(first, last + 1)
        return
    offsets = sorted((index - w) % ensemble_size for w in range(write_quorum))
    base = first - first % ensemble_size
    while base <= last:
        for offset in offsets:
            entry = base + offset
            if first <= entry <= last:
                yield entry
        base += ensemble_size


def count_entries_of_bookie(index: int, first: int, last: int, ensemble_size: int, write_quorum: int) -> int:
    """How many entries of ``[first, last]`` the bookie at ``index`` must hold."""
    if last < first:
        return 0
    if write_quorum >= ensemble_size:
        return last - first + 1
    full = (last - first + 1) // ensemble_size
    tail = sum(1 for e in range(first + full * ensemble_size, last + 1) if holds(index, e, ensemble_size, write_quorum))
    return full * write_quorum + tail


def wanted_entries(
    first: int,
    last: int,
    bookie_index: int | None = None,
    ensemble_size: int = 0,
    write_quorum: int = 0,
    also_held_by: int | None = None,
) -> Iterator[int]:
    """The entries of a range read: ``first..last``; with ``bookie_index``, only those that bookie holds by the
    write-set rule, and with ``also_held_by``, only those that bookie holds too."""
    if bookie_index is None:
        return iter(range(first, last + 1))
    wanted = entries_of_bookie(bookie_index, first, last, ensemble_size, write_quorum)
    if also_held_by is not None:
        wanted = (e for e in wanted if holds(also_held_by, e, ensemble_size, write_quorum))
    return wanted

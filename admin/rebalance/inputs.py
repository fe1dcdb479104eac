"""The planner's inputs, from the bookies' storage views and the ledgers' metadata (pure: the command fetches them).

What "stored" means, so that a plan's prediction can be checked by measuring afterwards: a bookie's **live bytes**,
the bytes its entry logs hold of the ledgers it has in its index and that the metadata says it holds (``liveBytes``
of ``bkctl bookie usage`` and ``cluster usage``). A move changes them at once, without waiting for a garbage
collection: the target's logs take the copied entries (live once the metadata names it); the source's bytes of the
ledger become a replica it no longer owns, dead, freed on disk by its over-replicated GC
(gcOverreplicatedLedgerWaitTime) and compaction. Bytes on disk would follow only after those; the bytes the
metadata expects (write sets at the mean entry size) would fall on the source even when another segment of the
ledger still names it, though its GC, which works on whole ledgers, then keeps every byte.

So a replica's bytes are what its source holds of the ledger (split over the segments by the entries each puts on
it); the copy writes the same entries in the same record format, so the target gains as much. When the source's
index holds more entries of the ledger than its segments now ask of it (a move interrupted midway split a segment,
and the target already has the first part), the target gains only the segments' share, and the source still frees
everything it holds. A bookie that
reports no storage (a Java bookie) is counted by the metadata instead (``expected_on``: the closed ledgers' write
sets at their mean entry size), and said to be estimated; its capacity, when unknown, is the mean of the others'.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from admin.rebalance.plan import BookieLoad, Replica
from admin.usage.expected import expected_on, names
from admin.usage.explain import explain
from admin.usage.ledgers import LIVE, State
from bookie.client.move import movable
from bookie.codec.storage_view import StorageView
from bookie.codec.write_set import count_entries_of_bookie
from bookie.meta.ledger_metadata import LedgerMetadata

SHARE_SLACK = 0.1  # held over the metadata's share by more: entries written twice (the mean entry size is a guess)


@dataclass
class Inputs:
    bookies: list[BookieLoad]
    replicas: list[Replica]
    estimated: list[str] = field(default_factory=list)  # bookies counted by the metadata (no storage view)
    capacity_assumed: list[str] = field(default_factory=list)  # bookies whose capacity is the others' mean
    open_bytes: dict[str, int] = field(default_factory=dict)  # per bookie: bytes of ledgers it cannot give (open)
    open_ledgers: list[int] = field(default_factory=list)
    not_owned: set[tuple[str, int]] = field(default_factory=set)  # (bookie, ledger): entries of a ledger not naming it


def capacity_of(view: StorageView) -> int:
    """The size of the disks under the bookie's ledger directories (directories on one filesystem count once: the
    same size and free space)."""
    disks = {(d.disk_size, d.disk_free) for d in view.dirs if d.kind == "ledger"}
    return sum(size for size, _ in disks)


def _entries(md: LedgerMetadata, index: int, position: int) -> int:
    segment = md.segments[index]
    last = md.segment_end(index, md.last_entry_id)
    return count_entries_of_bookie(position, segment.first_entry_id, last, md.ensemble_size, md.write_quorum_size)


def _split(total: int, weights: list[int]) -> list[int]:
    """``total`` in parts proportional to ``weights`` (all to the first when they are all 0), summing to it."""
    whole = sum(weights)
    if whole <= 0:
        return [total] + [0] * (len(weights) - 1)
    parts = [total * w // whole for w in weights]
    parts[0] += total - sum(parts)
    return parts


def _copied(
    ledger_id: int, md: LedgerMetadata, bookie: str, held: int, entries: list[int], view: StorageView | None
) -> int:
    """What a copy of the bookie's segments of the ledger (``entries``: each one's entries on it) writes: what it holds
    of the ledger, unless it holds more than they ask of it; the source frees all it holds all the same. It may: an
    interrupted move split a segment (the target has the first part), or a journal replayed after a restart wrote
    entries to its logs again. Its index's count of the ledger's entries tells the first; a running interleaved
    bookie's index does not count (-1): then, when some segment of a closed ledger does not name the bookie, the
    metadata's share is taken. Bytes over the metadata's share by more than SHARE_SLACK tell the second."""
    indexed = view.local_ledgers.get(ledger_id, -1) if view is not None else -1
    if indexed > sum(entries):
        return held * sum(entries) // indexed
    if not md.is_closed:
        return held
    share = expected_on(md, bookie).bytes
    if indexed < 0 and len(entries) < len(md.segments):
        return min(held, share)
    return share if held > share * (1 + SHARE_SLACK) else held


def gather(
    bookies: Iterable[str],
    views: Mapping[str, StorageView | None],
    metadata: Mapping[int, LedgerMetadata],
) -> Inputs:
    """The loads of ``bookies`` and their movable replicas. ``views``: each bookie's storage view, None for one that
    reports none; ``metadata``: every ledger whose ensembles name one of them, and every ledger their views hold."""
    bookies = list(bookies)
    held: dict[str, dict[int, int]] = {}  # bookie -> ledger -> live bytes
    inputs = Inputs([], [])
    for bookie in bookies:
        view = views.get(bookie)
        if view is not None:
            explained = explain(view, metadata, bookie)
            held[bookie] = {lid: usage.held for lid, usage in explained.ledgers.items() if usage.facts.state in LIVE}
            inputs.not_owned |= {
                (bookie, lid)
                for lid, usage in explained.ledgers.items()
                if usage.facts.state == State.NOT_OWNED and usage.held
            }
    stored = {b: sum(held[b].values()) for b in held}
    for bookie in bookies:
        if bookie not in held:
            inputs.estimated.append(bookie)
            stored[bookie] = sum(expected_on(md, bookie).bytes for md in metadata.values() if names(md, bookie))
    known = {b: capacity_of(v) for b, v in views.items() if v is not None}
    mean = sum(known.values()) // len(known) if known else 1
    for bookie in bookies:
        if bookie not in known:
            inputs.capacity_assumed.append(bookie)
        inputs.bookies.append(BookieLoad(bookie, known.get(bookie) or mean, stored[bookie]))
    members = set(bookies)
    for ledger_id in sorted(metadata):
        md = metadata[ledger_id]
        for bookie in sorted({b for s in md.segments for b in s.bookies} & members):
            where = [(i, s.bookies.index(bookie)) for i, s in enumerate(md.segments) if bookie in s.bookies]
            # a bookie's index without the ledger: 0, it frees nothing
            size = held[bookie].get(ledger_id, 0) if bookie in held else expected_on(md, bookie).bytes
            if not all(movable(md, i) for i, _ in where):
                inputs.open_bytes[bookie] = inputs.open_bytes.get(bookie, 0) + size
                if ledger_id not in inputs.open_ledgers:
                    inputs.open_ledgers.append(ledger_id)
                continue
            entries = [_entries(md, i, p) for i, p in where]
            copied = _copied(ledger_id, md, bookie, size, entries, views.get(bookie))
            for (i, position), part, freed in zip(where, _split(copied, entries), _split(size, entries), strict=True):
                segment = md.segments[i]
                inputs.replicas.append(
                    Replica(
                        ledger_id,
                        segment.first_entry_id,
                        position,
                        bookie,
                        part,
                        segment.bookies,
                        md.write_quorum_size,
                        None if freed == part else freed,
                    )
                )
    return inputs

"""What a bookie should hold of a ledger, from the ledger's metadata alone.

A bookie holds the entries whose write set names it (bookie/codec/write_set.py), segment by segment: in a segment
whose ensemble lists it at index ``i``, the entries ``e`` with ``(i - e) mod E < WQ``. Bytes are the ledger's length
spread evenly over its entries, plus what an entry log stores around each payload (the record's size prefix, the
entry's ids, LAC, length and digest), so they compare with entry-log bytes.

The metadata knows a ledger's last entry and length once it is closed. An open ledger's are not there: its expected
entries are what the bookie's index counts (when it counts them), and its bytes what its entry logs hold.
"""

from __future__ import annotations

from dataclasses import dataclass

from bookie.codec.digest import DIGEST_SIZES, DigestType
from bookie.codec.records import HEAD
from bookie.codec.write_set import count_entries_of_bookie
from bookie.meta.ledger_metadata import LedgerMetadata

ENTRY_HEAD = HEAD.size + 8  # size prefix, ledgerId, entryId, LAC, then the payload's length
assert ENTRY_HEAD == 36


def record_overhead(md: LedgerMetadata) -> int:
    """The bytes an entry log stores for an entry besides its payload (CRC32's digest when the metadata is v1)."""
    return ENTRY_HEAD + DIGEST_SIZES[md.digest_type if md.digest_type is not None else DigestType.CRC32]


def names(md: LedgerMetadata, bookie_id: str) -> bool:
    """Whether some ensemble of the ledger names the bookie."""
    return any(bookie_id in segment.bookies for segment in md.segments)


def entries_on(md: LedgerMetadata, bookie_id: str, last_entry_id: int) -> int:
    """How many of the entries ``0..last_entry_id`` the write sets put on the bookie, over every segment."""
    count = 0
    for i, segment in enumerate(md.segments):
        last = min(md.segment_end(i, last_entry_id), last_entry_id)
        for index, member in enumerate(segment.bookies):
            if member == bookie_id:
                count += count_entries_of_bookie(
                    index, segment.first_entry_id, last, md.ensemble_size, md.write_quorum_size
                )
    return count


@dataclass(frozen=True)
class Expected:
    """A ledger's share on one bookie."""

    entries: int | None  # None: an open ledger whose entries the bookie's index does not count
    bytes: int
    exact: bool  # the bytes are the bookie's own (its entry logs', for the entries its index counts)


def expected_on(md: LedgerMetadata, bookie_id: str, local_entries: int | None = None, held: int = 0) -> Expected:
    """The ledger's share on ``bookie_id`` by its metadata. ``local_entries``: the entries the bookie's index holds
    of it (None or -1: unknown); ``held``: the bytes its entry logs hold of it.

    Closed: the write sets' entries, at the ledger's mean entry size; when the index counts as many entries as
    expected, the bytes the logs hold are exactly those entries', and are taken instead. Open: the index's count
    and the logs' bytes (the metadata has neither), exact when the index counts."""
    counted = local_entries is not None and local_entries >= 0
    if not md.is_closed:
        return Expected(local_entries if counted else None, held, counted)
    entries = entries_on(md, bookie_id, md.last_entry_id)
    if counted and local_entries == entries and held:
        return Expected(entries, held, True)
    total = md.last_entry_id + 1
    payload = md.length * entries // total if total > 0 else 0
    return Expected(entries, payload + entries * record_overhead(md), entries == 0)

"""BP-34 "list of entries of a ledger" encoding (BookKeeper: util/AvailabilityOfEntriesOfLedger.java).

Byte layout::

    offset  size  field
    0       4     version, int32 (0)
    4       4     number of sequence groups, int32
    8       56    zeros
    64      24*N  groups, ordered by firstSequenceStart, each:
                    int64 firstSequenceStart | int64 lastSequenceStart | int32 sequenceSize | int32 sequencePeriod

A sequence is a run of consecutive entry ids; a group is consecutive sequences of equal size ``period`` apart.
BookKeeper's encoder writes one group per run (``last == first``, ``period == 0``); we write the same bytes, and
decode both that and the merged form.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from bookie.errors import CorruptData

HEADER = struct.Struct(">ii56x")
GROUP = struct.Struct(">qqii")
assert HEADER.size == 64 and GROUP.size == 24
VERSION = 0


class SequenceGroup(NamedTuple):
    first: int  # firstSequenceStart
    last: int  # lastSequenceStart
    size: int  # sequenceSize
    period: int  # sequencePeriod

    def entry_count(self) -> int:
        """The entries in the group (not ``count``: that is tuple's, counting a value)."""
        if self.last == self.first:
            return self.size
        return ((self.last - self.first) // self.period + 1) * self.size

    def contains(self, entry_id: int) -> bool:
        offset = entry_id - self.first
        if offset < 0:
            return False
        if self.period == 0:
            return offset < self.size
        return offset % self.period < self.size and entry_id < self.last + self.size

    def entries(self) -> Iterator[int]:
        starts = [self.first] if self.period == 0 else range(self.first, self.last + 1, self.period)
        for start in starts:
            yield from range(start, start + self.size)


class AvailabilityOfEntries:
    """The entries a bookie holds for one ledger, as sequence groups."""

    __slots__ = ("_firsts", "groups")

    def __init__(self, groups: Iterable[SequenceGroup]):
        self.groups = sorted(groups)
        self._firsts = [g.first for g in self.groups]

    @classmethod
    def from_entries(cls, entry_ids: Iterable[int]) -> AvailabilityOfEntries:
        """One group per run of consecutive ids, as BookKeeper's encoder does; duplicates are ignored."""
        ids = sorted(set(entry_ids))
        groups: list[SequenceGroup] = []
        if not ids:
            return cls(groups)
        start = previous = ids[0]
        for entry in ids[1:]:
            if entry != previous + 1:
                groups.append(SequenceGroup(start, start, previous - start + 1, 0))
                start = entry
            previous = entry
        groups.append(SequenceGroup(start, start, previous - start + 1, 0))
        return cls(groups)

    @classmethod
    def decode(cls, data: bytes) -> AvailabilityOfEntries:
        if len(data) < HEADER.size:
            raise CorruptData(f"availability of entries: {len(data)} bytes, shorter than the 64-byte header")
        version, count = HEADER.unpack_from(data)
        if version > VERSION:
            raise CorruptData(f"availability of entries: unknown version {version}")
        if count < 0 or len(data) != HEADER.size + count * GROUP.size:
            raise CorruptData(f"availability of entries: {len(data)} bytes do not hold {count} groups")
        groups = [SequenceGroup(*GROUP.unpack_from(data, HEADER.size + i * GROUP.size)) for i in range(count)]
        for g in groups:
            if g.size < 0 or g.last < g.first or (g.last != g.first and g.period <= 0):
                raise CorruptData(f"availability of entries: invalid sequence group {tuple(g)}")
        return cls(groups)

    def encode(self) -> bytes:
        out = bytearray(HEADER.pack(VERSION, len(self.groups)))
        for group in self.groups:
            out += GROUP.pack(*group)
        return bytes(out)

    def __contains__(self, entry_id: int) -> bool:
        i = bisect.bisect_right(self._firsts, entry_id) - 1
        return i >= 0 and self.groups[i].contains(entry_id)

    def __iter__(self) -> Iterator[int]:
        for group in self.groups:
            yield from group.entries()

    def __len__(self) -> int:
        return sum(g.entry_count() for g in self.groups)

    def unavailable(self, expected: Iterable[int]) -> list[int]:
        """Those of the ``expected`` entry ids that this bookie does not hold, in the order given."""
        return [e for e in expected if e not in self]

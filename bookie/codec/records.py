"""Add records: a framed entry (bookie/codec/entry.py) behind its size — what a bookie journals, appends to its entry
logs (BookKeeper: bookie/Journal.java, bookie/DefaultEntryLogger.java) and stores as one add batch (the adds of a
pass over a connection's frames: bookie/codec/frames.py).

Byte layout of one record::

    offset  size  field
    0       4     size              int32, big-endian: the bytes of the framed entry that follow
    4       8     ledgerId          int64, the framed entry's header from here on (entry.py)
    12      8     entryId           int64
    20      8     lastAddConfirmed  int64, the writer's LAC when it framed the entry (piggy-back)
    28      ...   length, digest, payload

A batch is records one after the other with nothing between them: an add batch, an entry log's entries from offset
1024. A journal's metadata records (journal.py) start the same way, ``int32 size | int64
ledgerId``, and follow it with a negative marker where an entry has its entryId. An entry's location (entry log,
index) is the offset of its framed entry: 4 bytes past the start of its record.

Two walks: :func:`walk_add_batch_records` for what a client sent (a record that does not parse is a
:class:`BadRequest`), and :func:`records_in` for bytes read back (it stops where they stop parsing).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from bookie.errors import BadRequest

SIZE = struct.Struct(">i")
HEAD = struct.Struct(">iqqq")  # size | ledgerId | entryId | lastAddConfirmed
RECORD_IDS = struct.Struct(">iqq")  # size | ledgerId | entryId
LEDGER = struct.Struct(">iq")  # size | ledgerId: how every journal record starts too
LAC = struct.Struct(">q")
PREFIX = SIZE.size  # the bytes before the framed entry
LAC_OFFSET = 16  # of lastAddConfirmed in the framed entry
MIN_ADD = HEAD.size - PREFIX  # the smallest framed entry an add may carry: its ids and LAC
MIN_STORED = RECORD_IDS.size - PREFIX  # the smallest one stored (BookKeeper's DefaultEntryLogger.MIN_SANE_ENTRY_SIZE)
assert (PREFIX, MIN_ADD, MIN_STORED) == (4, 24, 16)

# An add record of a batch: (offset of the record in the batch, size of its framed entry, ledgerId, entryId,
# lastAddConfirmed). A plain tuple: these are made once per add.
Walked = tuple[int, int, int, int, int]


def size_prefix(framed: bytes | memoryview) -> bytes:
    """The 4 bytes that go before ``framed`` (for callers that join many parts at once)."""
    return SIZE.pack(len(framed))


def pack_record(framed: bytes | memoryview) -> bytes:
    """The record of a framed entry."""
    return SIZE.pack(len(framed)) + framed


def record_ledger_id(record: bytes | memoryview, offset: int = 0) -> int:
    """The ledgerId of the record (an add record or any journal record) at ``offset``."""
    ledger_id: int = LEDGER.unpack_from(record, offset)[1]
    return ledger_id


def entry_lac(framed: bytes | memoryview) -> int:
    """The lastAddConfirmed piggy-backed in a framed entry."""
    lac: int = LAC.unpack_from(framed, LAC_OFFSET)[0]
    return lac


def walk_add_batch_records(records: bytes) -> Iterator[Walked]:
    """Each add record of a batch a client sent, as :data:`Walked`; :class:`BadRequest` where one is cut short or
    its size is too small for an add or runs past the batch."""
    offset, end = 0, len(records)
    unpack = HEAD.unpack_from
    while offset < end:
        if offset + HEAD.size > end:
            raise BadRequest(f"add batch cut short at byte {offset}")
        size, ledger_id, entry_id, lac = unpack(records, offset)
        if size < MIN_ADD or offset + PREFIX + size > end:
            raise BadRequest(f"bad add record size {size} at byte {offset}")
        yield offset, size, ledger_id, entry_id, lac
        offset += PREFIX + size


def records_in(data: bytes | memoryview, offset: int = 0) -> Iterator[tuple[int, int, int, int]]:
    """``(offset, size, ledgerId, entryId)`` of each whole record in ``data`` from ``offset``, up to its end or to the
    first record that is cut short or smaller than :data:`MIN_STORED`: the records a read got, as far as they go."""
    end = len(data)
    unpack = RECORD_IDS.unpack_from
    while offset + RECORD_IDS.size <= end:
        size, ledger_id, entry_id = unpack(data, offset)
        if size < MIN_STORED or offset + PREFIX + size > end:
            return
        yield offset, size, ledger_id, entry_id
        offset += PREFIX + size

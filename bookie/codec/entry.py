"""Entry framing (BookKeeper: proto/checksum/DigestManager.java).

The bytes a client sends in an add, that the bookie journals and stores, and that a read returns::

    offset  size  field
    0       8     ledgerId          int64, big-endian
    8       8     entryId           int64
    16      8     lastAddConfirmed  int64, the writer's LAC when it framed the entry (piggy-back)
    24      8     length            int64, the ledger's payload bytes up to and including this entry
    32      D     digest            over bytes 0..31 followed by the payload (D per digest type)
    32+D    ...   payload
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from bookie.codec.digest import Digester
from bookie.errors import CorruptEntry

HEADER = struct.Struct(">qqqq")
assert HEADER.size == 32
IDS = struct.Struct(">qq")


class Entry(NamedTuple):
    ledger_id: int
    entry_id: int
    last_add_confirmed: int
    length: int
    payload: bytes


def frame_entry(digester: Digester, ledger_id: int, entry_id: int, lac: int, length: int, payload: bytes) -> bytes:
    """The framed entry for an add."""
    header = HEADER.pack(ledger_id, entry_id, lac, length)
    return header + digester.digest(header, payload) + payload


def entry_ids(framed: bytes) -> tuple[int, int]:
    """``(ledgerId, entryId)`` from a framed entry's first 16 bytes, without checking anything else."""
    return IDS.unpack_from(framed)


def parse_entry(
    digester: Digester, framed: bytes, ledger_id: int | None = None, entry_id: int | None = None, where: str = ""
) -> Entry:
    """Check the digest and, when given, the expected ids; raise :class:`CorruptEntry` naming what is wrong.

    ``where`` (e.g. the bookie it came from) is added to the error message.
    """
    size = digester.size
    suffix = f" from {where}" if where else ""
    if len(framed) < HEADER.size + size:
        raise CorruptEntry(f"entry of {len(framed)} bytes is shorter than its header{suffix}")
    lid, eid, lac, length = HEADER.unpack_from(framed)
    payload = bytes(framed[HEADER.size + size :])
    if digester.digest(bytes(framed[: HEADER.size]), payload) != framed[HEADER.size : HEADER.size + size]:
        raise CorruptEntry(f"ledger {lid} entry {eid}: digest mismatch{suffix}")
    if (ledger_id is not None and lid != ledger_id) or (entry_id is not None and eid != entry_id):
        raise CorruptEntry(f"asked for ledger {ledger_id} entry {entry_id}, got ledger {lid} entry {eid}{suffix}")
    return Entry(lid, eid, lac, length, payload)

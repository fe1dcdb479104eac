"""The explicit LAC buffer: ``int64 ledgerId | int64 lac | digest``, the digest over the first 16 bytes only."""

from __future__ import annotations

import struct

from bookie.codec.digest import Digester
from bookie.errors import CorruptEntry

LAC_HEADER = struct.Struct(">qq")


def frame_lac(digester: Digester, ledger_id: int, lac: int) -> bytes:
    header = LAC_HEADER.pack(ledger_id, lac)
    return header + digester.digest(header)


def parse_lac(digester: Digester, buffer: bytes, ledger_id: int | None = None) -> int:
    """The LAC in ``buffer``, after checking its digest (and ledger id, when given)."""
    if len(buffer) != LAC_HEADER.size + digester.size:
        raise CorruptEntry(f"LAC buffer of {len(buffer)} bytes, expected {LAC_HEADER.size + digester.size}")
    lid: int
    lac: int
    lid, lac = LAC_HEADER.unpack_from(buffer)
    if digester.digest(buffer[: LAC_HEADER.size]) != buffer[LAC_HEADER.size :]:
        raise CorruptEntry(f"ledger {lid}: LAC buffer digest mismatch")
    if ledger_id is not None and lid != ledger_id:
        raise CorruptEntry(f"LAC buffer of ledger {lid}, expected ledger {ledger_id}")
    return lac

"""Add records (``int32 size | framed entry``): packing, the strict walk of a client's batch, the lenient walk of
bytes read back."""

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bookie.codec.digest import Digester, DigestType
from bookie.codec.entry import frame_entry
from bookie.codec.records import (
    entry_lac,
    pack_record,
    record_ledger_id,
    records_in,
    size_prefix,
    walk_add_batch_records,
)
from bookie.errors import BadRequest

DIGESTER = Digester(DigestType.CRC32C)


def framed(ledger_id: int, entry_id: int, lac: int = -1, payload: bytes = b"payload") -> bytes:
    return frame_entry(DIGESTER, ledger_id, entry_id, lac, len(payload), payload)


def test_a_record_is_the_big_endian_size_then_the_framed_entry():
    entry = framed(7, 3, lac=2)
    record = pack_record(entry)
    assert record[:4] == struct.pack(">i", len(entry)) == size_prefix(entry)
    assert record[4:] == entry
    assert record_ledger_id(record) == 7
    assert entry_lac(entry) == 2


def test_the_ledger_id_of_a_record_inside_a_batch_and_of_a_journal_metadata_record():
    batch = pack_record(framed(1, 0)) + pack_record(framed(2**40, 0))
    assert record_ledger_id(batch, len(pack_record(framed(1, 0)))) == 2**40
    fence = struct.pack(">iqq", 16, 9, -0x2000)  # journal.py's fence record: size | ledgerId | marker
    assert record_ledger_id(fence) == 9


@given(st.lists(st.tuples(st.integers(0, 2**63 - 1), st.integers(-1, 2**63 - 1), st.binary(max_size=40)), max_size=8))
def test_both_walks_give_back_each_record_of_a_batch(adds):
    entries = [framed(ledger_id, entry_id, entry_id - 1, payload) for ledger_id, entry_id, payload in adds]
    batch = b"".join(pack_record(entry) for entry in entries)
    offsets = [sum(4 + len(e) for e in entries[:n]) for n in range(len(entries))]
    expected = [(at, len(e), lid, eid, eid - 1) for at, e, (lid, eid, _) in zip(offsets, entries, adds, strict=True)]
    assert list(walk_add_batch_records(batch)) == expected
    assert list(records_in(batch)) == [walked[:4] for walked in expected]
    assert [batch[at + 4 : at + 4 + size] for at, size, *_ in expected] == entries


@pytest.mark.parametrize(
    "tail, message",
    [
        (struct.pack(">iqq", 30, 1, 0), "add batch cut short at byte 47"),  # 20 of a record's first 28 bytes
        (struct.pack(">iqqq", 23, 1, 0, -1), "bad add record size 23 at byte 47"),  # no room for ids and LAC
        (struct.pack(">iqqq", 100, 1, 0, -1), "bad add record size 100 at byte 47"),  # past the batch's end
        (struct.pack(">iqqq", -5, 1, 0, -1), "bad add record size -5 at byte 47"),
    ],
)
def test_a_batch_that_does_not_parse_is_a_bad_request_naming_the_byte(tail, message):
    first = pack_record(framed(1, 0))
    assert len(first) == 47  # 4 + 32-byte header + 4-byte CRC32C + 7
    walk = walk_add_batch_records(first + tail)
    assert next(walk)[:4] == (0, 43, 1, 0)
    with pytest.raises(BadRequest, match=f"^{message}$"):
        next(walk)


def test_records_read_back_stop_where_they_stop_parsing():
    good = pack_record(framed(1, 0)) + pack_record(framed(1, 1))
    assert [r[3] for r in records_in(good + pack_record(framed(1, 2))[:-1])] == [0, 1]  # cut short
    assert [r[3] for r in records_in(good + struct.pack(">iqq", 15, 1, 2) + b"x" * 15)] == [0, 1]  # too small
    assert [r[3] for r in records_in(good + struct.pack(">iqq", 16, 1, 2))] == [0, 1, 2]  # just ids: stored
    assert [r[3] for r in records_in(good, len(good) // 2)] == [1]
    assert list(records_in(b"")) == []

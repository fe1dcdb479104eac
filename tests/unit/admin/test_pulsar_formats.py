"""Pulsar's stored metadata as a broker writes it: binary, TextFormat, and compressed with each of Pulsar's codecs
(apache/pulsar MetaStoreImpl: magic 0x4778, metadata size, ManagedLedgerInfoMetadata, compressed message)."""

from __future__ import annotations

import struct
import zlib

import pytest
from google.protobuf import text_format

from admin.pulsar import formats
from bookie._proto.pulsar_ml_data_formats_pb2 import (
    CompressionType,
    ManagedCursorInfo,
    ManagedCursorInfoMetadata,
    ManagedLedgerInfo,
    ManagedLedgerInfoMetadata,
)
from bookie._proto.pulsar_schema_storage_format_pb2 import SchemaLocator
from bookie.errors import CorruptData


def info() -> ManagedLedgerInfo:
    message = ManagedLedgerInfo()
    for lid in (7, 9, 2**40):
        message.ledgerInfo.add(ledgerId=lid, entries=10, size=1000, timestamp=1_700_000_000_000)
    message.properties.add(key="k", value="v")
    return message


def compressed(kind: int, body: bytes, codec_output: bytes, metadata_cls=ManagedLedgerInfoMetadata) -> bytes:
    metadata = metadata_cls(compressionType=kind, uncompressedSize=len(body)).SerializeToString()
    return struct.pack(">hi", 0x4778, len(metadata)) + metadata + codec_output


def lz4_literals(data: bytes) -> bytes:
    """An LZ4 block of literals only (what lz4-java writes for incompressible input)."""
    n = len(data)
    if n < 15:
        return bytes([n << 4]) + data
    rest, extra = n - 15, bytearray()
    while rest >= 255:
        extra.append(255)
        rest -= 255
    return bytes([0xF0, *extra, rest]) + data


def snappy_literals(data: bytes) -> bytes:
    """A Snappy raw block of one literal (up to 256 bytes)."""
    n, varint = len(data), bytearray()
    v = n
    while v >= 0x80:
        varint.append(v & 0x7F | 0x80)
        v >>= 7
    varint.append(v)
    assert n <= 256
    tag = bytes([(n - 1) << 2]) if n <= 60 else bytes([60 << 2, n - 1])  # 60: the length is in one more byte
    return bytes(varint) + tag + data


def test_binary_as_brokers_write_it_by_default():
    assert formats.parse_managed_ledger_info(info().SerializeToString()) == info()
    cursor = ManagedCursorInfo(cursorsLedgerId=12, markDeleteLedgerId=7, markDeleteEntryId=3)
    assert formats.parse_managed_cursor_info(cursor.SerializeToString()).cursorsLedgerId == 12


def test_text_format_of_pulsar_1():
    text = text_format.MessageToString(info()).encode()
    assert text.startswith(b"ledgerInfo {")
    assert formats.parse_managed_ledger_info(text) == info()
    cursor = formats.parse_managed_cursor_info(b"cursorsLedgerId: -1\nmarkDeleteLedgerId: 3\nmarkDeleteEntryId: 4\n")
    assert (cursor.cursorsLedgerId, cursor.markDeleteEntryId) == (-1, 4)


@pytest.mark.parametrize(
    ("kind", "codec"),
    [
        (CompressionType.ZLIB, zlib.compress),
        (CompressionType.LZ4, lz4_literals),
        (CompressionType.SNAPPY, snappy_literals),
        (CompressionType.NONE, bytes),
    ],
    ids=["zlib", "lz4", "snappy", "none"],
)
def test_compressed_with_each_codec(kind, codec):
    body = info().SerializeToString()
    assert formats.parse_managed_ledger_info(compressed(kind, body, codec(body))) == info()
    cursor = ManagedCursorInfo(cursorsLedgerId=5).SerializeToString()
    data = compressed(kind, cursor, codec(cursor), ManagedCursorInfoMetadata)
    assert formats.parse_managed_cursor_info(data).cursorsLedgerId == 5


def test_compress_zlib_is_what_a_broker_with_zlib_writes():
    data = formats.compress_zlib(info(), ManagedLedgerInfoMetadata)
    assert data[:2] == b"\x47\x78" and formats.parse_managed_ledger_info(data) == info()


def test_lz4_matches_and_overlapping_copies():
    # "abc", then a match of 9 at offset 3 (overlapping its own output), then "XYZ" as the last literals
    block = bytes([0x35]) + b"abc" + b"\x03\x00" + bytes([0x30]) + b"XYZ"
    assert formats.lz4_block_decompress(block, 15) == b"abcabcabcabcXYZ"
    long_match = bytes([0x1F]) + b"a" + b"\x01\x00" + bytes([100]) + bytes([0x10]) + b"b"  # match 4+15+100
    assert formats.lz4_block_decompress(long_match, 121) == b"a" * 120 + b"b"
    with pytest.raises(CorruptData, match="offset"):
        formats.lz4_block_decompress(bytes([0x15]) + b"a" + b"\x09\x00", 10)
    with pytest.raises(CorruptData, match="truncated"):
        formats.lz4_block_decompress(bytes([0xF0]), 10)


def test_snappy_copies():
    block = b"\x0f" + bytes([0x08]) + b"abc" + bytes([0x15, 0x03]) + bytes([0x08]) + b"XYZ"
    assert formats.snappy_decompress(block) == b"abcabcabcabcXYZ"
    two_byte_offset = b"\x08" + bytes([0x0C]) + b"abcd" + bytes([(4 - 1) << 2 | 2]) + b"\x04\x00"
    assert formats.snappy_decompress(two_byte_offset) == b"abcdabcd"
    with pytest.raises(CorruptData, match="header says"):
        formats.snappy_decompress(b"\x09" + bytes([0x00]) + b"a")


def test_a_broken_compressed_znode_falls_back_to_plain_as_pulsar_does():
    body = info().SerializeToString()
    broken = compressed(CompressionType.ZLIB, body, b"not zlib")
    with pytest.raises(CorruptData, match="neither binary protobuf nor TextFormat"):
        formats.parse_managed_ledger_info(broken)
    with pytest.raises(CorruptData):
        formats.parse_managed_ledger_info(compressed(CompressionType.ZSTD, body, b"\x28\xb5\x2f\xfd"))
    with pytest.raises(CorruptData):
        formats.parse_managed_ledger_info(b"\x47\x78\x7f\xff\xff\xff")  # metadata size past the end


def test_garbage_and_missing_required_fields_are_corrupt():
    with pytest.raises(CorruptData):
        formats.parse_managed_ledger_info(b"\x00garbage")
    with pytest.raises(CorruptData):  # ManagedCursorInfo without its required cursorsLedgerId
        formats.parse_managed_cursor_info(ManagedCursorInfo(markDeleteLedgerId=1).SerializePartialToString())
    assert formats.parse_managed_ledger_info(b"") == ManagedLedgerInfo()  # a new topic's empty znode


def test_schema_locator():
    locator = SchemaLocator()
    entry = locator.index.add(version=0, hash=b"h")
    entry.position.ledgerId, entry.position.entryId = 42, 0
    locator.info.CopyFrom(entry)
    assert formats.parse_schema_locator(locator.SerializeToString()).info.position.ledgerId == 42
    with pytest.raises(CorruptData):
        formats.parse_schema_locator(b"\xff\xff")

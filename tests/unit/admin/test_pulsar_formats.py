"""Pulsar's stored metadata as a broker writes it: binary, TextFormat, and compressed with each of Pulsar's codecs
(apache/pulsar MetaStoreImpl: magic 0x4778, metadata size, ManagedLedgerInfoMetadata, compressed message)."""

from __future__ import annotations

import struct
import zlib

import cramjam
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
        # the block formats of lz4-java's LZ4Compressor and snappy-java's Snappy.compress, and a zstd frame
        (CompressionType.LZ4, lambda body: bytes(cramjam.lz4.compress_block(body, store_size=False))),
        (CompressionType.SNAPPY, lambda body: bytes(cramjam.snappy.compress_raw(body))),
        (CompressionType.ZSTD, lambda body: bytes(cramjam.zstd.compress(body))),
        (CompressionType.NONE, bytes),
    ],
    ids=["zlib", "lz4", "snappy", "zstd", "none"],
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


@pytest.mark.parametrize("kind", [CompressionType.LZ4, CompressionType.SNAPPY, CompressionType.ZSTD])
def test_damaged_compressed_data_is_corrupt_data(kind):
    with pytest.raises(CorruptData):
        formats.decompress(kind, b"\xff" * 12, 100)


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

"""Our copies of Pulsar's messages (proto/pulsar_*.proto) against Pulsar's wire format, pinned by bytes written out
by hand: each golden below is spelled from the upstream .proto's field numbers and wire types, not produced by our
generated code, so a wrong number, type (int64 vs sint64/int32/fixed64) or enum value in proto/ fails here.

Upstream files (apache/pulsar; the fields used here are the same in every stored version read, from the oldest,
03ab0d78, to the newest, 8df09321, so in every Pulsar release that writes these znodes):

- ``managed-ledger/src/main/proto/MLDataFormats.proto`` at commit 8df09321b4e3d6d92e1bda6160518fff899db8f3:
  ``ManagedLedgerInfo {repeated LedgerInfo ledgerInfo = 1}``, ``LedgerInfo {required int64 ledgerId = 1; optional
  int64 entries = 2, size = 3, timestamp = 4}``, ``ManagedCursorInfo {required int64 cursorsLedgerId = 1; optional
  int64 markDeleteLedgerId = 2, markDeleteEntryId = 3; repeated LongProperty properties = 5; optional int64
  lastActive = 6}``, ``PositionInfo {required int64 ledgerId = 1, entryId = 2; repeated LongProperty properties =
  4}``, ``LongProperty {required string name = 1; required int64 value = 2}``, ``ManagedLedgerInfoMetadata
  {required CompressionType compressionType = 1; required int32 uncompressedSize = 2}``, ``CompressionType {NONE 0,
  LZ4 1, ZLIB 2, ZSTD 3, SNAPPY 4}``.
- ``pulsar-broker/src/main/proto/SchemaStorageFormat.proto`` (package pulsar.schema) at commit
  dcf47477dbd2be29a63fc288b5864dd7d3d217b9: ``SchemaLocator {required IndexEntry info = 1; repeated IndexEntry
  index = 2}``, ``IndexEntry {required int64 version = 1; required PositionInfo position = 2; required bytes hash =
  3}``, ``PositionInfo {required int64 ledgerId = 1, entryId = 2}``.

A tag byte is ``field number << 3 | wire type`` (0 varint, 2 length-delimited); a negative int64 is a 10-byte
varint; protobuf writes fields in number order, Java's and Python's alike.
"""

from __future__ import annotations

import pytest

from bookie._proto.pulsar_ml_data_formats_pb2 import (
    CompressionType,
    ManagedCursorInfo,
    ManagedCursorInfoMetadata,
    ManagedLedgerInfo,
    ManagedLedgerInfoMetadata,
    PositionInfo,
)
from bookie._proto.pulsar_schema_storage_format_pb2 import SchemaLocator

T0 = 1_700_000_000_000  # ms; varint 80 d0 95 ff bc 31

# ManagedLedgerInfo, two LedgerInfo: (3, 100 entries, 2048 bytes, T0) and (2**40, 5 entries, 300 bytes, T0 + 600 s)
MANAGED_LEDGER_INFO = bytes.fromhex(
    "0a 0e"  # ledgerInfo (1, LEN), 14 bytes
    " 08 03"  # ledgerId (1, varint) 3
    " 10 64"  # entries (2, varint) 100
    " 18 80 10"  # size (3, varint) 2048
    " 20 80 d0 95 ff bc 31"  # timestamp (4, varint) T0
    " 0a 13"  # ledgerInfo, 19 bytes
    " 08 80 80 80 80 80 20"  # ledgerId 2**40: past 32 bits
    " 10 05"  # entries 5
    " 18 ac 02"  # size 300
    " 20 c0 9f ba ff bc 31"  # timestamp T0 + 600,000
)

# ManagedCursorInfo of a cursor with its ledger: cursorsLedgerId 12, mark-delete (3, 99), lastActive T0 + 900 s
CURSOR_WITH_LEDGER = bytes.fromhex(
    "08 0c"  # cursorsLedgerId (1, varint) 12
    " 10 03"  # markDeleteLedgerId (2) 3
    " 18 63"  # markDeleteEntryId (3) 99
    " 30 a0 c7 cc ff bc 31"  # lastActive (6) T0 + 900,000
)

# LongProperty CompactedTopicLedger = 77: the compaction cursor names its compacted ledger so
COMPACTED_TOPIC_LEDGER = b"\x0a\x14CompactedTopicLedger\x10\x4d"  # name (1, LEN) 20 bytes | value (2, varint) 77

# ManagedCursorInfo of the compaction cursor closed cleanly: no cursor ledger (-1), its properties in the znode
CLOSED_COMPACTION_CURSOR = (
    bytes.fromhex(
        "08 ff ff ff ff ff ff ff ff ff 01"  # cursorsLedgerId -1 (int64: 10 bytes; sint64 would be 01)
        " 10 03 18 63"  # mark-delete (3, 99)
        " 2a 18"  # properties (5, LEN), 24 bytes
    )
    + COMPACTED_TOPIC_LEDGER
)

# PositionInfo, an entry of a cursor ledger: mark-delete (3, 99) and the compacted ledger in properties (4)
POSITION_INFO = bytes.fromhex("08 03 10 63 22 18") + COMPACTED_TOPIC_LEDGER

# SchemaLocator of a topic with two schema versions: info = the latest (1, ledger 42), index = both
VERSION_0 = bytes.fromhex("08 00 12 04 08 28 10 00 1a 02 aa bb")  # version 0, position (40, 0), hash aa bb
VERSION_1 = bytes.fromhex("08 01 12 04 08 2a 10 00 1a 02 cc dd")  # version 1, position (42, 0), hash cc dd
SCHEMA_LOCATOR = b"\x0a\x0c" + VERSION_1 + b"\x12\x0c" + VERSION_0 + b"\x12\x0c" + VERSION_1  # info (1), index (2)


def test_managed_ledger_info_with_two_ledgers():
    info = ManagedLedgerInfo.FromString(MANAGED_LEDGER_INFO)
    assert [(li.ledgerId, li.entries, li.size, li.timestamp) for li in info.ledgerInfo] == [
        (3, 100, 2048, T0),
        (2**40, 5, 300, T0 + 600_000),
    ]
    assert not info.ledgerInfo[0].HasField("offloadContext") and not info.HasField("terminatedPosition")
    ours = ManagedLedgerInfo()
    ours.ledgerInfo.add(ledgerId=3, entries=100, size=2048, timestamp=T0)
    ours.ledgerInfo.add(ledgerId=2**40, entries=5, size=300, timestamp=T0 + 600_000)
    assert ours.SerializeToString() == MANAGED_LEDGER_INFO


def test_cursor_with_its_ledger():
    cursor = ManagedCursorInfo.FromString(CURSOR_WITH_LEDGER)
    assert (cursor.cursorsLedgerId, cursor.markDeleteLedgerId, cursor.markDeleteEntryId) == (12, 3, 99)
    assert cursor.lastActive == T0 + 900_000 and not cursor.properties
    ours = ManagedCursorInfo(cursorsLedgerId=12, markDeleteLedgerId=3, markDeleteEntryId=99, lastActive=T0 + 900_000)
    assert ours.SerializeToString() == CURSOR_WITH_LEDGER


def test_compaction_cursor_closed_cleanly_keeps_the_compacted_ledger_in_its_znode():
    cursor = ManagedCursorInfo.FromString(CLOSED_COMPACTION_CURSOR)
    assert (cursor.cursorsLedgerId, cursor.markDeleteLedgerId, cursor.markDeleteEntryId) == (-1, 3, 99)
    assert [(p.name, p.value) for p in cursor.properties] == [("CompactedTopicLedger", 77)]
    ours = ManagedCursorInfo(cursorsLedgerId=-1, markDeleteLedgerId=3, markDeleteEntryId=99)
    ours.properties.add(name="CompactedTopicLedger", value=77)
    assert ours.SerializeToString() == CLOSED_COMPACTION_CURSOR


def test_position_in_a_cursor_ledger():
    position = PositionInfo.FromString(POSITION_INFO)
    assert (position.ledgerId, position.entryId) == (3, 99)
    assert [(p.name, p.value) for p in position.properties] == [("CompactedTopicLedger", 77)]
    ours = PositionInfo(ledgerId=3, entryId=99)
    ours.properties.add(name="CompactedTopicLedger", value=77)
    assert ours.SerializeToString() == POSITION_INFO


def test_schema_locator_with_two_versions():
    locator = SchemaLocator.FromString(SCHEMA_LOCATOR)
    entries = [locator.info, *locator.index]
    assert [(e.version, e.position.ledgerId, e.position.entryId, e.hash) for e in entries] == [
        (1, 42, 0, b"\xcc\xdd"),
        (0, 40, 0, b"\xaa\xbb"),
        (1, 42, 0, b"\xcc\xdd"),
    ]
    ours = SchemaLocator()
    for version, ledger_id, digest in [(0, 40, b"\xaa\xbb"), (1, 42, b"\xcc\xdd")]:
        entry = ours.index.add(version=version, hash=digest)
        entry.position.ledgerId, entry.position.entryId = ledger_id, 0
    ours.info.CopyFrom(ours.index[1])
    assert ours.SerializeToString() == SCHEMA_LOCATOR


@pytest.mark.parametrize(("name", "number"), [("NONE", 0), ("LZ4", 1), ("ZLIB", 2), ("ZSTD", 3), ("SNAPPY", 4)])
@pytest.mark.parametrize("metadata_cls", [ManagedLedgerInfoMetadata, ManagedCursorInfoMetadata])
def test_compression_metadata_of_a_compressed_znode(metadata_cls, name, number):
    golden = bytes([0x08, number]) + bytes.fromhex("10 d2 09")  # compressionType (1) | uncompressedSize (2) 1234
    metadata = metadata_cls.FromString(golden)
    assert (CompressionType.Name(metadata.compressionType), metadata.uncompressedSize) == (name, 1234)
    ours = metadata_cls(compressionType=CompressionType.Value(name), uncompressedSize=1234)
    assert ours.SerializeToString() == golden

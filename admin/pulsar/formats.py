"""Pulsar's stored metadata, parsed as its brokers parse it (apache/pulsar ``MetaStoreImpl``, and the older
``MetaStoreImplZookeeper`` for the text format).

A managed ledger's znode (``ManagedLedgerInfo``) and a cursor's (``ManagedCursorInfo``) hold one of:

- binary protobuf (Pulsar 2.x and later, the default);
- protobuf TextFormat (Pulsar 1.x with ``useProtobufBinaryFormatInZK=false``): brokers tried binary first and fell
  back to text, and so do we;
- compressed (``managedLedgerInfoCompressionType`` / ``managedCursorInfoCompressionType``, Pulsar 2.9+)::

      magic 0x4778 (int16, big-endian) | n (int32) | ManagedLedgerInfoMetadata (n bytes) | compressed message

  where the metadata names the codec (LZ4 raw block, ZLIB with its header, ZSTD frame, Snappy raw block) and the
  uncompressed size. Pulsar parses the whole znode as an uncompressed message when that fails; so do we.

A schema locator (``/schemas/...``) is binary ``SchemaLocator``, never compressed.
"""

from __future__ import annotations

import struct
import zlib

from google.protobuf import text_format
from google.protobuf.message import DecodeError, Message

from bookie._proto.pulsar_ml_data_formats_pb2 import (
    CompressionType,
    ManagedCursorInfo,
    ManagedCursorInfoMetadata,
    ManagedLedgerInfo,
    ManagedLedgerInfoMetadata,
    PositionInfo,
)
from bookie._proto.pulsar_schema_storage_format_pb2 import SchemaLocator
from bookie.errors import CorruptData

MAGIC = 0x4778
PREFIX = struct.Struct(">hi")  # magic, metadata size
assert PREFIX.size == 6


def _parse_binary(message: Message, data: bytes) -> Message | None:
    try:
        message.ParseFromString(data)
    except DecodeError:
        return None
    # Python's protobuf does not check required fields on parse; Java's does (and then tries the text format)
    return message if message.IsInitialized() else None


def _parse_plain(cls: type[Message], data: bytes, where: str) -> Message:
    """Binary, else TextFormat, as MetaStoreImplZookeeper read them."""
    parsed = _parse_binary(cls(), data)
    if parsed is not None:
        return parsed
    message = cls()
    try:
        text_format.Parse(data.decode("utf-8"), message)
        return message
    except (text_format.ParseError, UnicodeDecodeError):
        raise CorruptData(f"{where}: not a {cls.__name__} (neither binary protobuf nor TextFormat)") from None


def _parse(cls: type[Message], metadata_cls: type[Message], data: bytes, where: str) -> Message:
    if len(data) >= PREFIX.size and PREFIX.unpack_from(data)[0] == MAGIC:
        size = PREFIX.unpack_from(data)[1]
        metadata = metadata_cls()
        body = data[PREFIX.size + size :]
        try:
            if size < 0 or PREFIX.size + size > len(data):
                raise CorruptData("metadata size out of range")
            metadata.ParseFromString(data[PREFIX.size : PREFIX.size + size])
            kind, uncompressed = metadata.compressionType, metadata.uncompressedSize
            parsed = _parse_binary(cls(), decompress(kind, body, uncompressed))
            if parsed is not None:
                return parsed
        except (CorruptData, DecodeError, ValueError):
            pass  # Pulsar logs it and parses the whole znode as an uncompressed message
    return _parse_plain(cls, data, where)


def parse_managed_ledger_info(data: bytes, where: str = "ManagedLedgerInfo") -> ManagedLedgerInfo:
    return _parse(ManagedLedgerInfo, ManagedLedgerInfoMetadata, data, where)


def parse_managed_cursor_info(data: bytes, where: str = "ManagedCursorInfo") -> ManagedCursorInfo:
    return _parse(ManagedCursorInfo, ManagedCursorInfoMetadata, data, where)


def parse_position_info(data: bytes, where: str = "PositionInfo") -> PositionInfo:
    """An entry of a cursor ledger (binary only)."""
    parsed = _parse_binary(PositionInfo(), data)
    if parsed is None:
        raise CorruptData(f"{where}: not a PositionInfo")
    return parsed


def parse_schema_locator(data: bytes, where: str = "SchemaLocator") -> SchemaLocator:
    parsed = _parse_binary(SchemaLocator(), data)
    if parsed is None:
        raise CorruptData(f"{where}: not a SchemaLocator")
    return parsed


def compress_zlib(message: Message, metadata_cls: type[Message]) -> bytes:
    """A message as a broker with compression type ZLIB writes it (MetaStoreImpl.compressManagedInfo)."""
    body = message.SerializeToString()
    metadata = metadata_cls(compressionType=CompressionType.ZLIB, uncompressedSize=len(body)).SerializeToString()
    return bytes(PREFIX.pack(MAGIC, len(metadata)) + metadata + zlib.compress(body))


# ---- codecs (Pulsar's CompressionCodec*), decoded by cramjam: one maintained wheel for LZ4, Snappy and ZSTD ----
def decompress(kind: int, data: bytes, size: int) -> bytes:
    """``data`` decompressed to ``size`` bytes; :class:`CorruptData` when it does not decode to that size."""
    import cramjam

    try:
        if kind == CompressionType.NONE:
            out = data
        elif kind == CompressionType.ZLIB:
            out = zlib.decompress(data)
        elif kind == CompressionType.LZ4:  # lz4-java's raw block, no frame and no size prefix
            out = bytes(cramjam.lz4.decompress_block(data, output_len=size))
        elif kind == CompressionType.SNAPPY:  # snappy-java's raw block
            out = bytes(cramjam.snappy.decompress_raw(data))
        elif kind == CompressionType.ZSTD:  # a zstd frame
            out = bytes(cramjam.zstd.decompress(data, output_len=size))
        else:
            raise CorruptData(f"unknown compression type {kind}")
    except (zlib.error, cramjam.DecompressionError) as exc:
        raise CorruptData(f"{CompressionType.Name(kind)}: {exc}") from None
    if len(out) != size:
        raise CorruptData(f"decompressed to {len(out)} bytes, the metadata says {size}")
    return out

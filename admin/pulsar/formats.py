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


# ---- codecs (Pulsar's CompressionCodec*) ----
def decompress(kind: int, data: bytes, size: int) -> bytes:
    """``data`` decompressed to ``size`` bytes; :class:`CorruptData` when it does not decode to that size."""
    if kind == CompressionType.NONE:
        out = data
    elif kind == CompressionType.ZLIB:
        try:
            out = zlib.decompress(data)
        except zlib.error as exc:
            raise CorruptData(f"ZLIB: {exc}") from None
    elif kind == CompressionType.LZ4:
        out = lz4_block_decompress(data, size)
    elif kind == CompressionType.SNAPPY:
        out = snappy_decompress(data)
    elif kind == CompressionType.ZSTD:
        out = _zstd(data, size)
    else:
        raise CorruptData(f"unknown compression type {kind}")
    if len(out) != size:
        raise CorruptData(f"decompressed to {len(out)} bytes, the metadata says {size}")
    return out


def _zstd(data: bytes, size: int) -> bytes:
    try:
        import zstandard  # optional: no ZSTD in Python 3.11's standard library
    except ImportError:
        raise CorruptData("ZSTD-compressed: `pip install zstandard` to read it") from None
    try:
        return bytes(zstandard.ZstdDecompressor().decompress(data, max_output_size=size))
    except zstandard.ZstdError as exc:
        raise CorruptData(f"ZSTD: {exc}") from None


def lz4_block_decompress(data: bytes, size: int) -> bytes:
    """An LZ4 raw block (no frame), as lz4-java's compressors write it: sequences of a token (literal length,
    match length - 4), literals, a 2-byte little-endian offset; the last sequence has literals only."""
    out = bytearray()
    i, n = 0, len(data)
    try:
        while i < n:
            token = data[i]
            i += 1
            length, i = _lz4_length(data, i, token >> 4)
            out += data[i : i + length]
            i += length
            if i >= n:
                break
            offset = data[i] | data[i + 1] << 8
            i += 2
            if not 0 < offset <= len(out):
                raise CorruptData("LZ4: match offset out of range")
            match, i = _lz4_length(data, i, token & 15)
            match += 4
            start = len(out) - offset
            for k in range(match):  # byte by byte: a match may overlap what it produces
                out.append(out[start + k])
            if len(out) > size:
                raise CorruptData("LZ4: longer than the uncompressed size")
    except IndexError:
        raise CorruptData("LZ4: truncated block") from None
    return bytes(out)


def _lz4_length(data: bytes, i: int, length: int) -> tuple[int, int]:
    """A token's 4-bit length; 15 means more bytes follow, each added, until one below 255."""
    if length == 15:
        while True:
            more = data[i]
            i += 1
            length += more
            if more != 255:
                break
    return length, i


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, i
        shift += 7
        if shift > 35:
            raise CorruptData("Snappy: malformed length")


def snappy_decompress(data: bytes) -> bytes:
    """A Snappy raw block (no framing), as snappy-java's Snappy.compress writes it: the uncompressed length as a
    varint, then literals and copies tagged by their low two bits."""
    out = bytearray()
    try:
        size, i = _varint(data, 0)
        while i < len(data):
            tag = data[i]
            i += 1
            kind = tag & 3
            if kind == 0:  # literal
                length = tag >> 2
                if length >= 60:
                    extra = length - 59
                    length = int.from_bytes(data[i : i + extra], "little")
                    i += extra
                length += 1
                out += data[i : i + length]
                i += length
                continue
            if kind == 1:
                length, offset = 4 + (tag >> 2 & 7), (tag >> 5) << 8 | data[i]
                i += 1
            elif kind == 2:
                length, offset = (tag >> 2) + 1, int.from_bytes(data[i : i + 2], "little")
                i += 2
            else:
                length, offset = (tag >> 2) + 1, int.from_bytes(data[i : i + 4], "little")
                i += 4
            if not 0 < offset <= len(out):
                raise CorruptData("Snappy: copy offset out of range")
            start = len(out) - offset
            for k in range(length):
                out.append(out[start + k])
    except IndexError:
        raise CorruptData("Snappy: truncated block") from None
    if len(out) != size:
        raise CorruptData(f"Snappy: {len(out)} bytes, its header says {size}")
    return bytes(out)

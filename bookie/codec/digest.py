"""Digest types, the master key, and the per-ledger digester (BookKeeper: proto/checksum/DigestManager.java,
MacDigestManager.java).

| type   | bytes | how                                                       |
|--------|-------|-----------------------------------------------------------|
| CRC32  | 8     | zlib's CRC-32 as a big-endian int64 (4 zero bytes, CRC)   |
| CRC32C | 4     | CRC-32C (Castagnoli) as a big-endian int32                |
| HMAC   | 20    | HMAC-SHA1 keyed with SHA1(b"mac" + password)              |
| DUMMY  | 0     | none                                                      |
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import struct
import zlib

import google_crc32c

from bookie.errors import InvalidArgument


class DigestType(enum.IntEnum):
    """Numbered as ``LedgerMetadataFormat.DigestType``."""

    CRC32 = 1
    HMAC = 2
    CRC32C = 3
    DUMMY = 4

    @classmethod
    def parse(cls, name: str) -> DigestType:
        """Accept the CLI and BookKeeper spellings: crc32, crc32c, mac, hmac, dummy (any case)."""
        key = name.strip().upper()
        key = "HMAC" if key == "MAC" else key
        try:
            return cls[key]
        except KeyError:
            raise InvalidArgument(f"unknown digest type {name!r}: expected crc32, crc32c, mac or dummy") from None


DIGEST_SIZES = {DigestType.CRC32: 8, DigestType.HMAC: 20, DigestType.CRC32C: 4, DigestType.DUMMY: 0}

_CRC32 = struct.Struct(">Q")
_CRC32C = struct.Struct(">I")


def master_key(password: bytes) -> bytes:
    """``SHA1(b"ledger" + password)``: sent with adds and fence reads, checked by the bookie."""
    return hashlib.sha1(b"ledger" + password).digest()


def mac_key(password: bytes) -> bytes:
    """The HMAC digest's key, ``SHA1(b"mac" + password)``."""
    return hashlib.sha1(b"mac" + password).digest()


class Digester:
    """Computes one ledger's digest over a sequence of byte chunks."""

    __slots__ = ("_mac", "digest_type", "size")

    def __init__(self, digest_type: DigestType, password: bytes = b""):
        self.digest_type = DigestType(digest_type)
        self.size = DIGEST_SIZES[self.digest_type]
        self._mac = hmac.new(mac_key(password), digestmod=hashlib.sha1) if digest_type == DigestType.HMAC else None

    def digest(self, *chunks: bytes) -> bytes:
        """The digest bytes of the concatenation of ``chunks``."""
        kind = self.digest_type
        if kind == DigestType.CRC32C:
            crc = 0
            for chunk in chunks:
                crc = google_crc32c.extend(crc, chunk)
            return _CRC32C.pack(crc)
        if kind == DigestType.CRC32:
            crc = 0
            for chunk in chunks:
                crc = zlib.crc32(chunk, crc)
            return _CRC32.pack(crc)
        if self._mac is not None:  # HMAC
            mac = self._mac.copy()
            for chunk in chunks:
                mac.update(chunk)
            return mac.digest()
        return b""

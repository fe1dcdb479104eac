"""Ledger metadata and its serialized forms (BookKeeper: meta/LedgerMetadataSerDe.java).

Every form starts with the ASCII header ``BookieMetadataFormatVersion\\t<N>\\n``. After it:

- v3 (written): a varint32 length, then the binary ``LedgerMetadataFormat`` of that length;
- v2 (read): ``LedgerMetadataFormat`` in protobuf TextFormat;
- v1 (read): lines ``<write quorum>``, ``<ensemble size>``, ``<length>``, one ``<firstEntryId>\\t<bookie>...`` per
  segment, then optionally ``<lastEntryId>\\tCLOSED`` (``-102\\tCLOSED`` = IN_RECOVERY).
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field, replace
from typing import Any

from google.protobuf import text_format
from google.protobuf.internal.decoder import _DecodeVarint32
from google.protobuf.internal.encoder import _VarintBytes
from google.protobuf.message import DecodeError

from bookie._proto.data_formats_pb2 import LedgerMetadataFormat
from bookie.codec.digest import DigestType
from bookie.errors import CorruptData

HEADER_KEY = b"BookieMetadataFormatVersion\t"
CURRENT_VERSION = 3
IN_RECOVERY_V1 = -102


class LedgerState(enum.IntEnum):
    """Numbered as ``LedgerMetadataFormat.State``."""

    OPEN = 1
    IN_RECOVERY = 2
    CLOSED = 3


@dataclass(frozen=True)
class Segment:
    """One ensemble of the ledger, in force from ``first_entry_id``."""

    first_entry_id: int
    bookies: tuple[str, ...]


@dataclass(frozen=True)
class LedgerMetadata:
    ensemble_size: int
    write_quorum_size: int
    ack_quorum_size: int
    segments: tuple[Segment, ...]
    state: LedgerState = LedgerState.OPEN
    last_entry_id: int = -1  # meaningful only when CLOSED
    length: int = 0  # meaningful only when CLOSED
    digest_type: DigestType | None = None  # None in format v1
    password: bytes | None = field(default=None, repr=False)  # None in format v1; a secret: never in a repr
    ctime: int | None = None  # ms
    custom_metadata: dict[str, bytes] = field(default_factory=dict)
    c_token: int = 0
    format_version: int = CURRENT_VERSION

    @property
    def is_closed(self) -> bool:
        return self.state == LedgerState.CLOSED

    def segment_of(self, entry_id: int) -> Segment:
        """The segment whose ensemble holds ``entry_id``."""
        chosen = self.segments[0]
        for segment in self.segments:
            if segment.first_entry_id > entry_id:
                break
            chosen = segment
        return chosen

    def segment_end(self, index: int, last: int) -> int:
        """The last entry id of segment ``index``: the next segment's first entry - 1; ``last`` for the final one."""
        if index + 1 < len(self.segments):
            return self.segments[index + 1].first_entry_id - 1
        return last

    def with_changes(self, **changes: Any) -> LedgerMetadata:
        """A copy with the fields named changed (``dataclasses.replace``: an unknown name raises TypeError)."""
        return replace(self, **changes)


def _header(data: bytes, where: str) -> tuple[int, int]:
    """(format version, offset of the body)."""
    if not data.startswith(HEADER_KEY):
        raise CorruptData(f"{where}: not BookKeeper ledger metadata (no BookieMetadataFormatVersion header)")
    end = data.find(b"\n", len(HEADER_KEY))
    digits = data[len(HEADER_KEY) : end if end >= 0 else len(data)]
    if end < 0 or not digits.isdigit() or len(digits) > 10:
        raise CorruptData(f"{where}: malformed metadata format version header")
    return int(digits), end + 1


def serialize(md: LedgerMetadata) -> bytes:
    """Format v3, as Apache BookKeeper writes it."""
    msg = LedgerMetadataFormat(
        quorumSize=md.write_quorum_size,
        ensembleSize=md.ensemble_size,
        length=md.length,
        lastEntryId=md.last_entry_id,
        state=int(md.state),
        digestType=int(md.digest_type or DigestType.CRC32),
        password=md.password or b"",
        ackQuorumSize=md.ack_quorum_size,
        cToken=md.c_token,
    )
    for segment in md.segments:
        msg.segment.add(ensembleMember=segment.bookies, firstEntryId=segment.first_entry_id)
    if md.ctime is not None:
        msg.ctime = md.ctime
    for key, value in md.custom_metadata.items():
        msg.customMetadata.add(key=key, value=value)
    body: bytes = msg.SerializeToString()
    size: bytes = _VarintBytes(len(body))
    return HEADER_KEY + b"%d\n" % CURRENT_VERSION + size + body


def _from_proto(msg: LedgerMetadataFormat, version: int, znode_ctime: int | None) -> LedgerMetadata:
    return LedgerMetadata(
        ensemble_size=msg.ensembleSize,
        write_quorum_size=msg.quorumSize,
        ack_quorum_size=msg.ackQuorumSize if msg.HasField("ackQuorumSize") else msg.quorumSize,
        segments=tuple(Segment(s.firstEntryId, tuple(s.ensembleMember)) for s in msg.segment),
        state=LedgerState(msg.state),
        last_entry_id=msg.lastEntryId if msg.HasField("lastEntryId") else -1,
        length=msg.length,
        digest_type=DigestType(msg.digestType) if msg.HasField("digestType") else None,
        password=msg.password if msg.HasField("password") else None,
        ctime=msg.ctime if msg.HasField("ctime") else znode_ctime,
        custom_metadata={e.key: e.value for e in msg.customMetadata},
        c_token=msg.cToken,
        format_version=version,
    )


def _parse_v1(text: str, where: str) -> LedgerMetadata:
    lines = text.split("\n")
    if len(lines) < 3:
        raise CorruptData(f"{where}: format v1 needs quorum, ensemble size and length lines")
    write_quorum, ensemble_size, length = (int(line) for line in lines[:3])
    segments, state, last_entry_id = [], LedgerState.OPEN, -1
    for line in lines[3:]:
        if not line.strip():
            continue
        parts = line.split("\t")
        if parts[-1] == "CLOSED":
            last_entry_id = int(parts[0])
            state = LedgerState.IN_RECOVERY if last_entry_id == IN_RECOVERY_V1 else LedgerState.CLOSED
            if state == LedgerState.IN_RECOVERY:
                last_entry_id = -1
        else:
            segments.append(Segment(int(parts[0]), tuple(parts[1:])))
    return LedgerMetadata(
        ensemble_size=ensemble_size,
        write_quorum_size=write_quorum,
        ack_quorum_size=write_quorum,
        segments=tuple(segments),
        state=state,
        last_entry_id=last_entry_id,
        length=length,
        format_version=1,
    )


def parse(data: bytes, where: str = "ledger metadata", znode_ctime: int | None = None) -> LedgerMetadata:
    """Read metadata in format 1, 2 or 3; refuse other versions and malformed data with :class:`CorruptData`.

    ``znode_ctime`` (ms) is used when the metadata carries no ctime.
    """
    version, offset = _header(data, where)
    try:
        if version == 3:
            size, start = _DecodeVarint32(data, offset)
            if start + size != len(data):
                raise CorruptData(f"{where}: format v3 body is {len(data) - start} bytes, its prefix says {size}")
            msg = LedgerMetadataFormat()
            msg.ParseFromString(data[start:])
            return _from_proto(msg, 3, znode_ctime)
        if version == 2:
            msg = LedgerMetadataFormat()
            text_format.Parse(data[offset:].decode("utf-8"), msg)
            return _from_proto(msg, 2, znode_ctime)
        if version == 1:
            return replace(_parse_v1(data[offset:].decode("utf-8"), where), ctime=znode_ctime)
    except CorruptData:
        raise
    except (DecodeError, text_format.ParseError, ValueError, IndexError, UnicodeDecodeError) as exc:
        raise CorruptData(f"{where}: malformed format v{version} metadata ({exc})") from None
    raise CorruptData(f"{where}: unknown metadata format version {version} (this tool reads 1, 2 and 3)")


_V2_PASSWORD = re.compile(rb'^[ \t]*password[ \t]*:[ \t]*"(?:[^"\\\n]|\\.)*"[ \t]*\r?\n?', re.MULTILINE)


def without_password(data: bytes, where: str = "ledger metadata") -> bytes:
    """The serialized metadata with its password taken out, in its own format: v3 re-serialized with an empty
    password (every other field as it was), v2 without its ``password:`` line, v1 as it is (it has none)."""
    version, offset = _header(data, where)
    if version == 2:
        return _V2_PASSWORD.sub(b"", data)
    if version != 3:
        return data
    try:
        size, start = _DecodeVarint32(data, offset)
        msg = LedgerMetadataFormat()
        msg.ParseFromString(data[start : start + size])
    except (DecodeError, IndexError) as exc:
        raise CorruptData(f"{where}: malformed format v3 metadata ({exc})") from None
    if not msg.HasField("password"):
        return data
    msg.password = b""
    body: bytes = msg.SerializeToString()
    size_prefix: bytes = _VarintBytes(len(body))
    return data[:offset] + size_prefix + body

"""Apache BookKeeper's wire protocol: frames, v3 envelopes and the binary v2 protocol (proto/README.md).

Pure functions and small records, no I/O: the asyncio server protocol and the client channel sit on top.
Source of truth: BookKeeper release-4.17.4, ``BookieProtoEncoding.java`` and ``BookieProtocol.java``.

Framing (both versions; Netty's ``LengthFieldBasedFrameDecoder(maxFrameSize, 0, 4, 0, 4)``)::

    offset  size  field
    0       4     length   int32, big-endian: the body's size (the 4 bytes of the length are not counted)
    4       N     body     v3: a protobuf Request/Response; v2: a packet header and fields (below)

v2 packet header (``BookieProtocol.PacketHeader``), the first int32 of every v2 body::

    bits 31..24  version   2 (CURRENT_PROTOCOL_VERSION); version 0 = the whole int is the opcode, no flags
    bits 23..16  opcode    ADDENTRY=1 READENTRY=2 AUTH=3 BATCH_READ_ENTRY=7
    bits 15..0   flags     DO_FENCING=0x1 RECOVERY_ADD=0x2 HIGH_PRIORITY=0x4 (requests; responses send 0)

v2 bodies after the packet header (all integers big-endian; masterKey is always 20 bytes)::

    ADD request        masterKey[20] | framed entry (its first 16 bytes are ledgerId, entryId)
    READ request       ledgerId int64 | entryId int64 | masterKey[20] iff DO_FENCING and version >= 2
    BATCH_READ request ledgerId int64 | entryId int64 | requestId int64 | maxCount int32 | maxSize int64
                       | masterKey[20] iff DO_FENCING and version >= 2
    AUTH (both ways)   AuthMessage protobuf (the rest of the frame)
    ADD response       rc int32 | ledgerId int64 | entryId int64
    READ response      rc int32 | ledgerId int64 | entryId int64 | framed entry (the rest; empty on error)
    BATCH_READ resp.   rc int32 | ledgerId int64 | entryId int64 | requestId int64 | (size int32 | entry)*

READ_LAC=4, WRITE_LAC=5 and GET_BOOKIE_INFO=6 are v2 opcode numbers without a v2 layout: BookKeeper 4.17.4's
decoders reject them ("unknown op code"), and its client sends those operations as v3 frames. We do the same.
"""

from __future__ import annotations

import struct
from typing import NamedTuple, TypeVar

from google.protobuf.message import DecodeError

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.errors import MalformedFrame

# Netty's default nettyMaxFrameSizeBytes (AbstractConfiguration.DEFAULT_NETTY_MAX_FRAME_SIZE, 5 MiB). Netty compares
# it with length + 4 (lengthFieldEndOffset), so the largest body a Java peer accepts is 5 MiB - 4.
MAX_FRAME_SIZE = 5 * 1024 * 1024

LENGTH = struct.Struct(">i")
assert struct.calcsize(">i") == 4
V2_HEADER = struct.Struct(">ii")  # frame length, packet header
assert struct.calcsize(">ii") == 8
V2_READ = struct.Struct(">iiqq")  # length, header, ledgerId, entryId
assert struct.calcsize(">iiqq") == 24
V2_BATCH_READ = struct.Struct(">iiqqqiq")  # length, header, ledgerId, entryId, requestId, maxCount, maxSize
assert struct.calcsize(">iiqqqiq") == 44
V2_RESPONSE = struct.Struct(">iiiqq")  # length, header, rc, ledgerId, entryId
assert struct.calcsize(">iiiqq") == 28
V2_BATCH_RESPONSE = struct.Struct(">iiiqqq")  # ... , requestId
assert struct.calcsize(">iiiqqq") == 36
IDS = struct.Struct(">qq")
BATCH_READ_FIELDS = struct.Struct(">qqqiq")  # V2_BATCH_READ after length and header
RESPONSE_FIELDS = struct.Struct(">iqq")  # V2_RESPONSE after length and header: rc, ledgerId, entryId
REQUEST_ID = struct.Struct(">q")
MASTER_KEY_LENGTH = 20

# v2 protocol versions and opcodes (BookieProtocol)
V2_VERSION = 2  # CURRENT_PROTOCOL_VERSION
ADDENTRY = 1
READENTRY = 2
AUTH = 3
READ_LAC = 4
WRITE_LAC = 5
GET_BOOKIE_INFO = 6
BATCH_READ_ENTRY = 7
OPCODE_NAMES = {
    ADDENTRY: "ADDENTRY",
    READENTRY: "READENTRY",
    AUTH: "AUTH",
    READ_LAC: "READ_LAC",
    WRITE_LAC: "WRITE_LAC",
    GET_BOOKIE_INFO: "GET_BOOKIE_INFO",
    BATCH_READ_ENTRY: "BATCH_READ_ENTRY",
}

# v2 request flags
FLAG_NONE = 0x0
FLAG_DO_FENCING = 0x1
FLAG_RECOVERY_ADD = 0x2
FLAG_HIGH_PRIORITY = 0x4

# v3: BKPacketHeader.priority of high-priority (recovery) traffic, as the Java client sets it; a bookie treats a
# priority at least this as high
HIGH_PRIORITY = 100

# v2 packet headers with no flags: every response's, and a plain read request's
V2_ADD_HEADER = (V2_VERSION << 24) | (ADDENTRY << 16)
V2_READ_HEADER = (V2_VERSION << 24) | (READENTRY << 16)
V2_RESPONSE_LENGTH = V2_RESPONSE.size - 4  # the length field of an ADD or READ response without an entry
# BatchedReadEntryProcessor: a batch read response's fixed part, counted against its maxSize
BATCH_READ_RESPONSE_OVERHEAD = 24 + 8 + 4

# The plugin name of BookKeeper's default (no-op) auth provider on both sides (AuthProviderFactoryFactory).
AUTH_DISABLED_PLUGIN = "AuthDisabledPlugin"

# v2 return codes (BookieProtocol.E*) <-> v3 StatusCode: the same conditions, numbered differently. One table.
V2_TO_V3_STATUS: dict[int, int] = {
    0: pb.EOK,
    1: pb.ENOLEDGER,
    2: pb.ENOENTRY,
    100: pb.EBADREQ,
    101: pb.EIO,
    102: pb.EUA,
    103: pb.EBADVERSION,
    104: pb.EFENCED,
    105: pb.EREADONLY,
    106: pb.ETOOMANYREQUESTS,
    107: pb.EUNKNOWNLEDGERSTATE,
}
V3_TO_V2_STATUS: dict[int, int] = {v3: v2 for v2, v3 in V2_TO_V3_STATUS.items()}
assert len(V3_TO_V2_STATUS) == len(V2_TO_V3_STATUS) == len(pb.StatusCode.values())


def v3_status(rc: int) -> int:
    """The v3 ``StatusCode`` of a v2 return code."""
    try:
        return V2_TO_V3_STATUS[rc]
    except KeyError:
        raise MalformedFrame(f"unknown v2 return code {rc}") from None


def v2_status(status: int) -> int:
    """The v2 return code of a v3 ``StatusCode``."""
    try:
        return V3_TO_V2_STATUS[status]
    except KeyError:
        raise MalformedFrame(f"unknown v3 status code {status}") from None


# ---- framing ----


def cut_frames(buffer: bytearray, max_frame_size: int = MAX_FRAME_SIZE) -> list[bytes]:
    """Remove every complete frame from the front of ``buffer`` and return their bodies; a partial tail stays.

    Raises :class:`MalformedFrame` on a negative length or a frame (length + 4) above ``max_frame_size``, as Netty's
    frame decoder does; the connection's framing is lost then, so the caller closes it (frames cut before the bad one
    in the same call go with it: their answers could not be sent on a closing connection anyway). A length is judged
    as soon as its 4 bytes are in, without waiting for the body.
    """
    frames: list[bytes] = []
    end = len(buffer)
    offset = 0
    with memoryview(buffer) as view:
        while end - offset >= 4:
            (length,) = LENGTH.unpack_from(view, offset)
            if length < 0:
                raise MalformedFrame(f"frame length {length} is negative")
            if length + 4 > max_frame_size:
                raise MalformedFrame(f"frame of {length + 4} bytes is larger than the maximum of {max_frame_size}")
            if end - offset - 4 < length:
                break
            frames.append(view[offset + 4 : offset + 4 + length].tobytes())
            offset += 4 + length
    if offset:
        del buffer[:offset]
    return frames


def frame(body: bytes) -> bytes:
    """``body`` with its length prefix."""
    return LENGTH.pack(len(body)) + body


# ---- v3: protobuf Request/Response ----

_Message = TypeVar("_Message", pb.Request, pb.Response, pb.AuthMessage)


def _parse(message: _Message, body: bytes, what: str) -> _Message:
    """``message`` parsed from ``body``, refusing what Java's ``parseFrom`` refuses. Python's protobuf does not check
    required fields while parsing (Java does, with InvalidProtocolBufferException), hence the explicit check."""
    try:
        message.ParseFromString(body)
    except DecodeError as e:
        raise MalformedFrame(f"malformed {what} ({len(body)} bytes): {e}") from None
    if not message.IsInitialized():
        missing = ", ".join(message.FindInitializationErrors())
        raise MalformedFrame(f"malformed {what} ({len(body)} bytes): required fields missing: {missing}")
    return message


def encode_v3(message: pb.Request | pb.Response) -> bytes:
    """The frame of a v3 ``Request`` or ``Response``."""
    return frame(message.SerializeToString())


def reply_header(header: pb.BKPacketHeader) -> pb.BKPacketHeader:
    """The header of an operation's response: version, operation and txnId of the request (PacketProcessorBaseV3)."""
    return pb.BKPacketHeader(version=pb.VERSION_THREE, operation=header.operation, txnId=header.txnId)


def response_v3(header: pb.BKPacketHeader, status: int, field: str | None = None, answer: object = None) -> bytes:
    """The frame of a v3 Response to the request of ``header``: ``status``, and the operation's ``answer`` message
    in its ``field`` (the envelope's status repeats the operation's, as a Java bookie's does)."""
    message = pb.Response(header=reply_header(header), status=status)
    if field is not None:
        getattr(message, field).CopyFrom(answer)
    return encode_v3(message)


def decode_v3_request(body: bytes) -> pb.Request:
    """A v3 ``Request`` from a frame body; :class:`MalformedFrame` when it is not one (incl. a required field
    missing, as Java's ``parseFrom`` refuses)."""
    return _parse(pb.Request(), body, "v3 Request")


def decode_v3_response(body: bytes) -> pb.Response:
    """A v3 ``Response`` from a frame body; :class:`MalformedFrame` when it is not one."""
    return _parse(pb.Response(), body, "v3 Response")


# ---- v2: packet header ----


def packet_header(version: int, opcode: int, flags: int) -> int:
    """The packet header int (``PacketHeader.toInt``): version 0 is the bare opcode, without flags."""
    if version == 0:
        return opcode
    header = ((version & 0xFF) << 24) | ((opcode & 0xFF) << 16) | (flags & 0xFFFF)
    return header - (1 << 32) if header & 0x80000000 else header  # a Java int: signed


def split_header(header: int) -> tuple[int, int, int]:
    """``(version, opcode, flags)`` of a packet header (``PacketHeader.getVersion/getOpCode/getFlags``)."""
    version = header >> 24  # a signed byte, as Java's (byte) cast
    if version == 0:
        return 0, header & 0xFF, 0
    return version, (header >> 16) & 0xFF, header & 0xFFFF


# ---- v2: records ----


class AddRequestV2(NamedTuple):
    ledger_id: int  # from the entry's first 8 bytes
    entry_id: int  # from the entry's next 8 bytes
    master_key: bytes
    body: bytes | memoryview  # the framed entry (decoded: a view into the frame, not a copy)
    flags: int = FLAG_NONE  # RECOVERY_ADD, HIGH_PRIORITY
    version: int = V2_VERSION


class ReadRequestV2(NamedTuple):
    ledger_id: int
    entry_id: int
    flags: int = FLAG_NONE  # DO_FENCING, HIGH_PRIORITY
    master_key: bytes | None = None  # present iff DO_FENCING (and version >= 2)
    version: int = V2_VERSION


class BatchReadRequestV2(NamedTuple):
    ledger_id: int
    entry_id: int  # the first entry
    request_id: int  # echoed in the response: v2 has no txnId, and batches are matched by it
    max_count: int
    max_size: int
    flags: int = FLAG_NONE
    master_key: bytes | None = None
    version: int = V2_VERSION


class AuthRequestV2(NamedTuple):
    plugin_name: str
    payload: bytes
    version: int = V2_VERSION


class AddResponseV2(NamedTuple):
    rc: int  # a v2 return code
    ledger_id: int
    entry_id: int
    version: int = V2_VERSION


class ReadResponseV2(NamedTuple):
    rc: int
    ledger_id: int
    entry_id: int
    body: bytes | memoryview = b""  # the framed entry when rc is EOK (decoded: a view into the frame)
    version: int = V2_VERSION


class BatchReadResponseV2(NamedTuple):
    rc: int
    ledger_id: int
    entry_id: int
    request_id: int
    entries: tuple[bytes | memoryview, ...] = ()  # decoded: views into the frame
    version: int = V2_VERSION


class AuthResponseV2(NamedTuple):
    plugin_name: str
    payload: bytes
    version: int = V2_VERSION


RequestV2 = AddRequestV2 | ReadRequestV2 | BatchReadRequestV2 | AuthRequestV2
ResponseV2 = AddResponseV2 | ReadResponseV2 | BatchReadResponseV2 | AuthResponseV2


# ---- v2: encoding ----


def _key(master_key: bytes) -> bytes:
    if len(master_key) != MASTER_KEY_LENGTH:
        raise ValueError(f"a master key is {MASTER_KEY_LENGTH} bytes, not {len(master_key)}")
    return master_key


def _auth_message(plugin_name: str, payload: bytes) -> bytes:
    message: bytes = pb.AuthMessage(authPluginName=plugin_name, payload=payload).SerializeToString()
    return message


def encode_request_v2(request: RequestV2) -> bytes:
    """The frame of a v2 request, laid out as BookKeeper's client writes it."""
    match request:
        case AddRequestV2(_, _, key, body, flags, version):
            head = V2_HEADER.pack(4 + MASTER_KEY_LENGTH + len(body), packet_header(version, ADDENTRY, flags))
            return b"".join((head, _key(key), body))
        case ReadRequestV2(ledger_id, entry_id, flags, key, version):
            key_bytes = _key(key) if key is not None else b""
            length = V2_READ.size - 4 + len(key_bytes)
            return V2_READ.pack(length, packet_header(version, READENTRY, flags), ledger_id, entry_id) + key_bytes
        case BatchReadRequestV2(ledger_id, entry_id, request_id, max_count, max_size, flags, key, version):
            key_bytes = _key(key) if key is not None else b""
            length = V2_BATCH_READ.size - 4 + len(key_bytes)
            header = packet_header(version, BATCH_READ_ENTRY, flags)
            return V2_BATCH_READ.pack(length, header, ledger_id, entry_id, request_id, max_count, max_size) + key_bytes
        case AuthRequestV2(plugin_name, payload, version):
            message = _auth_message(plugin_name, payload)
            return V2_HEADER.pack(4 + len(message), packet_header(version, AUTH, FLAG_NONE)) + message
    raise TypeError(f"not a v2 request: {request!r}")


def add_response_v2(rc: int, ledger_id: int, entry_id: int) -> bytes:
    """The frame of a v2 ADDENTRY response (``rc`` a v2 return code)."""
    return V2_RESPONSE.pack(V2_RESPONSE_LENGTH, V2_ADD_HEADER, rc, ledger_id, entry_id)


def read_response_v2(rc: int, ledger_id: int, entry_id: int, body: bytes = b"") -> bytes:
    """The frame of a v2 READENTRY response: the framed entry when ``rc`` is EOK, else none."""
    return V2_RESPONSE.pack(V2_RESPONSE_LENGTH + len(body), V2_READ_HEADER, rc, ledger_id, entry_id) + body


_V2_RECOVERY_ADD_HEADER = packet_header(V2_VERSION, ADDENTRY, FLAG_RECOVERY_ADD | FLAG_HIGH_PRIORITY)


def add_request_v2_head(entry_size: int, master_key: bytes, recovery: bool) -> bytes:
    """The start of a v2 ADDENTRY frame, up to its entry (``entry_size`` bytes, which follow it); a recovery add has
    the RECOVERY_ADD and HIGH_PRIORITY flags."""
    header = _V2_RECOVERY_ADD_HEADER if recovery else V2_ADD_HEADER
    return V2_HEADER.pack(4 + MASTER_KEY_LENGTH + entry_size, header) + master_key


def read_requests_v2(ledger_id: int, entry_ids: list[int]) -> bytes:
    """The frames of plain v2 READENTRY requests of ``entry_ids``, one after the other."""
    pack, size = V2_READ.pack, V2_READ.size - 4
    return b"".join([pack(size, V2_READ_HEADER, ledger_id, entry_id) for entry_id in entry_ids])


def encode_response_v2(response: ResponseV2) -> bytes:
    """The frame of a v2 response, laid out as BookKeeper's bookie writes it (flags are always 0)."""
    match response:
        case AddResponseV2(rc, ledger_id, entry_id, version):
            header = packet_header(version, ADDENTRY, 0)
            return V2_RESPONSE.pack(V2_RESPONSE_LENGTH, header, rc, ledger_id, entry_id)
        case ReadResponseV2(rc, ledger_id, entry_id, body, version):
            header = packet_header(version, READENTRY, 0)
            return V2_RESPONSE.pack(V2_RESPONSE_LENGTH + len(body), header, rc, ledger_id, entry_id) + body
        case BatchReadResponseV2(rc, ledger_id, entry_id, request_id, entries, version):
            size = 32 + 4 * len(entries) + sum(map(len, entries))
            header = packet_header(version, BATCH_READ_ENTRY, 0)
            head = V2_BATCH_RESPONSE.pack(size, header, rc, ledger_id, entry_id, request_id)
            parts: list[bytes | memoryview] = [head]
            for entry in entries:
                parts.append(LENGTH.pack(len(entry)))
                parts.append(entry)
            return b"".join(parts)
        case AuthResponseV2(plugin_name, payload, version):
            message = _auth_message(plugin_name, payload)
            return V2_HEADER.pack(4 + len(message), packet_header(version, AUTH, 0)) + message
    raise TypeError(f"not a v2 response: {response!r}")


# ---- v2: decoding (a frame body, without its length) ----


def _unknown(opcode: int, what: str) -> MalformedFrame:
    name = OPCODE_NAMES.get(opcode)
    if name is not None:
        return MalformedFrame(f"v2 {what} opcode {name} ({opcode}) has no v2 layout: BookKeeper serves it over v3 only")
    return MalformedFrame(f"unknown v2 {what} opcode {opcode}")


def _need(body: bytes, size: int, what: str) -> None:
    if len(body) < size:
        raise MalformedFrame(f"truncated v2 {what}: {len(body)} bytes, needs {size}")


def _read_key(body: bytes, offset: int, what: str) -> bytes:
    _need(body, offset + MASTER_KEY_LENGTH, f"{what} (master key)")
    return bytes(body[offset : offset + MASTER_KEY_LENGTH])


def _parse_auth(body: bytes, what: str) -> pb.AuthMessage:
    return _parse(pb.AuthMessage(), bytes(body[4:]), f"AuthMessage in a v2 {what}")


def decode_request_v2(body: bytes) -> RequestV2:
    """A v2 request from a frame body (``RequestEnDeCoderPreV3.decode``)."""
    _need(body, 4, "request header")
    version, opcode, flags = split_header(LENGTH.unpack_from(body)[0])
    fencing = flags & FLAG_DO_FENCING and version >= 2
    if opcode == ADDENTRY:
        master_key = _read_key(body, 4, "ADDENTRY request")
        _need(body, 4 + MASTER_KEY_LENGTH + IDS.size, "ADDENTRY request (entry ids)")
        ledger_id, entry_id = IDS.unpack_from(body, 4 + MASTER_KEY_LENGTH)
        entry = memoryview(body)[4 + MASTER_KEY_LENGTH :]
        return AddRequestV2(ledger_id, entry_id, master_key, entry, flags, version)
    if opcode == READENTRY:
        _need(body, V2_READ.size - 4, "READENTRY request")
        ledger_id, entry_id = IDS.unpack_from(body, 4)
        key = _read_key(body, V2_READ.size - 4, "READENTRY request") if fencing else None
        return ReadRequestV2(ledger_id, entry_id, flags, key, version)
    if opcode == BATCH_READ_ENTRY:
        _need(body, V2_BATCH_READ.size - 4, "BATCH_READ_ENTRY request")
        ledger_id, entry_id, request_id, max_count, max_size = BATCH_READ_FIELDS.unpack_from(body, 4)
        key = _read_key(body, V2_BATCH_READ.size - 4, "BATCH_READ_ENTRY request") if fencing else None
        return BatchReadRequestV2(ledger_id, entry_id, request_id, max_count, max_size, flags, key, version)
    if opcode == AUTH:
        message = _parse_auth(body, "AUTH request")
        return AuthRequestV2(message.authPluginName, message.payload, version)
    raise _unknown(opcode, "request")


def decode_response_v2(body: bytes) -> ResponseV2:
    """A v2 response from a frame body (``ResponseEnDeCoderPreV3.decode``)."""
    _need(body, 4, "response header")
    version, opcode, _ = split_header(LENGTH.unpack_from(body)[0])
    if opcode == AUTH:
        message = _parse_auth(body, "AUTH response")
        return AuthResponseV2(message.authPluginName, message.payload, version)
    if opcode not in (ADDENTRY, READENTRY, BATCH_READ_ENTRY):
        raise _unknown(opcode, "response")
    name = OPCODE_NAMES[opcode]
    _need(body, V2_RESPONSE.size - 4, f"{name} response")
    rc, ledger_id, entry_id = RESPONSE_FIELDS.unpack_from(body, 4)
    if opcode == ADDENTRY:
        return AddResponseV2(rc, ledger_id, entry_id, version)
    if opcode == READENTRY:
        return ReadResponseV2(rc, ledger_id, entry_id, memoryview(body)[V2_RESPONSE.size - 4 :], version)
    _need(body, V2_BATCH_RESPONSE.size - 4, "BATCH_READ_ENTRY response")
    (request_id,) = REQUEST_ID.unpack_from(body, V2_RESPONSE.size - 4)
    entries: list[memoryview] = []
    offset, end = V2_BATCH_RESPONSE.size - 4, len(body)
    view = memoryview(body)
    while offset < end:
        _need(body, offset + 4, "BATCH_READ_ENTRY response (entry size)")
        (size,) = LENGTH.unpack_from(body, offset)
        if size < 0 or offset + 4 + size > end:
            raise MalformedFrame(
                f"truncated v2 BATCH_READ_ENTRY response: entry {len(entries)} of {size} bytes at offset "
                f"{offset} overruns the {end}-byte frame"
            )
        entries.append(view[offset + 4 : offset + 4 + size])
        offset += 4 + size
    return BatchReadResponseV2(rc, ledger_id, entry_id, request_id, tuple(entries), version)


# ---- which version a connection speaks ----


class RequestDecoder:
    """Decodes one server connection's request frames, telling v3 from v2 as BookKeeper's bookie does.

    ``BookieProtoEncoding.RequestDecoder.channelRead`` (release-4.17.4): a connection starts as v3; each frame is
    parsed as a protobuf ``Request`` and, on ``InvalidProtocolBufferException`` (not protobuf, or a required field
    missing), the same frame is decoded as v2 and the connection stays v2 for good. A v2 body can never parse as a
    ``Request``: its first byte is the version (2, or 0 for a bare opcode), which as a protobuf tag means field
    number 0, always invalid. A frame that is neither raises :class:`MalformedFrame` (Java closes the connection).
    """

    __slots__ = ("v3",)

    def __init__(self) -> None:
        self.v3 = True

    def decode(self, body: bytes) -> pb.Request | RequestV2:
        if self.v3:
            try:
                return decode_v3_request(body)
            except MalformedFrame:
                self.v3 = False
        return decode_request_v2(body)


# ---- v3 fast path: the frames of adds and plain reads, written without building protobuf objects ----
# Per entry, building a Request/Response object (and copying the entry into it) cost more than the rest of an add.
# These write the same bytes protobuf does (fields in number order; tests/unit/codec/test_wire.py compares them).

_SMALL = [bytes((n,)) for n in range(0x80)]


def varint(n: int) -> bytes:
    """A protobuf varint (int64 and enums: a negative number as its 64-bit two's complement, 10 bytes)."""
    if 0 <= n < 0x80:
        return _SMALL[n]
    if 0 < n < 0x4000:
        return bytes(((n & 0x7F) | 0x80, n >> 7))
    if 0 < n < 0x200000:
        return bytes(((n & 0x7F) | 0x80, ((n >> 7) & 0x7F) | 0x80, n >> 14))
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_ADD_HEADER = b"\x08\x03\x10\x02\x18"  # BKPacketHeader{version=VERSION_THREE, operation=ADD_ENTRY, txnId=...}
_READ_HEADER = b"\x08\x03\x10\x01\x18"  # ... operation=READ_ENTRY
_ADD_TAG, _READ_TAG = b"\xaa\x06", b"\xa2\x06"  # field 101 (addRequest/addResponse), 100 (readRequest/readResponse)


def add_request_v3(
    txn_id: int, ledger_id: int, entry_id: int, master_key: bytes, body: bytes | memoryview, recovery: bool
) -> bytes:
    """The frame of a v3 ADD_ENTRY Request (priority 100 and flag RECOVERY_ADD for a recovery add)."""
    header = _ADD_HEADER + varint(txn_id) + (b"\x20\x64" if recovery else b"")
    add = (
        b"\x08"
        + varint(ledger_id)
        + b"\x10"
        + varint(entry_id)
        + b"\x1a"
        + varint(len(master_key))
        + master_key
        + b"\x22"
        + varint(len(body))
    )
    tail = b"\xa0\x06\x01" if recovery else b""
    size = len(add) + len(body) + len(tail)
    head = b"\x0a" + _SMALL[len(header)] + header + _ADD_TAG + varint(size)
    return b"".join((LENGTH.pack(len(head) + size), head, add, body, tail))


def add_response_v3(txn_id: int, status: int, ledger_id: int, entry_id: int) -> bytes:
    """The frame of a v3 ADD_ENTRY Response (the envelope's status repeating the add's)."""
    header = _ADD_HEADER + varint(txn_id)
    code = varint(status)
    add = b"\x08" + code + b"\x10" + varint(ledger_id) + b"\x18" + varint(entry_id)
    body = b"\x0a" + _SMALL[len(header)] + header + b"\x10" + code + _ADD_TAG + _SMALL[len(add)] + add
    return LENGTH.pack(len(body)) + body


def read_request_v3(txn_id: int, ledger_id: int, entry_id: int) -> bytes:
    """The frame of a plain v3 READ_ENTRY Request."""
    header = _READ_HEADER + varint(txn_id)
    read = b"\x08" + varint(ledger_id) + b"\x10" + varint(entry_id)
    body = b"\x0a" + _SMALL[len(header)] + header + _READ_TAG + _SMALL[len(read)] + read
    return LENGTH.pack(len(body)) + body


def read_response_v3(
    txn_id: int, status: int, ledger_id: int, entry_id: int, body: bytes | None = None, max_lac: int | None = None
) -> bytes:
    """The frame of a plain v3 READ_ENTRY Response: ``body`` and ``maxLAC`` when the read succeeded."""
    header = _READ_HEADER + varint(txn_id)
    code = varint(status)
    read = b"\x08" + code + b"\x10" + varint(ledger_id) + b"\x18" + varint(entry_id)
    if body is not None:
        read += b"\x22" + varint(len(body))
    tail = b"\x28" + varint(max_lac) if max_lac is not None else b""
    size = len(read) + len(body or b"") + len(tail)
    head = b"\x0a" + _SMALL[len(header)] + header + b"\x10" + code + _READ_TAG + varint(size)
    return b"".join((LENGTH.pack(len(head) + size), head, read, body or b"", tail))

"""The per-frame work of BookKeeper's protocol for the frames that make up nearly all of its traffic: plain adds and
reads, and their answers, v3 and v2. The bookie (bookie/server/wire/) and the client
(bookie/client/connection.py) go through these functions for every frame; everything else (LAC, fencing, long
polls, auth, TLS...) through bookie/codec/wire.py.

Two implementations with one behaviour: the C extension ``bookie.codec._frames`` (built by ``pip install``; a C
compiler and Python's headers are needed), and the Python below, which runs where it was not built. Per frame,
Python costs the bookie ~7 µs and the client ~5 µs, more than the rest of an add; C ~0.5 µs
(benchmarks/wire_frames.py). tests/unit/codec/test_frames.py checks that, on generated and mutated frames, C decodes
every frame it takes exactly as protobuf (here) does, and writes the same bytes.

Scanning: ``scan_*(buffer, offset, max_frame_size) -> (offset, items, stop)`` cuts the complete frames of
``buffer`` from ``offset`` and decodes each, until one is not for it or none is left:

- ``stop`` is :data:`STOP_END` (no complete frame at ``offset``: a partial tail or nothing), :data:`STOP_OTHER`
  (the frame at ``offset`` is complete but not a plain add or read: decode it with bookie/codec/wire.py, then scan
  on after it), or :data:`STOP_NEGATIVE` / :data:`STOP_TOO_LARGE` (the length at ``offset`` is bad: the connection's
  framing is lost);
- request items (the bookie's): ``(READ, txnId or None for v2, ledgerId, entryId)``, and for each run of
  consecutive adds ``(ADDS, [(txnId or None, ledgerId, entryId), ...], {ledgerId: (masterKey, recovery, deferred
  sync)}, records, high priority)``, ``records`` being the storage record of each entry one after the other (its
  size, then the framed entry: bookie/codec/records.py), as an add batch is: the adds of a run have one priority and
  one key per ledger, of :data:`RUN_LEDGERS` ledgers at most (a run ends before an add that would break that). No
  object per add but its answer: the bookie stores a run as one add batch (one journal write);
- response items (the client's): :class:`ResponseItem` ``(ADD or READ, key, status, entry, maxLAC or -1)``, with
  ``key`` the txnId (v3) or ``(opcode, ledgerId, entryId)`` (v2), ``status`` in v3 numbering, ``entry`` the framed
  entry of a read (b"" when none) and None for an add.

C takes fewer frames than Python (a field twice, a field it does not know, an unknown enum value: STOP_OTHER), never
more, and wire.py decodes those as protobuf does; a Python frame that C leaves is decoded the same way either way.
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.codec import wire
from bookie.codec.records import SIZE
from bookie.errors import MalformedFrame

ADD, READ, ADDS = 1, 2, 3
RUN_LEDGERS = 16  # the most ledgers in one ADDS item
STOP_END, STOP_OTHER, STOP_NEGATIVE, STOP_TOO_LARGE = 0, 1, 2, 3
_FENCE, _RECOVERY_ADD = pb.ReadRequest.FENCE_LEDGER, pb.AddRequest.RECOVERY_ADD

Scan = tuple[int, list[Any], int]  # (offset, request or response items, stop)
V2Key = tuple[int, int, int]  # (opcode, ledgerId, entryId): what matches a v2 answer to its request


class ResponseItem(NamedTuple):
    """An answer to an add or a plain read, as the response scans give it (C builds them too)."""

    kind: int  # ADD or READ
    key: int | V2Key  # the txnId (v3), or the v2 key
    status: int  # v3 numbering
    entry: bytes | None  # a read's framed entry (b"" when none); None for an add
    max_lac: int  # the bookie's LAC of the ledger when a v3 read answered it; -1 unknown


# One add of add_requests_v3/_v2: (txnId, ledgerId, entryId, masterKey, record, recovery), the record a storage
# record (its size, then the framed entry); v2 frames use neither the txnId nor the ids (the entry holds them). A
# plain tuple: the client makes one per add and bookie, and a NamedTuple costs ~250 ns more to make.
AddRequest = tuple[int, int, int, bytes, bytes, bool]


def framing_error(buffer: bytes | bytearray, offset: int, stop: int, max_frame_size: int) -> MalformedFrame:
    """The error of a scan that stopped at a bad length (as wire.cut_frames words it)."""
    (length,) = wire.LENGTH.unpack_from(buffer, offset)
    if stop == STOP_NEGATIVE:
        return MalformedFrame(f"frame length {length} is negative")
    return MalformedFrame(f"frame of {length + 4} bytes is larger than the maximum of {max_frame_size}")


def next_frame(buffer: bytes | bytearray, offset: int) -> tuple[bytes, int]:
    """The body of the (complete) frame at ``offset``, and the offset after it."""
    (length,) = wire.LENGTH.unpack_from(buffer, offset)
    end = offset + 4 + length
    return bytes(buffer[offset + 4 : end]), end


def _scan(buffer: bytes | bytearray, offset: int, max_frame_size: int, decode: Any) -> Scan:
    items: list[tuple[Any, ...]] = []
    end, stop, unpack = len(buffer), STOP_END, wire.LENGTH.unpack_from
    with memoryview(buffer) as view:  # released before the caller cuts the buffer
        while end - offset >= 4:
            (length,) = unpack(view, offset)
            if length < 0:
                stop = STOP_NEGATIVE
                break
            if length + 4 > max_frame_size:
                stop = STOP_TOO_LARGE
                break
            if end - offset - 4 < length:
                break
            try:
                item = decode(view[offset + 4 : offset + 4 + length].tobytes())
            except MalformedFrame:
                item = None
            if item is None:
                stop = STOP_OTHER
                break
            items.append(item)
            offset += 4 + length
    return offset, items, stop


def scan_none(buffer: bytes | bytearray, offset: int, max_frame_size: int) -> Scan:
    """A scan that takes no frame: the next complete one is STOP_OTHER (the bookie's for a connection whose every
    request wire.py decodes)."""
    return _scan(buffer, offset, max_frame_size, lambda body: None)


# ---- requests (the bookie) ----


def _request_v3(body: bytes) -> tuple[Any, ...] | None:
    request = wire.decode_v3_request(body)
    header = request.header
    if header.version != pb.VERSION_THREE:
        return None
    if header.operation == pb.ADD_ENTRY and request.HasField("addRequest") and not request.HasField("readRequest"):
        add = request.addRequest
        key = (add.masterKey, add.HasField("flag") and add.flag == _RECOVERY_ADD, add.writeFlags & 1)
        body = add.body
        record = SIZE.pack(len(body)) + body
        return ADD, header.txnId, add.ledgerId, add.entryId, key, record, header.priority >= wire.HIGH_PRIORITY
    if header.operation == pb.READ_ENTRY and request.HasField("readRequest") and not request.HasField("addRequest"):
        read = request.readRequest
        if read.HasField("previousLAC") or (read.HasField("flag") and read.flag == _FENCE):
            return None
        return READ, header.txnId, read.ledgerId, read.entryId
    return None


def _request_v2(body: bytes) -> tuple[Any, ...] | None:
    request = wire.decode_request_v2(body)
    if isinstance(request, wire.AddRequestV2):
        key = (request.master_key, bool(request.flags & wire.FLAG_RECOVERY_ADD), 0)
        record = SIZE.pack(len(request.body)) + bytes(request.body)
        high = bool(request.flags & wire.FLAG_HIGH_PRIORITY)
        return ADD, None, request.ledger_id, request.entry_id, key, record, high
    if isinstance(request, wire.ReadRequestV2) and request.master_key is None:
        return READ, None, request.ledger_id, request.entry_id
    return None


def _runs(decoded: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The request items of frames decoded one by one: each run of adds as one ADDS item. A run ends before an add
    of another priority, of a ledger it has under another key, or of a ledger beyond :data:`RUN_LEDGERS`."""
    items: list[Any] = []
    run: list[Any] = []  # [answers, keys, records, high] of the run being made; empty between runs
    for item in decoded:
        if item[0] == READ:
            items.append(item)
            run = []
            continue
        _, txn_id, ledger_id, entry_id, key, record, high = item
        keys = run[1] if run else {}
        full = ledger_id not in keys and len(keys) == RUN_LEDGERS
        if not run or high != run[3] or keys.get(ledger_id, key) != key or full:
            run = [[], {}, [], high]
            items.append(run)
        run[0].append((txn_id, ledger_id, entry_id))
        run[1].setdefault(ledger_id, key)
        run[2].append(record)
    return [(ADDS, i[0], i[1], b"".join(i[2]), i[3]) if isinstance(i, list) else i for i in items]


def _scan_requests_v3(buffer: bytes | bytearray, offset: int, max_frame_size: int) -> Scan:
    offset, decoded, stop = _scan(buffer, offset, max_frame_size, _request_v3)
    return offset, _runs(decoded), stop


def _scan_requests_v2(buffer: bytes | bytearray, offset: int, max_frame_size: int) -> Scan:
    offset, decoded, stop = _scan(buffer, offset, max_frame_size, _request_v2)
    return offset, _runs(decoded), stop


# ---- responses (the client) ----


def _response_v3(body: bytes) -> ResponseItem | None:
    response = wire.decode_v3_response(body)
    header = response.header
    if header.version != pb.VERSION_THREE or (response.HasField("readResponse") and response.HasField("addResponse")):
        return None
    if header.operation == pb.ADD_ENTRY and not response.HasField("readResponse"):
        status = response.addResponse.status if response.HasField("addResponse") else response.status
        return ResponseItem(ADD, header.txnId, status, None, -1)
    if header.operation == pb.READ_ENTRY and not response.HasField("addResponse"):
        return read_item(response)
    return None


def read_item(response: pb.Response) -> ResponseItem:
    """The response item of a v3 answer to a read (the client's, also for what the scans leave to wire.py)."""
    if not response.HasField("readResponse"):
        return ResponseItem(READ, response.header.txnId, response.status, b"", -1)
    read = response.readResponse
    max_lac = read.maxLAC if read.HasField("maxLAC") else -1
    return ResponseItem(READ, response.header.txnId, read.status, read.body, max_lac)


def response_item_v2(response: wire.ResponseV2) -> ResponseItem | None:
    """The response item of a v2 answer to an add or a read; None for any other."""
    if isinstance(response, wire.AddResponseV2):
        key = (wire.ADDENTRY, response.ledger_id, response.entry_id)
        return ResponseItem(ADD, key, wire.v3_status(response.rc), None, -1)
    if isinstance(response, wire.ReadResponseV2):
        key = (wire.READENTRY, response.ledger_id, response.entry_id)
        return ResponseItem(READ, key, wire.v3_status(response.rc), bytes(response.body), -1)
    return None


def _response_v2(body: bytes) -> ResponseItem | None:
    return response_item_v2(wire.decode_response_v2(body))


def _scan_responses_v3(buffer: bytes | bytearray, offset: int, max_frame_size: int) -> Scan:
    return _scan(buffer, offset, max_frame_size, _response_v3)


def _scan_responses_v2(buffer: bytes | bytearray, offset: int, max_frame_size: int) -> Scan:
    return _scan(buffer, offset, max_frame_size, _response_v2)


# ---- encoding ----


def _add_responses(answers: list[tuple[int | None, int, int]], statuses: list[int]) -> bytes:
    """The frames answering adds: each ``(txnId or None for v2, ledgerId, entryId)`` with its v3 status."""
    if len(answers) != len(statuses):
        raise ValueError("as many statuses as answers")
    parts = []
    for (txn_id, ledger_id, entry_id), status in zip(answers, statuses, strict=True):
        if txn_id is None:
            try:
                rc = wire.V3_TO_V2_STATUS[status]
            except KeyError:
                raise ValueError(f"unknown v3 status code {status}") from None
            parts.append(wire.add_response_v2(rc, ledger_id, entry_id))
        else:
            parts.append(wire.add_response_v3(txn_id, status, ledger_id, entry_id))
    return b"".join(parts)


def _check_adds(adds: list[AddRequest]) -> None:
    for add in adds:
        if len(add) != 6 or not isinstance(add[3], bytes) or not isinstance(add[4], bytes):
            raise TypeError("each add is (txn, ledgerId, entryId, masterKey, record, recovery)")
        if len(add[4]) < SIZE.size:
            raise ValueError("a record is at least its 4-byte size")


def _add_requests_v3(adds: list[AddRequest]) -> bytes:
    """The v3 add request of each add, one after the other: the client's adds to one bookie in one turn of its
    event loop. Each entry is copied from its record once."""
    _check_adds(adds)
    return b"".join(
        wire.add_request_v3(txn_id, ledger_id, entry_id, master_key, memoryview(record)[4:], recovery)
        for txn_id, ledger_id, entry_id, master_key, record, recovery in adds
    )


def _add_requests_v2(adds: list[AddRequest]) -> bytes:
    """The v2 ADDENTRY frame of each add, one after the other, each entry copied from its record once."""
    _check_adds(adds)
    if any(len(add[3]) != wire.MASTER_KEY_LENGTH for add in adds):
        raise ValueError("a v2 masterKey is 20 bytes")
    parts: list[bytes | memoryview] = []
    for _, _, _, master_key, record, recovery in adds:
        parts += (wire.add_request_v2_head(len(record) - SIZE.size, master_key, recovery), memoryview(record)[4:])
    return b"".join(parts)


def _read_requests_v3(first_txn_id: int, ledger_id: int, entry_ids: list[int]) -> bytes:
    """The plain v3 reads of ``entry_ids``, their txnIds counting up from ``first_txn_id``."""
    return b"".join(wire.read_request_v3(first_txn_id + i, ledger_id, e) for i, e in enumerate(entry_ids))


# C unless it was not built, or BKCTL_FRAMES=python asks for the Python (tests run the bookie and client on both)
_c: Any = None
if os.environ.get("BKCTL_FRAMES") != "python":
    try:
        from bookie.codec import _frames as _c  # type: ignore[attr-defined,no-redef,unused-ignore]
    except ImportError:  # not built (no C compiler where it was installed): the Python above
        pass
ACCELERATED = _c is not None
if ACCELERATED:
    _c.set_response_item(ResponseItem)  # the type of the response items it builds
scan_requests_v3 = _c.scan_requests_v3 if ACCELERATED else _scan_requests_v3
scan_requests_v2 = _c.scan_requests_v2 if ACCELERATED else _scan_requests_v2
scan_responses_v3 = _c.scan_responses_v3 if ACCELERATED else _scan_responses_v3
scan_responses_v2 = _c.scan_responses_v2 if ACCELERATED else _scan_responses_v2
add_responses = _c.add_responses if ACCELERATED else _add_responses
read_response_v3 = _c.read_response_v3 if ACCELERATED else wire.read_response_v3
read_request_v3 = _c.read_request_v3 if ACCELERATED else wire.read_request_v3
read_requests_v3 = _c.read_requests_v3 if ACCELERATED else _read_requests_v3
add_requests_v3 = _c.add_requests_v3 if ACCELERATED else _add_requests_v3
add_requests_v2 = _c.add_requests_v2 if ACCELERATED else _add_requests_v2

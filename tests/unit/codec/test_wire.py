"""BookKeeper's wire protocol codec. Golden bytes are written out by hand from BookKeeper 4.17.4's Java layout
(BookieProtoEncoding.java, BookieProtocol.java, protobuf's encoding of BookkeeperProtocol.proto), never via the
encoder under test."""

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.codec import wire
from bookie.codec.wire import (
    AddRequestV2,
    AddResponseV2,
    AuthRequestV2,
    AuthResponseV2,
    BatchReadRequestV2,
    BatchReadResponseV2,
    ReadRequestV2,
    ReadResponseV2,
)
from bookie.errors import MalformedFrame

KEY = bytes(range(20))
L1 = bytes(7) + b"\x01"  # int64 1
L2 = bytes(7) + b"\x02"
MINUS_1 = b"\xff" * 8
ENTRY = L1 + L2 + b"payload"  # a framed entry starts with its ledger and entry ids


def body(frame: bytes) -> bytes:
    return frame[4:]


# ---- v2 golden bytes ----

V2_REQUESTS = [
    pytest.param(
        AddRequestV2(1, 2, KEY, ENTRY, wire.FLAG_RECOVERY_ADD | wire.FLAG_HIGH_PRIORITY),
        # length 4 + 20 + 23 = 47 | version 2, ADDENTRY, flags RECOVERY_ADD|HIGH_PRIORITY | key | entry
        b"\x00\x00\x00\x2f" + b"\x02\x01\x00\x06" + KEY + ENTRY,
        id="add-recovery",
    ),
    pytest.param(
        ReadRequestV2(1, 2),
        b"\x00\x00\x00\x14" + b"\x02\x02\x00\x00" + L1 + L2,
        id="read",
    ),
    pytest.param(
        ReadRequestV2(1, -1, wire.FLAG_DO_FENCING | wire.FLAG_HIGH_PRIORITY, KEY),
        # with DO_FENCING the 20-byte master key follows the ids: length 4 + 16 + 20 = 40
        b"\x00\x00\x00\x28" + b"\x02\x02\x00\x05" + L1 + MINUS_1 + KEY,
        id="read-fencing",
    ),
    pytest.param(
        BatchReadRequestV2(1, 2, 9, 100, 65536),
        # ledgerId | entryId | requestId int64 | maxCount int32 | maxSize int64: length 4 + 36 = 40
        b"\x00\x00\x00\x28"
        + b"\x02\x07\x00\x00"
        + L1
        + L2
        + bytes(7)
        + b"\x09"
        + b"\x00\x00\x00\x64"
        + b"\x00\x00\x00\x00\x00\x01\x00\x00",
        id="batch-read",
    ),
    pytest.param(
        BatchReadRequestV2(1, 2, 9, 100, 65536, wire.FLAG_DO_FENCING, KEY),
        b"\x00\x00\x00\x3c"
        + b"\x02\x07\x00\x01"
        + L1
        + L2
        + bytes(7)
        + b"\x09"
        + b"\x00\x00\x00\x64"
        + b"\x00\x00\x00\x00\x00\x01\x00\x00"
        + KEY,
        id="batch-read-fencing",
    ),
    pytest.param(
        AuthRequestV2("AuthDisabledPlugin", b""),
        # AuthMessage: field 1 (string, 18 bytes), field 2 (bytes, empty): 22 bytes; length 4 + 22 = 26
        b"\x00\x00\x00\x1a" + b"\x02\x03\x00\x00" + b"\x0a\x12AuthDisabledPlugin" + b"\x12\x00",
        id="auth",
    ),
]

V2_RESPONSES = [
    pytest.param(
        AddResponseV2(104, 1, 2),  # EFENCED
        b"\x00\x00\x00\x18" + b"\x02\x01\x00\x00" + b"\x00\x00\x00\x68" + L1 + L2,
        id="add",
    ),
    pytest.param(
        ReadResponseV2(0, 1, 2, ENTRY),
        b"\x00\x00\x00\x2f" + b"\x02\x02\x00\x00" + b"\x00\x00\x00\x00" + L1 + L2 + ENTRY,
        id="read",
    ),
    pytest.param(
        ReadResponseV2(2, 1, 2),  # ENOENTRY: no body
        b"\x00\x00\x00\x18" + b"\x02\x02\x00\x00" + b"\x00\x00\x00\x02" + L1 + L2,
        id="read-noentry",
    ),
    pytest.param(
        BatchReadResponseV2(0, 1, 2, 9, (b"abc", b"")),
        # rc | ledgerId | entryId | requestId | (int32 size | entry)*: length 32 + 4 + 3 + 4 = 43
        b"\x00\x00\x00\x2b"
        + b"\x02\x07\x00\x00"
        + bytes(4)
        + L1
        + L2
        + bytes(7)
        + b"\x09"
        + b"\x00\x00\x00\x03abc"
        + b"\x00\x00\x00\x00",
        id="batch-read",
    ),
    pytest.param(
        AuthResponseV2("AuthDisabledPlugin", b"\x01"),
        b"\x00\x00\x00\x1b" + b"\x02\x03\x00\x00" + b"\x0a\x12AuthDisabledPlugin" + b"\x12\x01\x01",
        id="auth",
    ),
]


@pytest.mark.parametrize("request_,golden", V2_REQUESTS)
def test_v2_request_golden_bytes(request_, golden):
    assert wire.encode_request_v2(request_) == golden
    assert wire.decode_request_v2(body(golden)) == request_


@pytest.mark.parametrize("response,golden", V2_RESPONSES)
def test_v2_response_golden_bytes(response, golden):
    assert wire.encode_response_v2(response) == golden
    assert wire.decode_response_v2(body(golden)) == response


def test_v2_version_zero_header_is_the_bare_opcode_without_flags():
    golden = b"\x00\x00\x00\x14" + b"\x00\x00\x00\x02" + L1 + L2
    request = wire.decode_request_v2(body(golden))
    assert request == ReadRequestV2(1, 2, 0, None, 0)
    assert wire.encode_request_v2(request) == golden
    # version 0 carries no flags, so DO_FENCING and its master key cannot be sent (as in Java's PacketHeader)
    assert wire.encode_request_v2(ReadRequestV2(1, 2, wire.FLAG_DO_FENCING, None, 0)) == golden


def test_v2_add_takes_ids_from_the_entry_not_the_record():
    """As Java's decoder: the ids on the wire are the entry's own first 16 bytes."""
    frame = wire.encode_request_v2(AddRequestV2(99, 99, KEY, ENTRY))
    assert wire.decode_request_v2(body(frame))[:2] == (1, 2)


def test_packet_header_is_a_signed_java_int():
    assert wire.packet_header(2, wire.READENTRY, 0x8001) == 0x02028001
    assert wire.packet_header(0x80, 1, 0) == -0x7FFF0000
    assert wire.split_header(0x02070004) == (2, 7, 4)
    assert wire.split_header(0x00000003) == (0, 3, 0)


# ---- v3 golden bytes ----

HEADER_ADD_5 = b"\x0a\x06" + b"\x08\x03\x10\x02\x18\x05"  # header (1): version 3, ADD_ENTRY, txnId 5


def test_v3_add_request_golden_bytes():
    request = pb.Request(
        header=pb.BKPacketHeader(version=pb.VERSION_THREE, operation=pb.ADD_ENTRY, txnId=5),
        addRequest=pb.AddRequest(ledgerId=1, entryId=2, masterKey=b"k", body=b"b"),
    )
    request.requestContext.add(key="a", value="b")
    golden = (
        b"\x00\x00\x00\x1e"
        + HEADER_ADD_5
        + b"\xaa\x06\x0a"
        + b"\x08\x01\x10\x02\x1a\x01k\x22\x01b"  # addRequest (101), 10 bytes
        + b"\xc2\x0c\x06"
        + b"\x0a\x01a\x12\x01b"  # requestContext (200): ContextPair{key, value}
    )
    assert wire.encode_v3(request) == golden
    assert wire.decode_v3_request(body(golden)) == request


def test_v3_fence_read_request_golden_bytes():
    request = pb.Request(
        header=pb.BKPacketHeader(version=pb.VERSION_THREE, operation=pb.READ_ENTRY, txnId=1, priority=100),
        readRequest=pb.ReadRequest(flag=pb.ReadRequest.FENCE_LEDGER, ledgerId=1, entryId=-1, masterKey=b"k"),
    )
    golden = (
        b"\x00\x00\x00\x20"
        + b"\x0a\x08\x08\x03\x10\x01\x18\x01\x20\x64"  # header with priority (4) = 100
        + b"\xa2\x06\x13"  # readRequest (100), 19 bytes
        + b"\x08\x01\x10"
        + b"\xff" * 9
        + b"\x01"
        + b"\x1a\x01k"  # entryId -1: a 10-byte varint
        + b"\xa0\x06\x01"  # flag (100) = FENCE_LEDGER, after the lower field numbers
    )
    assert wire.encode_v3(request) == golden
    assert wire.decode_v3_request(body(golden)) == request


def test_v3_response_golden_bytes():
    response = pb.Response(
        header=pb.BKPacketHeader(version=pb.VERSION_THREE, operation=pb.ADD_ENTRY, txnId=5),
        status=pb.EOK,
        addResponse=pb.AddResponse(status=pb.EFENCED, ledgerId=1, entryId=2),
    )
    golden = b"\x00\x00\x00\x14" + HEADER_ADD_5 + b"\x10\x00" + b"\xaa\x06\x07" + b"\x08\xf8\x03\x10\x01\x18\x02"
    assert wire.encode_v3(response) == golden
    assert wire.decode_v3_response(body(golden)) == response


def test_v3_auth_and_start_tls_fields():
    auth = pb.Response(
        header=pb.BKPacketHeader(version=pb.VERSION_THREE, operation=pb.AUTH, txnId=1),
        status=pb.EOK,
        authResponse=pb.AuthMessage(authPluginName="p", payload=b""),
    )
    assert body(wire.encode_v3(auth)).endswith(b"\xb2\x06\x05\x0a\x01p\x12\x00")  # authResponse (102)
    tls = pb.Request(
        header=pb.BKPacketHeader(version=pb.VERSION_THREE, operation=pb.START_TLS, txnId=1),
        startTLSRequest=pb.StartTLSRequest(),
    )
    assert body(wire.encode_v3(tls)) == b"\x0a\x06\x08\x03\x10\x09\x18\x01" + b"\xd2\x06\x00"  # (106), empty


def test_v3_envelopes_have_bookkeepers_field_numbers():
    """BookkeeperProtocol.proto at release-4.17.4, written out: a renumbered field would break every Java peer."""
    operations = [
        "read",
        "add",
        "auth",
        "writeLac",
        "readLac",
        "getBookieInfo",
        "startTLS",
        "forceLedger",
        "getListOfEntriesOfLedger",
    ]
    request = {"header": 1, "requestContext": 200} | {f"{op}Request": 100 + i for i, op in enumerate(operations)}
    response = {"header": 1, "status": 2} | {f"{op}Response": 100 + i for i, op in enumerate(operations)}
    assert {f.name: f.number for f in pb.Request.DESCRIPTOR.fields} == request
    assert {f.name: f.number for f in pb.Response.DESCRIPTOR.fields} == response
    assert {f.name: f.number for f in pb.AuthMessage.DESCRIPTOR.fields} == {"authPluginName": 1, "payload": 2}
    assert {f.name: f.number for f in pb.ContextPair.DESCRIPTOR.fields} == {"key": 1, "value": 2}
    assert dict(pb.OperationType.items()) == {
        "READ_ENTRY": 1,
        "ADD_ENTRY": 2,
        "RANGE_READ_ENTRY": 3,
        "RANGE_ADD_ENTRY": 4,
        "AUTH": 5,
        "WRITE_LAC": 6,
        "READ_LAC": 7,
        "GET_BOOKIE_INFO": 8,
        "START_TLS": 9,
        "FORCE_LEDGER": 10,
        "GET_LIST_OF_ENTRIES_OF_LEDGER": 11,
        "BATCH_READ_ENTRY": 12,
    }


def test_v3_batch_read_operation_parses():
    """BATCH_READ_ENTRY (12) must be in OperationType, or a header carrying it would not parse (proto2)."""
    assert wire.decode_v3_request(b"\x0a\x06\x08\x03\x10\x0c\x18\x01").header.operation == 12


def test_v3_missing_required_field_is_malformed():
    with pytest.raises(MalformedFrame, match=r"malformed v3 Request .*required fields missing: header\.txnId"):
        wire.decode_v3_request(b"\x0a\x04\x08\x03\x10\x02")  # header without txnId
    with pytest.raises(MalformedFrame, match=r"malformed v3 Response .*required fields missing: status"):
        wire.decode_v3_response(HEADER_ADD_5)  # no status


# ---- v2 / v3 detection ----


def test_connection_turns_v2_for_good_at_its_first_non_protobuf_frame():
    decoder = wire.RequestDecoder()
    v3 = body(
        wire.encode_v3(
            pb.Request(
                header=pb.BKPacketHeader(version=3, operation=pb.READ_LAC, txnId=1),
                readLacRequest=pb.ReadLacRequest(ledgerId=1),
            )
        )
    )
    assert decoder.decode(v3).readLacRequest.ledgerId == 1
    assert decoder.v3
    assert decoder.decode(body(wire.encode_request_v2(ReadRequestV2(1, 2)))) == ReadRequestV2(1, 2)
    assert not decoder.v3
    # From then on a v3 frame is read as v2, as Java's RequestDecoder does: 0a 06 08 03 is "version 10, opcode 6"
    with pytest.raises(MalformedFrame, match=r"v2 request opcode GET_BOOKIE_INFO \(6\)"):
        decoder.decode(v3)


def test_first_v2_frame_of_a_connection_is_decoded():
    decoder = wire.RequestDecoder()
    for golden in (b"\x02\x01\x00\x00" + KEY + ENTRY, b"\x00\x00\x00\x02" + L1 + L2):
        decoder.v3 = True
        assert decoder.decode(golden) is not None
        assert not decoder.v3


# ---- status codes ----


def test_status_table_pairs_the_same_conditions():
    pairs = {
        "EOK": 0,
        "ENOLEDGER": 1,
        "ENOENTRY": 2,
        "EBADREQ": 100,
        "EIO": 101,
        "EUA": 102,
        "EBADVERSION": 103,
        "EFENCED": 104,
        "EREADONLY": 105,
        "ETOOMANYREQUESTS": 106,
        "EUNKNOWNLEDGERSTATE": 107,
    }
    for name, v2 in pairs.items():
        assert wire.v3_status(v2) == pb.StatusCode.Value(name)
        assert wire.v2_status(pb.StatusCode.Value(name)) == v2
    with pytest.raises(MalformedFrame, match="unknown v2 return code 3"):
        wire.v3_status(3)
    with pytest.raises(MalformedFrame, match="unknown v3 status code 1"):
        wire.v2_status(1)


# ---- frame cutter ----


def test_cutter_keeps_the_partial_tail():
    buffer = bytearray(b"\x00\x00\x00\x02ab" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x03c")
    assert wire.cut_frames(buffer) == [b"ab", b""]
    assert buffer == b"\x00\x00\x00\x03c"
    buffer += b"de\x00\x00"
    assert wire.cut_frames(buffer) == [b"cde"]
    assert buffer == b"\x00\x00"


def test_cutter_rejects_a_negative_length():
    with pytest.raises(MalformedFrame, match="frame length -1 is negative"):
        wire.cut_frames(bytearray(b"\xff\xff\xff\xff"))


def test_cutter_rejects_an_oversized_frame_before_its_body_arrives():
    largest = wire.MAX_FRAME_SIZE - 4  # Netty counts the 4 length bytes against nettyMaxFrameSizeBytes
    assert wire.cut_frames(bytearray(largest.to_bytes(4, "big"))) == []
    with pytest.raises(MalformedFrame, match=f"frame of {wire.MAX_FRAME_SIZE + 1} bytes is larger than the maximum"):
        wire.cut_frames(bytearray((largest + 1).to_bytes(4, "big")))
    with pytest.raises(MalformedFrame, match="larger than the maximum of 10"):
        wire.cut_frames(bytearray(b"\x00\x00\x00\x07"), max_frame_size=10)


@given(
    bodies=st.lists(st.binary(max_size=40), max_size=12),
    cuts=st.lists(st.integers(min_value=0, max_value=1000), max_size=20),
)
def test_cutter_yields_the_same_frames_however_the_stream_is_chunked(bodies, cuts):
    stream = b"".join(wire.frame(b) for b in bodies)
    points = sorted({c % (len(stream) + 1) for c in cuts} | {0, len(stream)})
    buffer, frames = bytearray(), []
    for start, end in itertools.pairwise(points):
        buffer += stream[start:end]
        frames += wire.cut_frames(buffer)
    assert frames == bodies
    assert buffer == b""


# ---- round trips ----

ids = st.integers(min_value=-(2**63), max_value=2**63 - 1)
versions = st.integers(min_value=1, max_value=127)  # a Java byte; version 0 carries no flags (tested above)
flags = st.integers(min_value=0, max_value=0xFFFF)
rcs = st.sampled_from(list(wire.V2_TO_V3_STATUS))
keys = st.binary(min_size=20, max_size=20)
entries = st.builds(
    lambda lid, e, rest: lid.to_bytes(8, "big", signed=True) + e.to_bytes(8, "big", signed=True) + rest,
    ids,
    ids,
    st.binary(max_size=64),
)


@given(
    st.one_of(
        st.builds(
            lambda e, k, f, v: AddRequestV2(*wire.IDS.unpack_from(e), k, e, f, v), entries, keys, flags, versions
        ),
        st.builds(
            lambda lid, e, f, k, v: ReadRequestV2(lid, e, f, k if f & 1 and v >= 2 else None, v),
            ids,
            ids,
            flags,
            keys,
            versions,
        ),
        st.builds(
            lambda lid, e, r, c, s, f, k, v: BatchReadRequestV2(lid, e, r, c, s, f, k if f & 1 and v >= 2 else None, v),
            ids,
            ids,
            ids,
            st.integers(-(2**31), 2**31 - 1),
            ids,
            flags,
            keys,
            versions,
        ),
        st.builds(AuthRequestV2, st.text(max_size=20), st.binary(max_size=20), versions),
    )
)
def test_v2_request_round_trip(request_):
    assert wire.decode_request_v2(body(wire.encode_request_v2(request_))) == request_


@given(
    st.one_of(
        st.builds(AddResponseV2, rcs, ids, ids, versions),
        st.builds(ReadResponseV2, rcs, ids, ids, st.binary(max_size=64), versions),
        st.builds(
            BatchReadResponseV2, rcs, ids, ids, ids, st.lists(st.binary(max_size=16), max_size=5).map(tuple), versions
        ),
        st.builds(AuthResponseV2, st.text(max_size=20), st.binary(max_size=20), versions),
    )
)
def test_v2_response_round_trip(response):
    assert wire.decode_response_v2(body(wire.encode_response_v2(response))) == response


# ---- malformed v2 ----


@pytest.mark.parametrize("request_,golden", V2_REQUESTS)
def test_truncated_v2_request_names_what_is_missing(request_, golden):
    shortest = {AddRequestV2: 40, ReadRequestV2: 20, BatchReadRequestV2: 40, AuthRequestV2: None}[type(request_)]
    if shortest is None:  # an AuthMessage cut short is not a protobuf any more
        missing = "malformed AuthMessage in a v2 AUTH request .*required fields missing: payload"
        with pytest.raises(MalformedFrame, match=missing):
            wire.decode_request_v2(body(golden)[:-2])
        return
    if request_.flags & wire.FLAG_DO_FENCING:
        shortest += 20
    for size in (0, 3, shortest - 1):
        with pytest.raises(MalformedFrame, match="truncated v2"):
            wire.decode_request_v2(body(golden)[:size])


@pytest.mark.parametrize("response,golden", V2_RESPONSES)
def test_truncated_v2_response_names_what_is_missing(response, golden):
    if isinstance(response, AuthResponseV2):
        return
    for size in (0, 3, 23):
        with pytest.raises(MalformedFrame, match="truncated v2"):
            wire.decode_response_v2(body(golden)[:size])


def test_batch_read_response_entry_overrunning_the_frame():
    golden = b"\x02\x07\x00\x00" + bytes(4) + L1 + L2 + bytes(8) + b"\x00\x00\x00\x09abc"
    with pytest.raises(MalformedFrame, match="entry 0 of 9 bytes at offset 32 overruns the 39-byte frame"):
        wire.decode_response_v2(golden)


@pytest.mark.parametrize(
    "header,message",
    [
        (b"\x02\x09\x00\x00", "unknown v2 request opcode 9"),
        (b"\x02\x04\x00\x00", r"READ_LAC \(4\) has no v2 layout"),
        (b"\x02\x05\x00\x00", r"WRITE_LAC \(5\) has no v2 layout"),
        (b"\x02\x06\x00\x00", r"GET_BOOKIE_INFO \(6\) has no v2 layout"),
    ],
)
def test_unknown_v2_opcode(header, message):
    with pytest.raises(MalformedFrame, match=message):
        wire.decode_request_v2(header + bytes(40))
    with pytest.raises(MalformedFrame, match=message.replace("request", "response")):
        wire.decode_response_v2(header + bytes(40))


def test_encoder_refuses_a_master_key_of_the_wrong_size():
    with pytest.raises(ValueError, match="a master key is 20 bytes, not 3"):
        wire.encode_request_v2(AddRequestV2(1, 2, b"abc", ENTRY))


@pytest.mark.parametrize("recovery", [False, True])
def test_v2_add_head_and_entry_are_the_add_request(recovery):
    flags = wire.FLAG_RECOVERY_ADD | wire.FLAG_HIGH_PRIORITY if recovery else wire.FLAG_NONE
    expected = wire.encode_request_v2(AddRequestV2(1, 2, KEY, ENTRY, flags))
    assert wire.add_request_v2_head(len(ENTRY), KEY, recovery) + ENTRY == expected


def test_v2_reads_are_the_read_requests_one_after_another():
    expected = b"".join(wire.encode_request_v2(ReadRequestV2(7, e)) for e in (0, 5, -1))
    assert wire.read_requests_v2(7, [0, 5, -1]) == expected


# ---- the v3 fast path writes what protobuf writes ----
FAST_VALUES = [(1, 0, 0), (127, 5, -1), (128, 2**40, 300), (2**21 + 5, 7, 2**28), (2**63 - 1, 2**63 - 1, -2)]


@pytest.mark.parametrize(("txn", "ledger_id", "entry_id"), FAST_VALUES)
@pytest.mark.parametrize("recovery", [False, True])
def test_fast_add_request_is_protobufs_bytes(txn, ledger_id, entry_id, recovery):
    header = pb.BKPacketHeader(version=pb.VERSION_THREE, operation=pb.ADD_ENTRY, txnId=txn)
    add = pb.AddRequest(ledgerId=ledger_id, entryId=entry_id, masterKey=b"k" * 20, body=b"x" * 300)
    if recovery:
        header.priority = 100
        add.flag = pb.AddRequest.RECOVERY_ADD
    expected = wire.encode_v3(pb.Request(header=header, addRequest=add))
    assert wire.add_request_v3(txn, ledger_id, entry_id, b"k" * 20, memoryview(b"x" * 300), recovery) == expected


@pytest.mark.parametrize(("txn", "ledger_id", "entry_id"), FAST_VALUES)
@pytest.mark.parametrize("status", [pb.EOK, pb.ENOENTRY, pb.EFENCED, pb.EUNKNOWNLEDGERSTATE])
def test_fast_responses_and_read_request_are_protobufs_bytes(txn, ledger_id, entry_id, status):
    add = pb.AddResponse(status=status, ledgerId=ledger_id, entryId=entry_id)
    header = pb.BKPacketHeader(version=pb.VERSION_THREE, operation=pb.ADD_ENTRY, txnId=txn)
    assert wire.add_response_v3(txn, status, ledger_id, entry_id) == wire.encode_v3(
        pb.Response(header=header, status=status, addResponse=add)
    )
    header = pb.BKPacketHeader(version=pb.VERSION_THREE, operation=pb.READ_ENTRY, txnId=txn)
    read = pb.ReadResponse(status=status, ledgerId=ledger_id, entryId=entry_id)
    assert wire.read_response_v3(txn, status, ledger_id, entry_id) == wire.encode_v3(
        pb.Response(header=header, status=status, readResponse=read)
    )
    read.body, read.maxLAC = b"y" * 200, entry_id - 1
    assert wire.read_response_v3(txn, status, ledger_id, entry_id, b"y" * 200, entry_id - 1) == wire.encode_v3(
        pb.Response(header=header, status=status, readResponse=read)
    )
    request = pb.Request(header=header, readRequest=pb.ReadRequest(ledgerId=ledger_id, entryId=entry_id))
    assert wire.read_request_v3(txn, ledger_id, entry_id) == wire.encode_v3(request)


@pytest.mark.parametrize("n", [0, 1, 127, 128, 16383, 16384, 2**21 - 1, 2**21, 2**63 - 1, -1, -(2**63)])
def test_varint_is_protobufs(n):
    assert wire.varint(n) == pb.ReadResponse(status=0, ledgerId=n, entryId=0).SerializeToString()[3:-2]


def test_v2_headers_and_response_encoders_match_the_general_encoder():
    assert wire.packet_header(wire.V2_VERSION, wire.ADDENTRY, 0) == wire.V2_ADD_HEADER
    assert wire.packet_header(wire.V2_VERSION, wire.READENTRY, 0) == wire.V2_READ_HEADER
    assert wire.add_response_v2(102, 5, 6) == wire.encode_response_v2(wire.AddResponseV2(102, 5, 6))
    assert wire.read_response_v2(0, 5, 6, b"entry") == wire.encode_response_v2(wire.ReadResponseV2(0, 5, 6, b"entry"))
    assert wire.read_response_v2(2, 5, 6) == wire.encode_response_v2(wire.ReadResponseV2(2, 5, 6))


def test_a_v3_answer_repeats_the_request_header_and_its_status():
    header = pb.BKPacketHeader(version=pb.VERSION_THREE, operation=pb.READ_LAC, txnId=9, priority=100)
    answer = pb.ReadLacResponse(status=pb.ENOLEDGER, ledgerId=4)
    response = wire.decode_v3_response(wire.response_v3(header, answer.status, "readLacResponse", answer)[4:])
    assert response.header == pb.BKPacketHeader(version=pb.VERSION_THREE, operation=pb.READ_LAC, txnId=9)
    assert response.status == pb.ENOLEDGER and response.readLacResponse == answer

"""bookie/codec/frames.py: the C codec (bookie.codec._frames) against the Python one, which decodes with protobuf
(wire.py). On generated frames, then on the same frames mutated (bytes flipped, cut, inserted): every frame C takes,
Python takes and decodes the same; C never takes one that protobuf refuses; the encoders write the same bytes.
C must be built here: the bookie and the client run on it."""

import struct

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.codec import frames, wire
from bookie.errors import MalformedFrame

try:
    from bookie.codec import _frames as c
except ImportError:  # the first test says so; the rest cannot run without it
    c = None

MAX = wire.MAX_FRAME_SIZE
PY = {
    "requests_v3": frames._scan_requests_v3,
    "requests_v2": frames._scan_requests_v2,
    "responses_v3": frames._scan_responses_v3,
    "responses_v2": frames._scan_responses_v2,
}
FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

int64 = st.integers(-(2**63), 2**63 - 1)
uint64 = st.integers(0, 2**64 - 1)
ids = st.one_of(st.integers(-1, 300), int64)
keys = st.binary(min_size=0, max_size=24)
entries = st.binary(min_size=0, max_size=200)
statuses = st.sampled_from([s for _, s in pb.StatusCode.items()])
operations = st.sampled_from([pb.READ_ENTRY, pb.ADD_ENTRY, pb.READ_ENTRY, pb.ADD_ENTRY, pb.WRITE_LAC, pb.AUTH])


def test_the_c_codec_is_built():
    assert c is not None, (
        "bookie.codec._frames is not built: `pip install -e .` needs a C compiler and Python's headers"
    )


def scan(kind: str, data: bytes, max_size: int = MAX) -> tuple[frames.Scan, frames.Scan]:
    """``(C's scan, Python's scan)`` of ``data`` from offset 0."""
    if c is None:
        pytest.skip("bookie.codec._frames is not built (test_the_c_codec_is_built fails)")
    return getattr(c, f"scan_{kind}")(bytearray(data), 0, max_size), PY[kind](bytearray(data), 0, max_size)


def agree(kind: str, data: bytes) -> frames.Scan:
    """C and Python read ``data`` alike: C's frames are Python's first ones, and where C stopped early it stopped on
    a frame that is not one of its kinds (STOP_OTHER), after which Python may take it (and add it to C's last run of
    adds); where C did not, both have the same items."""
    (c_end, c_items, c_stop), (py_end, py_items, py_stop) = scan(kind, data)
    c_frames, py_frames = one_per_frame(c_items), one_per_frame(py_items)
    assert py_frames[: len(c_frames)] == c_frames
    if c_stop == frames.STOP_OTHER:
        assert c_end <= py_end
        assert py_items[: max(len(c_items) - 1, 0)] == c_items[:-1]
    else:
        assert (c_end, c_items, c_stop) == (py_end, py_items, py_stop)
    return c_end, c_items, c_stop


def one_per_frame(items: list) -> list:
    """A scan's items, each add of a run (ADDS) as ``(ADD, txnId, ledgerId, entryId, key, record, high)``."""
    out = []
    for item in items:
        if item[0] != frames.ADDS:
            out.append(item)
            continue
        _, answers, keys, records, high = item
        offset = 0
        for txn_id, ledger_id, entry_id in answers:
            end = offset + 4 + struct.unpack_from(">i", records, offset)[0]
            out.append((frames.ADD, txn_id, ledger_id, entry_id, keys[ledger_id], records[offset:end], high))
            offset = end
        assert offset == len(records)
    return out


def framed(body: bytes) -> bytes:
    return wire.LENGTH.pack(len(body)) + body


@st.composite
def mutated(draw, frame_bodies):
    """Frame bodies, some with a byte flipped, cut short, or inserted: framed again, or, rarely, with the length
    left as it was (the framing itself broken)."""
    bodies = draw(frame_bodies)
    out = []
    for original in bodies:
        body = original
        action = draw(st.sampled_from(["keep", "keep", "flip", "cut", "insert", "raw"]))
        if action != "keep" and body:
            at = draw(st.integers(0, len(body) - 1))
            if action == "flip":
                body = body[:at] + bytes([body[at] ^ draw(st.integers(1, 255))]) + body[at + 1 :]
            elif action == "cut":
                body = body[:at]
            elif action == "insert":
                body = body[:at] + draw(st.binary(min_size=1, max_size=3)) + body[at:]
            elif action == "raw":
                out.append(wire.LENGTH.pack(len(body)) + body[:at])
                continue
        out.append(framed(body))
    return b"".join(out)


# ---- requests ----


@st.composite
def v3_requests(draw):
    header = pb.BKPacketHeader(
        version=draw(st.sampled_from([pb.VERSION_THREE, pb.VERSION_THREE, pb.VERSION_TWO])),
        operation=draw(operations),
        txnId=draw(uint64),
    )
    if draw(st.booleans()):
        header.priority = draw(st.sampled_from([0, 99, 100, 2**32 - 1]))
    request = pb.Request(header=header)
    kind = draw(st.sampled_from(["add", "read", "both", "none"]))
    if kind in ("add", "both"):
        add = request.addRequest
        add.ledgerId, add.entryId, add.masterKey, add.body = draw(ids), draw(ids), draw(keys), draw(entries)
        if draw(st.booleans()):
            add.flag = pb.AddRequest.RECOVERY_ADD
        if draw(st.booleans()):
            add.writeFlags = draw(st.sampled_from([0, 1, 2, 3, -1]))
    if kind in ("read", "both"):
        read = request.readRequest
        read.ledgerId, read.entryId = draw(ids), draw(ids)
        if draw(st.booleans()):
            read.flag = draw(st.sampled_from([pb.ReadRequest.FENCE_LEDGER, pb.ReadRequest.ENTRY_PIGGYBACK]))
        if draw(st.booleans()):
            read.masterKey = draw(keys)
        if draw(st.integers(0, 3)) == 0:
            read.previousLAC = draw(ids)
    if draw(st.integers(0, 5)) == 0:
        request.requestContext.add(key="k", value="v")
    return request.SerializePartialToString()


@given(st.lists(v3_requests(), min_size=1, max_size=4))
@settings(FUZZ)
def test_v3_requests_decode_alike(bodies):
    agree("requests_v3", b"".join(map(framed, bodies)))


@given(mutated(st.lists(v3_requests(), min_size=1, max_size=3)))
@settings(FUZZ)
def test_mutated_v3_requests_decode_alike(data):
    agree("requests_v3", data)


def test_c_takes_the_frames_of_our_client_and_of_javas():
    entry = bytes(range(40))
    plain = [
        wire.add_request_v3(7, 3, 9, b"k" * 20, entry, recovery=False),
        wire.add_request_v3(2**40, 3, 2**33, b"k" * 20, entry, recovery=True),
        wire.read_request_v3(8, 3, 9),
    ]
    # Java's plain add also carries writeFlags = 0 (PerChannelBookieClient.addEntry, v3)
    java = pb.Request(header=pb.BKPacketHeader(version=pb.VERSION_THREE, operation=pb.ADD_ENTRY, txnId=5))
    java.addRequest.MergeFrom(pb.AddRequest(ledgerId=3, entryId=10, masterKey=b"k" * 20, body=entry, writeFlags=0))
    data = b"".join(plain) + wire.encode_v3(java)
    end, items, stop = agree("requests_v3", data)
    assert (end, stop, len(items)) == (len(data), frames.STOP_END, 4)  # a run ends at another key of its ledger
    assert items[0] == (frames.ADDS, [(7, 3, 9)], {3: (b"k" * 20, False, 0)}, framed(entry), False)
    assert items[1] == (frames.ADDS, [(2**40, 3, 2**33)], {3: (b"k" * 20, True, 0)}, framed(entry), True)
    assert items[2] == (frames.READ, 8, 3, 9)
    assert items[3] == (frames.ADDS, [(5, 3, 10)], {3: (b"k" * 20, False, 0)}, framed(entry), False)


def add_v3(txn_id: int, ledger_id: int, key: bytes = b"k", recovery: bool = False, high: bool = False) -> bytes:
    frame = wire.add_request_v3(txn_id, ledger_id, txn_id, key, b"entry %d" % txn_id, recovery=recovery)
    if not high:
        return frame
    request = wire.decode_v3_request(frame[4:])
    request.header.priority = wire.HIGH_PRIORITY
    return wire.encode_v3(request)


@pytest.mark.parametrize(
    ("frames_", "runs"),
    [
        ([add_v3(i, i % 3) for i in range(300)], [300]),  # one run of any length, over a few ledgers
        ([add_v3(i, i) for i in range(40)], [16, 16, 8]),  # 16 ledgers at most
        ([add_v3(1, 1), add_v3(2, 2), add_v3(3, 1, key=b"other"), add_v3(4, 2)], [2, 2]),  # another key
        ([add_v3(1, 1), add_v3(2, 1, recovery=True)], [1, 1]),  # recovery is part of the key
        ([add_v3(1, 1), add_v3(2, 2, high=True), add_v3(3, 2, high=True), add_v3(4, 1)], [1, 2, 1]),  # priority
        ([add_v3(1, 1), wire.read_request_v3(2, 1, 0), add_v3(3, 1)], [1, 0, 1]),  # a read between
    ],
    ids=["long", "ledgers", "key", "recovery", "priority", "read"],
)
def test_a_run_of_adds_is_one_item_with_one_key_per_ledger(frames_, runs):
    data = b"".join(frames_)
    end, items, stop = agree("requests_v3", data)
    assert (end, stop) == (len(data), frames.STOP_END)
    assert [len(item[1]) if item[0] == frames.ADDS else 0 for item in items] == runs
    for item in items:
        if item[0] == frames.ADDS:
            assert {ledger_id for _, ledger_id, _ in item[1]} == set(item[2])
    decoded = [wire.decode_v3_request(frame[4:]) for frame in frames_]
    adds = [(r.header.txnId, r.addRequest.ledgerId) for r in decoded if r.HasField("addRequest")]
    assert [item[1:3] for item in one_per_frame(items) if item[0] == frames.ADD] == adds  # each add, in order


@pytest.mark.parametrize(
    "request_",
    [
        pb.Request(
            header=pb.BKPacketHeader(version=pb.VERSION_THREE, operation=pb.READ_ENTRY, txnId=1),
            readRequest=pb.ReadRequest(ledgerId=1, entryId=2, flag=pb.ReadRequest.FENCE_LEDGER, masterKey=b"k"),
        ),
        pb.Request(
            header=pb.BKPacketHeader(version=pb.VERSION_THREE, operation=pb.READ_ENTRY, txnId=1),
            readRequest=pb.ReadRequest(ledgerId=1, entryId=2, previousLAC=1, timeOut=100),
        ),
        pb.Request(
            header=pb.BKPacketHeader(version=pb.VERSION_THREE, operation=pb.WRITE_LAC, txnId=1),
            writeLacRequest=pb.WriteLacRequest(ledgerId=1, lac=2, masterKey=b"k", body=b"b"),
        ),
    ],
    ids=["fence", "long-poll", "write-lac"],
)
def test_what_waits_goes_to_wire_py(request_):
    frame = wire.encode_v3(request_)
    for got in scan("requests_v3", frame + wire.read_request_v3(2, 1, 2)):
        assert got == (0, [], frames.STOP_OTHER)
    assert frames.next_frame(bytearray(frame), 0) == (frame[4:], len(frame))


@st.composite
def v2_requests(draw):
    version = draw(st.sampled_from([0, 2, 2, 2, 3, -1]))
    opcode = draw(st.sampled_from([wire.ADDENTRY, wire.READENTRY, wire.ADDENTRY, wire.READENTRY, wire.AUTH, 9]))
    flags = draw(st.integers(0, 7))
    header = wire.packet_header(version & 0xFF if version >= 0 else 0xFF, opcode, flags)
    return struct.pack(">i", header) + draw(st.binary(min_size=0, max_size=80))


@given(st.lists(v2_requests(), min_size=1, max_size=4))
@settings(FUZZ)
@example([struct.pack(">i", wire.packet_header(2, wire.READENTRY, wire.FLAG_DO_FENCING)) + bytes(36)])
@example([struct.pack(">i", wire.packet_header(1, wire.READENTRY, wire.FLAG_DO_FENCING)) + bytes(16)])
@example([struct.pack(">i", wire.packet_header(0, wire.ADDENTRY, 0)) + bytes(36)])
def test_v2_requests_decode_alike(bodies):
    agree("requests_v2", b"".join(map(framed, bodies)))


def test_v2_add_item_is_the_entry_as_storage_records_it():
    entry = struct.pack(">qq", 5, 6) + b"rest"
    request = wire.AddRequestV2(5, 6, b"m" * 20, entry, wire.FLAG_RECOVERY_ADD | wire.FLAG_HIGH_PRIORITY)
    _, items, _ = agree("requests_v2", wire.encode_request_v2(request))
    assert items == [(frames.ADDS, [(None, 5, 6)], {5: (b"m" * 20, True, 0)}, framed(entry), True)]


# ---- responses ----


@st.composite
def v3_responses(draw):
    header = pb.BKPacketHeader(version=pb.VERSION_THREE, operation=draw(operations), txnId=draw(uint64))
    if draw(st.integers(0, 5)) == 0:
        header.version = pb.VERSION_TWO
    response = pb.Response(header=header, status=draw(statuses))
    kind = draw(st.sampled_from(["add", "read", "none", "both"]))
    if kind in ("add", "both"):
        response.addResponse.MergeFrom(pb.AddResponse(status=draw(statuses), ledgerId=draw(ids), entryId=draw(ids)))
    if kind in ("read", "both"):
        read = response.readResponse
        read.status, read.ledgerId, read.entryId = draw(statuses), draw(ids), draw(ids)
        if draw(st.booleans()):
            read.body = draw(entries)
        if draw(st.booleans()):
            read.maxLAC = draw(ids)
        if draw(st.integers(0, 4)) == 0:
            read.lacUpdateTimestamp = draw(int64)
    return response.SerializePartialToString()


@given(st.lists(v3_responses(), min_size=1, max_size=4))
@settings(FUZZ)
def test_v3_responses_decode_alike(bodies):
    agree("responses_v3", b"".join(map(framed, bodies)))


@given(mutated(st.lists(v3_responses(), min_size=1, max_size=3)))
@settings(FUZZ)
def test_mutated_v3_responses_decode_alike(data):
    agree("responses_v3", data)


def test_c_takes_the_answers_of_our_bookie():
    entry = bytes(range(30))
    data = (
        wire.add_response_v3(1, pb.EOK, 3, 4)
        + wire.read_response_v3(2, pb.EOK, 3, 4, entry, 3)
        + wire.read_response_v3(3, pb.ENOENTRY, 3, 5)
    )
    end, items, stop = agree("responses_v3", data)
    assert items == [
        (frames.ADD, 1, pb.EOK, None, -1),
        (frames.READ, 2, pb.EOK, entry, 3),
        (frames.READ, 3, pb.ENOENTRY, b"", -1),
    ]
    assert (end, stop) == (len(data), frames.STOP_END)


@pytest.mark.parametrize("kind", ["responses_v3", "responses_v2"])
def test_response_items_are_named_in_c_and_python(kind):
    if kind == "responses_v3":
        data = wire.add_response_v3(1, pb.EOK, 3, 4) + wire.read_response_v3(2, pb.EOK, 3, 4, b"e", 3)
    else:
        data = wire.encode_response_v2(wire.AddResponseV2(0, 3, 4)) + wire.encode_response_v2(
            wire.ReadResponseV2(0, 3, 4, b"e")
        )
    for _, items, _ in scan(kind, data):
        assert [type(item) for item in items] == [frames.ResponseItem] * 2
        assert (items[1].kind, items[1].status, items[1].entry) == (frames.READ, pb.EOK, b"e")


def test_an_unknown_status_goes_to_wire_py_which_refuses_it():
    body = wire.add_response_v3(1, 999, 3, 4)[4:]
    assert scan("responses_v3", framed(body))[0][1:] == ([], frames.STOP_OTHER)
    with pytest.raises(MalformedFrame):
        wire.decode_v3_response(body)


@st.composite
def v2_responses(draw):
    opcode = draw(st.sampled_from([wire.ADDENTRY, wire.READENTRY, wire.ADDENTRY, wire.READENTRY, wire.AUTH, 7]))
    header = wire.packet_header(draw(st.sampled_from([0, 2, 2, 3])), opcode, 0)
    rc = draw(st.sampled_from([*wire.V2_TO_V3_STATUS, 999, -1]))
    fields = struct.pack(">iiqq", header, rc, draw(int64), draw(int64))
    return fields + draw(st.binary(max_size=60)) if draw(st.booleans()) else fields[: draw(st.integers(0, 24))]


@given(st.lists(v2_responses(), min_size=1, max_size=4))
@settings(FUZZ)
def test_v2_responses_decode_alike(bodies):
    agree("responses_v2", b"".join(map(framed, bodies)))


# ---- framing ----


@given(st.binary(max_size=300), st.sampled_from(list(PY)))
@settings(FUZZ)
@example(b"\xff\xff\xff\xff", "requests_v3")
@example(b"\x00\x50\x00\x00", "responses_v2")
def test_any_bytes_are_cut_alike(data, kind):
    c_end, _, _ = agree(kind, data)
    assert 0 <= c_end <= len(data)


@pytest.mark.parametrize("kind", list(PY))
def test_a_bad_length_stops_the_scan_and_says_what_cut_frames_says(kind):
    good = {
        "requests_v3": wire.read_request_v3(1, 2, 3),
        "requests_v2": wire.encode_request_v2(wire.ReadRequestV2(2, 3)),
        "responses_v3": wire.add_response_v3(1, 0, 2, 3),
        "responses_v2": wire.encode_response_v2(wire.AddResponseV2(0, 2, 3)),
    }[kind]
    for length, stop in ((-1, frames.STOP_NEGATIVE), (100, frames.STOP_TOO_LARGE)):
        data = bytearray(good + struct.pack(">i", length) + bytes(10))
        for end, _, got in scan(kind, bytes(data), max_size=64):
            assert (end, got) == (len(good), stop)
        with pytest.raises(MalformedFrame) as cut:
            wire.cut_frames(bytearray(data[len(good) :]), 64)
        assert str(frames.framing_error(data, len(good), stop, 64)) == str(cut.value)


def test_a_scan_goes_on_from_an_offset_and_leaves_a_partial_frame():
    frame = wire.read_request_v3(1, 2, 3)
    data = frame * 3 + frame[:5]
    for end, items, stop in scan("requests_v3", data):
        assert (end, len(items), stop) == (3 * len(frame), 3, frames.STOP_END)
    assert c.scan_requests_v3(bytearray(data), len(frame), MAX)[0] == 3 * len(frame)
    with pytest.raises(ValueError):
        c.scan_requests_v3(bytearray(data), len(data) + 1, MAX)


# ---- encoders ----


@given(
    st.lists(
        st.tuples(st.one_of(st.none(), uint64), ids, ids, st.sampled_from(list(wire.V3_TO_V2_STATUS))),
        max_size=20,
    )
)
@settings(FUZZ)
def test_add_responses_write_the_same_bytes(answers):
    assume(c is not None)
    triples, codes = [a[:3] for a in answers], [a[3] for a in answers]
    assert c.add_responses(triples, codes) == frames._add_responses(triples, codes)


def test_add_responses_refuse_what_v2_cannot_say():
    for implementation in (c.add_responses, frames._add_responses):
        with pytest.raises(ValueError, match="unknown v3 status code 999"):
            implementation([(None, 1, 2)], [999])
        with pytest.raises(ValueError, match="as many statuses"):
            implementation([(1, 1, 2)], [])


@given(uint64, statuses, ids, ids, st.one_of(st.none(), entries), st.one_of(st.none(), ids))
@settings(FUZZ)
def test_read_response_writes_the_same_bytes(txn, status, ledger_id, entry_id, body, lac):
    assume(c is not None)
    assert c.read_response_v3(txn, status, ledger_id, entry_id, body, lac) == wire.read_response_v3(
        txn, status, ledger_id, entry_id, body, lac
    )


@given(uint64, ids, ids)
@settings(FUZZ)
def test_read_request_writes_the_same_bytes(txn, ledger_id, entry_id):
    assume(c is not None)
    assert c.read_request_v3(txn, ledger_id, entry_id) == wire.read_request_v3(txn, ledger_id, entry_id)


@given(st.lists(st.tuples(uint64, ids, ids, keys, entries, st.booleans()), max_size=6))
@settings(FUZZ)
def test_add_requests_are_the_add_request_of_each_records_entry(adds):
    """What the client sends a bookie for its adds of one turn of the loop (plain and recovery adds)."""
    assume(c is not None)
    expected = b"".join(wire.add_request_v3(*add) for add in adds)
    with_records = [
        (txn, ledger_id, entry_id, key, framed(body), recovery)
        for txn, ledger_id, entry_id, key, body, recovery in adds
    ]
    assert c.add_requests_v3(with_records) == expected
    assert frames._add_requests_v3(with_records) == expected


@given(st.lists(st.tuples(ids, ids, st.binary(min_size=20, max_size=20), entries, st.booleans()), max_size=6))
@settings(FUZZ)
def test_v2_add_requests_are_the_add_frame_of_each_records_entry(adds):
    """The same for a v2 connection: BookKeeper's ADDENTRY frame (header, masterKey, entry) of each add."""
    assume(c is not None)
    expected = b"".join(wire.add_request_v2_head(len(body), key, recovery) + body for _, _, key, body, recovery in adds)
    with_records = [
        (0, ledger_id, entry_id, key, framed(body), recovery) for ledger_id, entry_id, key, body, recovery in adds
    ]
    assert c.add_requests_v2(with_records) == expected
    assert frames._add_requests_v2(with_records) == expected


V2_KEY = b"k" * wire.MASTER_KEY_LENGTH


@pytest.mark.parametrize("version", ["v3", "v2"])
@pytest.mark.parametrize(
    ("add", "error", "match"),
    [
        ((1, 2, 3, V2_KEY, b"abc", False), ValueError, "at least its 4-byte size"),
        ((1, 2, 3, V2_KEY, bytearray(8), False), TypeError, "each add is"),
        ((1, 2, 3, V2_KEY, b"1234"), TypeError, "each add is"),
    ],
    ids=["short-record", "not-bytes", "five-fields"],
)
def test_add_requests_refuse_what_is_not_an_add(version, add, error, match):
    for implementation in (getattr(c, f"add_requests_{version}"), getattr(frames, f"_add_requests_{version}")):
        with pytest.raises(error, match=match):
            implementation([(9, 9, 9, V2_KEY, framed(b"ok"), False), add])


def test_a_v2_add_refuses_a_master_key_that_is_not_20_bytes():
    for implementation in (c.add_requests_v2, frames._add_requests_v2):
        with pytest.raises(ValueError, match="20 bytes"):
            implementation([(0, 1, 2, b"short", framed(b"ok"), False)])


@given(uint64, ids, st.lists(ids, max_size=20))
@settings(FUZZ)
def test_read_requests_are_the_reads_one_after_another(first, ledger_id, entry_ids):
    assume(c is not None and first + len(entry_ids) < 2**64)
    expected = b"".join(wire.read_request_v3(first + i, ledger_id, e) for i, e in enumerate(entry_ids))
    assert c.read_requests_v3(first, ledger_id, entry_ids) == frames._read_requests_v3(first, ledger_id, entry_ids)
    assert c.read_requests_v3(first, ledger_id, entry_ids) == expected

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bookie.codec.digest import DigestType
from bookie.errors import CorruptData
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState, Segment, parse, serialize, without_password

ENSEMBLE = ("192.0.2.1:3181", "192.0.2.2:3181", "192.0.2.3:3181")
# a v3 ledger metadata as a Java client writes it, field by field
SPEC_V3 = (
    b"BookieMetadataFormatVersion\t3\n"
    + bytes.fromhex("60 0802 1003 1800 20ffffffffffffffffff01 2801 3232")
    + b"".join(b"\x0a\x0e" + b.encode() for b in ENSEMBLE)
    + bytes.fromhex("1000 3803 4206")
    + b"foobar"
    + bytes.fromhex("4801 50ffffffffffffffffff01 6000")
)


def spec_metadata(**changes):
    md = LedgerMetadata(
        ensemble_size=3,
        write_quorum_size=2,
        ack_quorum_size=1,
        segments=(Segment(0, ENSEMBLE),),
        digest_type=DigestType.CRC32C,
        password=b"foobar",
        ctime=-1,
    )
    return md.with_changes(**changes)


def test_v3_is_byte_identical_to_the_spec_example():
    assert serialize(spec_metadata()) == SPEC_V3


def test_v3_reads_the_spec_example():
    assert parse(SPEC_V3) == spec_metadata()


def test_the_password_is_not_in_the_repr_but_still_compared():
    md = spec_metadata()
    assert "foobar" not in repr(md) and "password" not in repr(md)
    assert "ensemble_size=3" in repr(md)
    assert md != md.with_changes(password=b"other")


def test_v2_text_format():
    text = (
        b"BookieMetadataFormatVersion\t2\nquorumSize: 2\nensembleSize: 3\nlength: 0\nlastEntryId: -1\n"
        b'state: IN_RECOVERY\nsegment {\n  ensembleMember: "192.0.2.1:1234"\n  ensembleMember: "192.0.2.2:1234"\n'
        b'  ensembleMember: "192.0.2.3:1234"\n  firstEntryId: 0\n}\ndigestType: CRC32\npassword: "passwd"\n'
        b"ackQuorumSize: 2\n"
    )
    md = parse(text, znode_ctime=1234)
    assert md.format_version == 2
    assert md.state == LedgerState.IN_RECOVERY
    assert md.segments == (Segment(0, ("192.0.2.1:1234", "192.0.2.2:1234", "192.0.2.3:1234")),)
    assert (md.digest_type, md.password, md.ack_quorum_size, md.ctime) == (DigestType.CRC32, b"passwd", 2, 1234)


def test_v1_in_recovery():
    md = parse(
        b"BookieMetadataFormatVersion\t1\n2\n3\n0\n0\t192.0.2.1:1234\t192.0.2.2:1234\t192.0.2.3:1234\n-102\tCLOSED"
    )
    assert (md.format_version, md.state, md.write_quorum_size, md.ack_quorum_size, md.ensemble_size) == (
        1,
        LedgerState.IN_RECOVERY,
        2,
        2,
        3,
    )
    assert md.digest_type is None and md.password is None


def test_v1_closed_with_two_segments():
    md = parse(b"BookieMetadataFormatVersion\t1\n2\n2\n300\n0\ta:1\tb:1\n10\ta:1\tc:1\n19\tCLOSED\n")
    assert md.state == LedgerState.CLOSED and md.last_entry_id == 19 and md.length == 300
    assert md.segments == (Segment(0, ("a:1", "b:1")), Segment(10, ("a:1", "c:1")))
    assert md.segment_of(9).first_entry_id == 0 and md.segment_of(10).first_entry_id == 10


def test_missing_ack_quorum_means_write_quorum():
    v3 = serialize(spec_metadata(ack_quorum_size=2)).replace(bytes.fromhex("4802"), b"")
    v3 = v3[:30] + bytes([v3[30] - 2]) + v3[31:]  # fix the length prefix
    assert parse(v3).ack_quorum_size == 2


@pytest.mark.parametrize(
    "data,message",
    [
        (b"hello", "no BookieMetadataFormatVersion header"),
        (b"BookieMetadataFormatVersion\t4\nxx", "unknown metadata format version 4"),
        (b"BookieMetadataFormatVersion\tx\n", "malformed metadata format version"),
        (b"BookieMetadataFormatVersion\t3\n\x05ab", "its prefix says 5"),
        (b"BookieMetadataFormatVersion\t2\nnot text format", "malformed format v2"),
        (b"BookieMetadataFormatVersion\t1\n2\nx\n0", "malformed format v1"),
    ],
)
def test_unreadable_metadata_is_reported_not_guessed(data, message):
    with pytest.raises(CorruptData, match=message):
        parse(data, "/ledgers/00/0000/L0001")


metadata = st.builds(
    LedgerMetadata,
    ensemble_size=st.integers(1, 9),
    write_quorum_size=st.integers(1, 9),
    ack_quorum_size=st.integers(1, 9),
    segments=st.lists(
        st.tuples(st.integers(0, 2**40), st.lists(st.text("abc.:0123456789", min_size=1, max_size=20), max_size=5)),
        min_size=1,
        max_size=4,
    ).map(lambda segs: tuple(Segment(first, tuple(bookies)) for first, bookies in sorted(segs))),
    state=st.sampled_from(list(LedgerState)),
    last_entry_id=st.integers(-1, 2**62),
    length=st.integers(0, 2**62),
    digest_type=st.sampled_from(list(DigestType)),
    password=st.binary(max_size=32),
    ctime=st.integers(-1, 2**45),
    custom_metadata=st.dictionaries(st.text(max_size=10), st.binary(max_size=20), max_size=4),
    c_token=st.integers(0, 2**62),
)


@given(metadata)
def test_v3_round_trip(md):
    assert parse(serialize(md)) == md


V2_WITH_PASSWORD = (
    b"BookieMetadataFormatVersion\t2\nquorumSize: 2\nensembleSize: 3\nlength: 0\nlastEntryId: -1\n"
    b'state: OPEN\nsegment {\n  ensembleMember: "192.0.2.1:1234"\n  firstEntryId: 0\n}\ndigestType: HMAC\n'
    b'password: "pa\\"ss\\001wd"\nackQuorumSize: 2\n'
)


def test_without_password_keeps_every_other_field_in_the_ledgers_own_format():
    v3 = without_password(SPEC_V3)
    assert b"foobar" not in v3
    assert parse(v3) == spec_metadata(password=b"")
    assert without_password(v3) == v3 == serialize(spec_metadata(password=b""))
    v2 = without_password(V2_WITH_PASSWORD)
    assert v2 == V2_WITH_PASSWORD.replace(b'password: "pa\\"ss\\001wd"\n', b"")
    assert parse(v2) == parse(V2_WITH_PASSWORD).with_changes(password=None)
    v1 = b"BookieMetadataFormatVersion\t1\n2\n2\n300\n0\ta:1\tb:1\n19\tCLOSED\n"
    assert without_password(v1) == v1

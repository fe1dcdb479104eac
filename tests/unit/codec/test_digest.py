import pytest
from hypothesis import given
from hypothesis import strategies as st

from bookie.codec.digest import DIGEST_SIZES, Digester, DigestType, master_key
from bookie.codec.entry import HEADER, frame_entry, parse_entry
from bookie.codec.lac import frame_lac, parse_lac
from bookie.errors import CorruptEntry, InvalidArgument

SPEC_HEADER = HEADER.pack(1, 0, -1, 5)  # ledger 1, entry 0, LAC -1, length 5


def test_crc32_of_spec_example():
    assert Digester(DigestType.CRC32).digest(SPEC_HEADER, b"hello") == bytes.fromhex("0000000030a56872")


def test_crc32c_of_spec_example():
    assert Digester(DigestType.CRC32C).digest(SPEC_HEADER, b"hello") == bytes.fromhex("e3a5f74d")


def test_master_key_of_spec_example():
    assert master_key(b"passwd").hex() == "9596625852f7fafc2c9cf0f9f7f3e5995206452b"


def test_hmac_depends_on_password():
    a = Digester(DigestType.HMAC, b"a").digest(SPEC_HEADER, b"hello")
    assert len(a) == 20 and a != Digester(DigestType.HMAC, b"b").digest(SPEC_HEADER, b"hello")


@pytest.mark.parametrize("name,expected", [("crc32", 1), ("MAC", 2), ("hmac", 2), ("CRC32C", 3), ("dummy", 4)])
def test_digest_type_names(name, expected):
    assert DigestType.parse(name) == expected


def test_unknown_digest_type_is_a_clear_error():
    with pytest.raises(InvalidArgument, match="unknown digest type 'md5'"):
        DigestType.parse("md5")


digests = st.sampled_from(list(DigestType))
ids = st.integers(min_value=0, max_value=2**63 - 1)


@given(
    digests, st.binary(max_size=16), ids, ids, st.integers(-1, 2**62), st.integers(0, 2**62), st.binary(max_size=2048)
)
def test_entry_round_trip(kind, password, ledger_id, entry_id, lac, length, payload):
    digester = Digester(kind, password)
    framed = frame_entry(digester, ledger_id, entry_id, lac, length, payload)
    assert len(framed) == 32 + DIGEST_SIZES[kind] + len(payload)
    entry = parse_entry(digester, framed, ledger_id, entry_id)
    assert entry == (ledger_id, entry_id, lac, length, payload)


@given(
    st.sampled_from([DigestType.CRC32, DigestType.CRC32C, DigestType.HMAC]),
    st.binary(min_size=1, max_size=256),
    st.data(),
)
def test_any_flipped_byte_is_detected(kind, payload, data):
    digester = Digester(kind, b"pw")
    framed = bytearray(frame_entry(digester, 7, 3, 2, 100, payload))
    position = data.draw(st.integers(0, len(framed) - 1))
    framed[position] ^= data.draw(st.integers(1, 255))
    with pytest.raises(CorruptEntry):
        parse_entry(digester, bytes(framed), 7, 3)


def test_entry_of_another_ledger_is_corruption():
    digester = Digester(DigestType.CRC32C)
    framed = frame_entry(digester, 1, 0, -1, 5, b"hello")
    with pytest.raises(CorruptEntry, match="asked for ledger 2 entry 0, got ledger 1 entry 0 from bookie-a"):
        parse_entry(digester, framed, 2, 0, where="bookie-a")


def test_truncated_entry_is_corruption():
    with pytest.raises(CorruptEntry, match="shorter than its header"):
        parse_entry(Digester(DigestType.CRC32), b"\0" * 39)


@given(digests, ids, st.integers(-1, 2**62))
def test_lac_buffer_round_trip(kind, ledger_id, lac):
    digester = Digester(kind, b"secret")
    buffer = frame_lac(digester, ledger_id, lac)
    assert len(buffer) == 16 + DIGEST_SIZES[kind]
    assert parse_lac(digester, buffer, ledger_id) == lac


def test_lac_buffer_digest_covers_its_header():
    digester = Digester(DigestType.CRC32C)
    buffer = bytearray(frame_lac(digester, 9, 41))
    buffer[15] ^= 1
    with pytest.raises(CorruptEntry, match="digest mismatch"):
        parse_lac(digester, bytes(buffer))

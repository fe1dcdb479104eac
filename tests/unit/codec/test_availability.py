import pytest
from hypothesis import given
from hypothesis import strategies as st

from bookie.codec.availability import HEADER, AvailabilityOfEntries, SequenceGroup
from bookie.errors import CorruptData


@pytest.mark.parametrize(
    "entries,size,groups",
    [
        ({0, 1, 2}, 88, [(0, 0, 3, 0)]),
        ({1, 2, 3, 5, 6, 7, 8}, 112, [(1, 1, 3, 0), (5, 5, 4, 0)]),
        (set(), 64, []),
        ([1, 2, 2, 3], 88, [(1, 1, 3, 0)]),
    ],
)
def test_spec_examples(entries, size, groups):
    encoded = AvailabilityOfEntries.from_entries(entries).encode()
    assert len(encoded) == size
    assert AvailabilityOfEntries.decode(encoded).groups == groups


def test_exact_bytes_of_one_group():
    encoded = AvailabilityOfEntries.from_entries([0, 1, 2]).encode()
    assert encoded == bytes(3) + b"\x00" + bytes(3) + b"\x01" + bytes(56) + bytes(16) + bytes(3) + b"\x03" + bytes(4)


def test_spec_unavailable_example():
    assert AvailabilityOfEntries.from_entries([0, 1, 2]).unavailable([0, 1, 2, 3, 5]) == [3, 5]


def test_decodes_the_merged_form():
    # The BP's example form: sequences of 2 entries every 3, starting at 0, 3 and 6: {0,1,3,4,6,7}
    data = HEADER.pack(0, 1) + b"".join([b"\0" * 7 + b"\0", b"\0" * 7 + b"\x06", b"\0\0\0\x02", b"\0\0\0\x03"])
    availability = AvailabilityOfEntries.decode(data)
    assert availability.groups == [SequenceGroup(0, 6, 2, 3)]
    assert sorted(availability) == [0, 1, 3, 4, 6, 7]
    assert len(availability) == 6
    assert [e for e in range(10) if e in availability] == [0, 1, 3, 4, 6, 7]


@pytest.mark.parametrize(
    "data,message",
    [
        (b"\0" * 10, "shorter than the 64-byte header"),
        (HEADER.pack(1, 0), "unknown version 1"),
        (HEADER.pack(0, 2) + b"\0" * 24, "do not hold 2 groups"),
    ],
)
def test_rejects_bad_input(data, message):
    with pytest.raises(CorruptData, match=message):
        AvailabilityOfEntries.decode(data)


@given(st.sets(st.integers(0, 5000), max_size=300))
def test_round_trip_and_membership(entries):
    decoded = AvailabilityOfEntries.decode(AvailabilityOfEntries.from_entries(entries).encode())
    assert set(decoded) == entries
    assert len(decoded) == len(entries)
    assert all((e in decoded) == (e in entries) for e in range(-2, 5010, 7))
    assert all(g.period == 0 and g.first == g.last for g in decoded.groups)


@given(st.integers(0, 1000), st.integers(1, 5), st.integers(0, 5), st.integers(0, 6), st.sets(st.integers(0, 1200)))
def test_merged_groups_agree_with_their_entries(first, size, gap, repeats, probes):
    period = size + gap
    last = first + repeats * period
    group = SequenceGroup(first, last, size, period)
    entries = set(group.entries())
    assert len(entries) == group.entry_count()
    availability = AvailabilityOfEntries([group])
    assert all((p in availability) == (p in entries) for p in probes | entries)


def test_rejects_a_group_that_repeats_without_a_period():
    data = HEADER.pack(0, 1) + (0).to_bytes(8, "big") + (6).to_bytes(8, "big") + (2).to_bytes(4, "big") + bytes(4)
    with pytest.raises(CorruptData, match="invalid sequence group"):
        AvailabilityOfEntries.decode(data)

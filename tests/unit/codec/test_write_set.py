from hypothesis import given
from hypothesis import strategies as st

from bookie.codec.write_set import count_entries_of_bookie, entries_of_bookie, holds, write_set


def test_spec_striping_table():
    # E=4, WQ=3: entry 0 -> B1,B2,B3; 1 -> B2,B3,B4; 2 -> B3,B4,B1; 3 -> B4,B1,B2
    assert [write_set(e, 4, 3) for e in range(4)] == [[0, 1, 2], [1, 2, 3], [2, 3, 0], [3, 0, 1]]


@st.composite
def quorums(draw):
    ensemble = draw(st.integers(1, 9))
    write = draw(st.integers(1, ensemble))
    first = draw(st.integers(0, 10_000))
    last = draw(st.integers(first - 1, first + 200))
    return ensemble, write, first, last


@given(quorums())
def test_entries_of_bookie_matches_the_write_set_rule(params):
    ensemble, write, first, last = params
    for index in range(ensemble):
        expected = [e for e in range(first, last + 1) if index in write_set(e, ensemble, write)]
        assert list(entries_of_bookie(index, first, last, ensemble, write)) == expected
        assert count_entries_of_bookie(index, first, last, ensemble, write) == len(expected)
        assert all(holds(index, e, ensemble, write) for e in expected)


@given(quorums())
def test_every_entry_has_write_quorum_copies(params):
    ensemble, write, first, last = params
    copies = {}
    for index in range(ensemble):
        for e in entries_of_bookie(index, first, last, ensemble, write):
            copies[e] = copies.get(e, 0) + 1
    assert copies == dict.fromkeys(range(first, last + 1), write)

"""A bookie's expected share of a ledger: the write sets of each ensemble, the length spread over the entries."""

from __future__ import annotations

import itertools

import pytest

from admin.usage.expected import ENTRY_HEAD, entries_on, expected_on
from bookie.codec.digest import DigestType
from bookie.codec.write_set import write_set
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState, Segment

A, B, C, D = "a:3181", "b:3181", "c:3181", "d:3181"


def striped(last: int = 19, length: int = 2000, state: LedgerState = LedgerState.CLOSED) -> LedgerMetadata:
    """E=3, WQ=2; D replaced C at entry 10."""
    return LedgerMetadata(
        3,
        2,
        2,
        (Segment(0, (A, B, C)), Segment(10, (A, B, D))),
        state=state,
        last_entry_id=last,
        length=length,
        digest_type=DigestType.CRC32C,
    )


def test_striping_over_an_ensemble_change():
    md = striped()
    # a (index 0) holds e with e % 3 in {0, 2}: 0 2 3 5 6 8 9 | 11 12 14 15 17 18
    counts = {b: entries_on(md, b, 19) for b in (A, B, C, D)}
    assert counts == {A: 13, B: 14, C: 6, D: 7}
    assert sum(counts.values()) == 20 * 2  # every entry on WQ bookies
    assert entries_on(md, "e:3181", 19) == 0


def test_bytes_are_the_length_spread_plus_each_records_overhead():
    got = expected_on(striped(), A)
    assert (got.entries, got.bytes, got.exact) == (13, 2000 * 13 // 20 + 13 * (ENTRY_HEAD + 4), False)


def test_the_logs_bytes_are_exact_when_the_index_counts_the_expected_entries():
    exact = expected_on(striped(), A, local_entries=13, held=1900)
    assert (exact.entries, exact.bytes, exact.exact) == (13, 1900, True)
    short = expected_on(striped(), A, local_entries=12, held=1750)  # one entry missing: the metadata's estimate
    assert (short.entries, short.exact) == (13, False)
    assert expected_on(striped(), A, local_entries=-1, held=1900).exact is False  # interleaved: no count


def test_an_open_ledger_is_what_the_bookie_has():
    md = striped(last=-1, length=0, state=LedgerState.OPEN)
    counted = expected_on(md, A, local_entries=5, held=700)
    assert (counted.entries, counted.bytes, counted.exact) == (5, 700, True)
    unknown = expected_on(md, A, local_entries=-1, held=700)
    assert (unknown.entries, unknown.bytes, unknown.exact) == (None, 700, False)


@pytest.mark.parametrize("ensemble,quorum", [(1, 1), (2, 2), (3, 2), (5, 3), (4, 1)])
def test_entries_on_agrees_with_the_clients_write_sets(ensemble, quorum):
    bookies = [f"b{i}:3181" for i in range(ensemble + 2)]
    segments = (
        Segment(0, tuple(bookies[:ensemble])),
        Segment(7, tuple(bookies[1 : ensemble + 1])),
        Segment(20, tuple(bookies[2 : ensemble + 2])),
    )
    md = LedgerMetadata(ensemble, quorum, quorum, segments, LedgerState.CLOSED, 33, 3400)
    for bookie, last in itertools.product(bookies, (-1, 0, 6, 7, 19, 33)):
        brute = sum(
            1
            for e in range(last + 1)
            if bookie in [md.segment_of(e).bookies[i] for i in write_set(e, ensemble, quorum)]
        )
        assert entries_on(md, bookie, last) == brute, (bookie, last)

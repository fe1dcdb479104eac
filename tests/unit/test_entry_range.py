"""`ledger read --from/--to` against the ledger's end: the range computation, in one place."""

import pytest

from bkctl.ledger.entry_range import entry_range
from bookie.errors import InvalidArgument


@pytest.mark.parametrize(
    ("first", "last", "lac", "follow", "end"),
    [
        (0, None, 4, False, 4),  # the whole ledger
        (0, None, -1, False, -1),  # the whole of an empty ledger: nothing to print, not an error
        (2, 9, 4, False, 4),  # --to past the end is cut to the end, as head does
        (4, 4, 4, False, 4),
        (7, None, 4, True, 4),  # --follow waits for entries past the end
    ],
)
def test_ranges_that_read(first, last, lac, follow, end):
    assert entry_range(12, first, last, lac, follow) == end


@pytest.mark.parametrize(
    ("first", "last", "lac", "follow", "message"),
    [
        (3, 1, 4, False, "--from 3 is after --to 1"),
        (3, 1, 4, True, "--from 3 is after --to 1"),
        (5, None, 4, False, "--from 5 is past the end of ledger 12: its last entry is 4"),
        (0, 3, -1, False, "--from 0 is past the end of ledger 12: it has no entries"),
    ],
)
def test_ranges_that_are_usage_errors(first, last, lac, follow, message):
    with pytest.raises(InvalidArgument, match=f"^{message}$"):
        entry_range(12, first, last, lac, follow)

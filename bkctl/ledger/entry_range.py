"""The entries `ledger read` prints: --from/--to checked against each other and the ledger's end, in one place."""

from __future__ import annotations

from bookie.errors import InvalidArgument


def entry_range(ledger_id: int, first: int, last: int | None, lac: int, follow: bool) -> int:
    """The last entry to read now; an empty or inverted range the user asked for is a usage error (exit 2).

    Printing nothing and exiting 0 would read as "the entries are empty". --to past the end is cut to the end, as
    `head` does; --from past the end is fine with --follow (the entries to wait for) and for a whole-ledger read
    of an empty ledger (no --from nor --to: nothing to print is the answer).
    """
    if last is not None and first > last:
        raise InvalidArgument(f"--from {first} is after --to {last}")
    if not follow and first > lac and (first > 0 or last is not None):
        end = "it has no entries" if lac < 0 else f"its last entry is {lac}"
        raise InvalidArgument(f"--from {first} is past the end of ledger {ledger_id}: {end}")
    return lac if last is None else min(last, lac)

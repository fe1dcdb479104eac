"""A bookie id as BookKeeper's ``BookieId`` accepts it (``net/BookieId.java``, ``validateBookieId``)."""

from __future__ import annotations

import re

from bookie.errors import InvalidArgument

# validateBookieId: ":-_" is a character range there (":" to "_"), so ";<=>?@[\]^" pass too
BOOKIE_ID = re.compile(r"[a-zA-Z0-9:-_.\-]+")


def is_bookie_id(value: str) -> bool:
    """Whether ``value`` is a bookie id BookKeeper accepts: its characters, and never "readonly" (the znode of the
    read-only bookies sits beside the writable ones)."""
    return BOOKIE_ID.fullmatch(value) is not None and value.lower() != "readonly"


def check_bookie_id(bookie_id: str) -> None:
    """Refuse a bookie id BookKeeper would refuse, naming what it may hold."""
    if not is_bookie_id(bookie_id):
        raise InvalidArgument(
            f"bookieId {bookie_id!r} is not a valid bookie id (letters, digits and "
            f'":;<=>?@[\\]^_.-", not "readonly"), as BookKeeper\'s BookieId requires'
        )

"""Whether a target can take what a restore or a copy writes: bookies for the widest ensemble, room for every
replica below the disk-full threshold."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from admin.restore.room import Wanted, check_room, room_of, wanted
from bookie.client.bookie_client import BookieInfo
from bookie.codec.digest import DigestType
from bookie.errors import ServiceUnavailable, Unsafe
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState, Segment

BOOKIES = ["10.0.0.1:3181", "10.0.0.2:3181", "10.0.0.3:3181"]


def metadata(size: int, write_quorum: int, digest: DigestType | None) -> LedgerMetadata:
    return LedgerMetadata(
        size, write_quorum, write_quorum, (Segment(0, tuple(BOOKIES[:size])),), state=LedgerState.CLOSED,
        last_entry_id=9, length=1000, digest_type=digest,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("digest", "per_entry"), [(DigestType.CRC32C, 40), (DigestType.CRC32, 44), (DigestType.HMAC, 56), (None, 44)]
)
def test_a_ledger_takes_its_framed_entries_on_every_bookie_of_their_write_set(digest, per_entry):
    # 10 entries, 1,000 payload bytes; each entry a 4-byte size, a 32-byte header and its digest; written twice
    assert wanted(7, metadata(3, 2, digest), 10, 1000) == Wanted(7, 3, 2 * (1000 + 10 * per_entry))


class Cluster:
    """What room_of reads of a BookKeeper client: its writable bookies and their GET_BOOKIE_INFO answers."""

    def __init__(self, answers):
        self.answers, self.core = answers, self

    def run(self, value):
        return value

    def writable_bookies(self):
        return [SimpleNamespace(bookie_id=b) for b in self.answers]

    def bookie_infos(self, bookies, timeout):
        return {b.bookie_id: self.answers[b.bookie_id] for b in bookies}


def test_the_room_is_the_free_space_above_the_disk_full_threshold():
    answers = {BOOKIES[0]: BookieInfo(0, 1000, 500), BOOKIES[1]: BookieInfo(0, 1000, 30)}
    assert room_of(Cluster(answers)) == {BOOKIES[0]: 450, BOOKIES[1]: 0}  # 5% of 1000 kept


def test_a_bookie_that_does_not_answer_makes_the_room_unknown_not_small():
    answers = {BOOKIES[0]: BookieInfo(0, 1000, 500), BOOKIES[1]: ServiceUnavailable("bookie 10.0.0.2:3181: refused")}
    with pytest.raises(ServiceUnavailable) as unknown:
        room_of(Cluster(answers))
    assert str(unknown.value) == (
        "cannot tell how much room the target has: 1 of its 2 writable bookies did not answer GET_BOOKIE_INFO "
        "(bookie 10.0.0.2:3181: refused)"
    )


def test_too_few_bookies_or_too_little_room_is_one_line_naming_it():
    ledgers = [Wanted(1, 2, 3_000_000), Wanted(2, 3, 2_000_000)]
    check_room(dict.fromkeys(BOOKIES, 2_000_000), ledgers)
    with pytest.raises(Unsafe) as few:
        check_room(dict.fromkeys(BOOKIES[:2], 10**9), ledgers)
    assert str(few.value) == "the target has 2 writable bookies; ledger 2 needs an ensemble of 3"
    with pytest.raises(Unsafe) as small:
        check_room(dict.fromkeys(BOOKIES, 1_500_000), ledgers)
    assert str(small.value) == (
        "the target is too small: its 3 writable bookies have 4.5 MB free below their disk-full threshold (95%); "
        "the 2 ledgers take 5.0 MB with every replica"
    )
    with pytest.raises(Unsafe, match=r"; the ledger takes 3\.0 MB with every replica"):
        check_room(dict.fromkeys(BOOKIES, 10), ledgers[:1])
    check_room({}, [])  # nothing to write: nothing needed

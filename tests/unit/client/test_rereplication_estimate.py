"""What a recovery's progress starts from: the bytes the lost replicas hold, as the copy counts them (framed)."""

from types import SimpleNamespace

from bookie.client.config import ClientConfig
from bookie.client.rereplication import BookieRecovery
from bookie.codec.digest import DigestType
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState, Segment


def ledger(ensemble_size, write_quorum, *segments, entries=300, size=100, closed=True, digest=DigestType.CRC32C):
    last = entries - 1 if closed else -1
    state = LedgerState.CLOSED if closed else LedgerState.OPEN
    length = entries * size if closed else 0
    return LedgerMetadata(ensemble_size, write_quorum, write_quorum, segments, state, last, length, digest, b"")


def to_copy(lost: set[str], *ledgers: LedgerMetadata) -> int:
    core = SimpleNamespace(config=ClientConfig())
    return BookieRecovery(core, lost).bytes_to_copy(list(enumerate(ledgers)))


def test_a_striped_replica_holds_its_share_of_the_write_sets_with_header_and_digest():
    md = ledger(3, 2, Segment(0, ("a", "b", "c")))
    assert to_copy({"a"}, md) == 200 * (100 + 32 + 4)  # W/E of 300 entries; a CRC32C entry's header and digest
    assert to_copy({"a", "b"}, md) == 2 * 200 * (100 + 32 + 4)
    assert to_copy({"z"}, md) == 0


def test_only_the_segments_that_name_the_lost_bookie_count():
    md = ledger(2, 2, Segment(0, ("a", "b")), Segment(100, ("c", "b")), digest=DigestType.HMAC)
    assert to_copy({"a"}, md) == 100 * (100 + 32 + 20)
    assert to_copy({"b"}, md) == 300 * (100 + 32 + 20)


def test_an_open_ledger_counts_nothing_until_it_is_closed():
    assert to_copy({"a"}, ledger(2, 2, Segment(0, ("a", "b")), closed=False)) == 0

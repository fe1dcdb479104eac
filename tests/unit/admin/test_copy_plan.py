"""What a ledger id in the target of `ledger copy` is: absent, a finished copy, an unfinished one, or foreign."""

import pytest

from admin.copy.plan import ABSENT, COPIED, FOREIGN, UNFINISHED, target_state
from admin.export.plan import PlannedLedger
from bookie.codec.digest import DigestType
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState, Segment

SOURCE = LedgerMetadata(
    3,
    2,
    2,
    (Segment(0, ("a:1", "b:1", "c:1")),),
    LedgerState.CLOSED,
    9,
    1000,
    DigestType.CRC32C,
    b"pw",
    1_700_000_000_000,
    {"app": b"x"},
)
COPY = SOURCE.with_changes(segments=(Segment(0, ("d:1", "e:1", "f:1")),), c_token=7)
MARKED = {"app": b"x", "bkctl.copy": b"r"}
CLOSED = PlannedLedger(5, SOURCE, 9, 1000)
OPEN = PlannedLedger(5, SOURCE.with_changes(state=LedgerState.OPEN, last_entry_id=-1, length=0), 12, 1300)


@pytest.mark.parametrize(
    ("ledger", "target", "state", "why"),
    [
        (CLOSED, None, ABSENT, ""),
        (CLOSED, COPY, COPIED, ""),
        (OPEN, COPY, COPIED, ""),  # copied while open, at a lower LAC: not extended
        (CLOSED, COPY.with_changes(state=LedgerState.OPEN, custom_metadata=MARKED), UNFINISHED, ""),
        (CLOSED, COPY.with_changes(custom_metadata=MARKED), FOREIGN, "closed, but marked bkctl.copy"),
        (CLOSED, COPY.with_changes(state=LedgerState.OPEN), FOREIGN, "OPEN in the target"),
        (CLOSED, COPY.with_changes(custom_metadata={"app": b"y"}), FOREIGN, "its custom metadata differs"),
        (CLOSED, COPY.with_changes(ack_quorum_size=1), FOREIGN, "its ensemble, write or ack quorum size differs"),
        (CLOSED, COPY.with_changes(digest_type=DigestType.CRC32), FOREIGN, "its digest type or password differs"),
        (CLOSED, COPY.with_changes(password=b"other"), FOREIGN, "its digest type or password differs"),
        (
            CLOSED,
            COPY.with_changes(last_entry_id=8, length=900),
            FOREIGN,
            "closed at entry 8 (900 bytes), the source at entry 9 (1000 bytes)",
        ),
        (OPEN, COPY.with_changes(last_entry_id=13), FOREIGN, "closed at entry 13, past the source's LAC 12"),
        (CLOSED, COPY.with_changes(ctime=5), FOREIGN, "its creation time differs"),
        # another copy's ledger under way (another source's, same id) is not this one's to redo
        (
            CLOSED,
            COPY.with_changes(state=LedgerState.OPEN, custom_metadata={"app": b"y", "bkctl.copy": b"r"}),
            FOREIGN,
            "its custom metadata differs",
        ),
    ],
)
def test_target_state(ledger, target, state, why):
    assert target_state(ledger, target) == (state, why)

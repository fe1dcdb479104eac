"""Whether a cluster can take the ledgers a restore or a copy is to write, asked before anything is written: enough
writable bookies for the widest ensemble, and room on their disks for every replica.

The room is each writable bookie's free space (GET_BOOKIE_INFO, which Java bookies answer too) above
BookKeeper's default disk-full threshold, summed: a bookie past ``diskUsageThreshold`` (0.95) turns read-only. The
sum assumes the ledgers spread over the bookies, as placement spreads them; a bookie that does not answer counts
no room. Each bookie reports the filesystems of its own ledger directories: bookies sharing one filesystem (a
sandbox) count it once each.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bookie.codec.digest import DIGEST_SIZES, DigestType
from bookie.errors import BKError, Unsafe
from bookie.meta.ledger_metadata import LedgerMetadata

DISK_FULL = 0.95  # BookKeeper's default diskUsageThreshold
RECORD_OVERHEAD = 4 + 32  # per entry in an entry log: the record's size field and the framed entry's header


@dataclass(frozen=True)
class Wanted:
    """A ledger to write: its id (the target's, else the source's), ensemble size, and its bytes on the bookies'
    disks, every replica counted."""

    ledger_id: int
    ensemble_size: int
    stored: int


def wanted(ledger_id: int, metadata: LedgerMetadata, entries: int, length: int) -> Wanted:
    """What a ledger of ``entries`` entries and ``length`` payload bytes takes, written under ``metadata``'s
    quorums and digest: each entry framed (header, digest) in one record, on each bookie of its write set."""
    digest = DIGEST_SIZES[DigestType(metadata.digest_type or DigestType.CRC32)]
    framed = length + entries * (RECORD_OVERHEAD + digest)
    return Wanted(ledger_id, metadata.ensemble_size, framed * metadata.write_quorum_size)


def room_of(bk, bookie_ids: Iterable[str]) -> dict[str, int | None]:
    """Each bookie's room: its free bytes above :data:`DISK_FULL` of its capacity (None: it did not answer)."""
    room: dict[str, int | None] = {}
    for bookie_id in bookie_ids:
        try:
            total, free = bk.bookie_info(bookie_id)
        except BKError:
            room[bookie_id] = None
            continue
        room[bookie_id] = max(0, free - int(total * (1 - DISK_FULL)))
    return room


def check_room(room: dict[str, int | None], ledgers: list[Wanted], who: str = "the target") -> None:
    """Unsafe, naming the shortage, when the writable bookies of ``room`` are fewer than the widest ensemble of
    ``ledgers``, or have less room than they take."""
    if not ledgers:
        return
    widest = max(ledgers, key=lambda w: w.ensemble_size)
    if widest.ensemble_size > len(room):
        raise Unsafe(
            f"{who} has {len(room)} writable bookies; ledger {widest.ledger_id} needs an ensemble of "
            f"{widest.ensemble_size}"
        )
    needed, free = sum(w.stored for w in ledgers), sum(r or 0 for r in room.values())
    if needed > free:
        silent = sum(1 for r in room.values() if r is None)
        unknown = f" ({silent} did not say how much)" if silent else ""
        raise Unsafe(
            f"{who} is too small: its {len(room)} writable bookies have {_mb(free)} free below their disk-full "
            f"threshold ({DISK_FULL:.0%}){unknown}; the {len(ledgers)} ledgers take {_mb(needed)} with every replica"
        )


def _mb(size: int) -> str:
    return f"{size / 1e6:,.1f} MB"

"""Whether a cluster can take the ledgers a restore or a copy is to write, asked before anything is written: enough
writable bookies for the widest ensemble, and room on their disks for every replica.

A bookie's room is its free space (GET_BOOKIE_INFO, which Java bookies answer too) above BookKeeper's default
disk-full threshold: past ``diskUsageThreshold`` (0.95) a bookie turns read-only. The rooms are summed, as placement
spreads ledgers over the bookies. What a ledger takes is its entries as an entry log holds them, once per replica;
the journal's copy, which lasts until the journal rotates, and the index are not counted.
"""

from __future__ import annotations

from dataclasses import dataclass

from bookie.codec.digest import DIGEST_SIZES, DigestType
from bookie.errors import BKError, ServiceUnavailable, Unsafe
from bookie.meta.ledger_metadata import LedgerMetadata

DISK_FULL = 0.95  # BookKeeper's default diskUsageThreshold
RECORD_OVERHEAD = 4 + 32  # per entry in an entry log: the record's size field and the framed entry's header
INFO_TIMEOUT = 10.0  # seconds each bookie has to answer GET_BOOKIE_INFO


@dataclass(frozen=True)
class Wanted:
    """A ledger to write: the id its errors name, its ensemble size, and its bytes on the bookies' disks, every
    replica counted."""

    ledger_id: int
    ensemble_size: int
    stored: int


def wanted(ledger_id: int, metadata: LedgerMetadata, entries: int, length: int) -> Wanted:
    """What a ledger of ``entries`` entries and ``length`` payload bytes takes, written under ``metadata``'s
    quorums and digest: each entry framed (header, digest) in one record, on each bookie of its write set."""
    digest = DIGEST_SIZES[DigestType(metadata.digest_type or DigestType.CRC32)]
    framed = length + entries * (RECORD_OVERHEAD + digest)
    return Wanted(ledger_id, metadata.ensemble_size, framed * metadata.write_quorum_size)


def room_of(bk) -> dict[str, int]:
    """Each writable bookie of ``bk``'s cluster and its room, in bytes. ServiceUnavailable when one does not answer:
    how much room the cluster has is then unknown."""
    bookies = bk.run(bk.core.writable_bookies())
    infos = bk.run(bk.core.bookie_infos(bookies, INFO_TIMEOUT))
    silent = sorted((bookie_id, info) for bookie_id, info in infos.items() if isinstance(info, BKError))
    if silent:
        raise ServiceUnavailable(
            f"cannot tell how much room the target has: {len(silent)} of its {len(infos)} writable bookies did not "
            f"answer GET_BOOKIE_INFO ({silent[0][1]})"
        )
    return {
        bookie_id: max(0, info.free_disk_space - int(info.total_disk_capacity * (1 - DISK_FULL)))
        for bookie_id, info in infos.items()
        if not isinstance(info, BKError)
    }


def check_room(room: dict[str, int], ledgers: list[Wanted]) -> None:
    """Unsafe, naming the shortage, when the writable bookies of ``room`` are fewer than the widest ensemble of
    ``ledgers``, or have less room than they take."""
    if not ledgers:
        return
    widest = max(ledgers, key=lambda w: w.ensemble_size)
    if widest.ensemble_size > len(room):
        raise Unsafe(
            f"the target has {len(room)} writable bookies; ledger {widest.ledger_id} needs an ensemble of "
            f"{widest.ensemble_size}"
        )
    needed, free = sum(w.stored for w in ledgers), sum(room.values())
    if needed > free:
        ledgers_take = "the ledger takes" if len(ledgers) == 1 else f"the {len(ledgers)} ledgers take"
        raise Unsafe(
            f"the target is too small: its {len(room)} writable bookies have {_mb(free)} free below their disk-full "
            f"threshold ({DISK_FULL:.0%}); {ledgers_take} {_mb(needed)} with every replica"
        )


def _mb(size: int) -> str:
    return f"{size / 1e6:,.1f} MB"

"""Over-replicated ledgers: the copies a bookie holds of ledgers whose ensembles no longer name it (BookKeeper:
bookie/ScanAndCompareGarbageCollector.java, removeOverReplicatedledgers).

A bookie that was down while its ledgers were recovered onto others (`bkctl bookie recover`, autorecovery, a replace)
still has their entries when it comes back; nothing else would ever free them. Every gcOverreplicatedLedgerWaitTime
its garbage collector (bookie/storage/gc.py) hands the local ledgers here. A ledger is forgotten when it is closed
(an open one may still get an ensemble naming this bookie) and none of its segments names this bookie, checked once,
then again while holding the ledger's re-replication lock (the znode a replication worker, ours or BookKeeper's,
takes: bookie/meta/underreplication.py): a replication worker cannot add this bookie back to its ensemble between the
check and the deletion, and a ledger being re-replicated is left for a later look.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from bookie.errors import CorruptData, NoSuchLedger
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.store import MetadataStore
from bookie.meta.underreplication import UnderReplicationManager

log = logging.getLogger(__name__)


def remove_over_replicated(
    store: MetadataStore, bookie_id: str, local: Iterable[int], forget: Callable[[int], None], where: str = ""
) -> list[int]:
    """Forget, with ``forget``, those of the ``local`` ledgers that ``bookie_id`` no longer owns; return their ids.
    ``where``: the ledger directory of the collector asking, for the log (DbLedgerStorage has one per directory).

    A ledger whose metadata is gone is left to the ledger GC that follows, one whose metadata cannot be read is kept
    (a warning). ZooKeeper unreachable raises :class:`bookie.errors.BKError`: the look fails and is made again at the
    next GC run."""
    where = f" in {where}" if where else ""
    ledgers = LedgerManager(store)
    locks = UnderReplicationManager(store)
    removed = []
    for ledger_id in local:
        if not _not_owned(ledgers, ledger_id, bookie_id):
            continue
        if not locks.try_lock(ledger_id, bookie_id):
            log.info("gc%s: ledger %d is over-replicated here but being re-replicated: kept for now", where, ledger_id)
            continue
        try:
            if _not_owned(ledgers, ledger_id, bookie_id):  # again, now that no re-replication can change it
                forget(ledger_id)
                removed.append(ledger_id)
                log.info(
                    "gc%s: ledger %d removed: over-replicated, no ensemble of it names this bookie", where, ledger_id
                )
        finally:
            locks.release_lock(ledger_id)
    return removed


def _not_owned(ledgers: LedgerManager, ledger_id: int, bookie_id: str) -> bool:
    """The ledger is closed and no segment's ensemble names the bookie (isNotBookieIncludedInLedgerEnsembles)."""
    try:
        md, _ = ledgers.read(ledger_id)
    except NoSuchLedger:
        return False
    except CorruptData as exc:
        log.warning("gc: cannot tell whether ledger %d is over-replicated here, kept: %s", ledger_id, exc)
        return False
    return md.is_closed and all(bookie_id not in segment.bookies for segment in md.segments)

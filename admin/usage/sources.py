"""Where a :class:`StorageView` and the metadata it is explained against come from: a bookie's directories
(bookie/storage/usage.py reads them; a running bookie of ours states its own view through its admin client's
``storage_usage``), and ZooKeeper.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.ledger_metadata import LedgerMetadata
from bookie.meta.store import MetadataStore
from bookie.storage.usage import BookieConfig, StorageView, ledger_locations, view_of_dirs


def offline_view(config: BookieConfig, bookie_id: str | None = None, ledger_id: int | None = None) -> StorageView:
    """A bookie's directories, read without writing (ours or a Java bookie's, running or not); ``bookie_id`` when
    no cookie in them names it; ``ledger_id``: with that ledger's locations."""
    view = view_of_dirs(config)
    view.bookie_id = view.bookie_id or bookie_id
    if ledger_id is not None:
        view.ledger_ranges = ledger_locations(config, ledger_id)
    return view


def ledgers_naming(
    store: MetadataStore,
    bookie_ids: Iterable[str],
    also: Iterable[int] = (),
    on_corrupt: Callable[[Exception], None] | None = None,
) -> dict[int, LedgerMetadata]:
    """The metadata of every ledger whose ensembles name one of the bookies, and of those of ``also`` that exist
    (one pass over every ledger's metadata; unreadable metadata goes to ``on_corrupt`` and is skipped)."""
    wanted, bookies = set(also), set(bookie_ids)
    found = {}
    for ledger_id, md in LedgerManager(store).iter_ledgers(on_corrupt=on_corrupt or (lambda exc: None)):
        if ledger_id in wanted or any(bookies.intersection(s.bookies) for s in md.segments):
            found[ledger_id] = md
    return found

"""Missing bookies: those the cluster knows of that are not registered.

A bookie is known to the cluster when it has a cookie (``<root>/cookies/<bookieId>``, written at its first start and
removed only by a decommission or ``cookie delete``) or when some ledger's ensemble names it. A known bookie that is
neither writable nor read-only under ``<root>/available`` is *missing*: dead, stopped, or cut off from ZooKeeper
long enough for its session to expire.

When it went missing is not recorded anywhere: its registration is an ephemeral znode that leaves no trace when its
session ends. What ZooKeeper does tell is the latest time the bookie is known to have been part of the cluster: its
cookie's creation, and the creation of the newest ledger whose first ensemble names it (a client places a new
ledger only on registered bookies). It went missing after that time, which is what ``last_known_alive`` gives.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from bookie.errors import NotFound
from bookie.meta.cookies import CookieStore
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.ledger_metadata import LedgerMetadata
from bookie.meta.registration import BookieRegistry
from bookie.meta.store import MetadataStore


@dataclass
class EnsembleNames:
    """Which bookies the ensembles of the ledgers read so far name, with how many ledgers name each, and the
    creation time (ms) of the newest ledger whose first ensemble names each."""

    ledgers: dict[str, int] = field(default_factory=dict)
    placed_at: dict[str, int] = field(default_factory=dict)

    def add(self, md: LedgerMetadata) -> None:
        for bookie_id in {b for segment in md.segments for b in segment.bookies}:
            self.ledgers[bookie_id] = self.ledgers.get(bookie_id, 0) + 1
        if md.segments and md.ctime is not None:
            for bookie_id in md.segments[0].bookies:
                self.placed_at[bookie_id] = max(self.placed_at.get(bookie_id, 0), md.ctime)

    @classmethod
    def of_all_ledgers(cls, store: MetadataStore) -> EnsembleNames:
        """Read every ledger's metadata (unreadable ones are skipped: ``cluster check`` reports them)."""
        names = cls()
        for _, md in LedgerManager(store).iter_ledgers(on_corrupt=lambda exc: None):
            names.add(md)
        return names


@dataclass(frozen=True)
class MissingBookie:
    bookie_id: str
    cookie_ctime: int | None  # ms: when its cookie was created; None: it has none
    ledgers: int | None  # ledgers whose ensembles name it; None: ledgers were not read
    placed_at: int | None  # ms: creation of the newest ledger whose first ensemble names it

    @property
    def last_known_alive(self) -> int | None:
        """The latest time (ms) it is known to have been part of the cluster; it went missing after that."""
        known = [t for t in (self.cookie_ctime, self.placed_at) if t is not None]
        return max(known) if known else None


def missing_bookies(
    store: MetadataStore, names: EnsembleNames | None = None, registered: Iterable[str] | None = None
) -> list[MissingBookie]:
    """The bookies that have a cookie, or that ``names`` says a ledger names, and that are not registered, by id.

    ``names``: None reads no ledger (cookies only; every ``ledgers`` is None then). ``registered``: the registered
    bookie ids when the caller has just listed them; read otherwise (after the cookies, so a bookie that starts for
    the first time meanwhile is not reported)."""
    cookies = CookieStore(store)
    known = set(cookies.list()) | set(names.ledgers if names else ())
    if registered is None:
        registered = [b.bookie_id for b in BookieRegistry(store).list(writable=True, readonly=True)]
    missing = []
    for bookie_id in sorted(known - set(registered)):
        try:
            cookie_ctime: int | None = store.get(cookies.path(bookie_id))[1].ctime
        except NotFound:
            cookie_ctime = None
        missing.append(
            MissingBookie(
                bookie_id,
                cookie_ctime,
                names.ledgers.get(bookie_id, 0) if names else None,
                names.placed_at.get(bookie_id) if names else None,
            )
        )
    return missing


def unknown_bookies(
    store: MetadataStore, bookie_ids: Iterable[str], registered: Iterable[str] | None = None
) -> set[str]:
    """Of ``bookie_ids``, those the cluster has never heard of: not registered, no cookie, and named by no ledger's
    ensemble. The ledgers are read only for ids neither registered nor with a cookie, and only until all of them are
    found."""
    if registered is None:
        registered = [b.bookie_id for b in BookieRegistry(store).list(writable=True, readonly=True)]
    unknown = set(bookie_ids) - set(registered) - set(CookieStore(store).list())
    if unknown:
        for _, md in LedgerManager(store).iter_ledgers(on_corrupt=lambda exc: None):
            unknown -= {b for segment in md.segments for b in segment.bookies}
            if not unknown:
                break
    return unknown

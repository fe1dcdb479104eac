"""What a ledger handle, a recovery or a re-replication uses of the client (BookKeeper: client/ClientContext.java):
the cluster's metadata, the configuration and the bookies' connections. :class:`~bookie.client.core.ClientCore`
provides it; the handles depend on this, never on the core that makes them."""

from __future__ import annotations

from typing import Protocol

from bookie.client.bookie_client import BookieClient
from bookie.client.config import ClientConfig
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.registration import RegisteredBookie
from bookie.tls import Tls


class ClientContext(Protocol):
    """Used on the client's event loop. ``ledgers``'s calls block: from the loop, run them in a thread."""

    @property
    def config(self) -> ClientConfig: ...

    @property
    def ledgers(self) -> LedgerManager: ...

    @property
    def tls(self) -> Tls | None:
        """The client's TLS, None without (an EUA answer is worded by it)."""

    def bookie(self, bookie_id: str) -> BookieClient:
        """The client of one bookie's data operations (reused; closed with the client)."""

    async def writable_bookies(self) -> list[RegisteredBookie]:
        """The writable bookies, as registered."""

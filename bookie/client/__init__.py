"""The BookKeeper client: create, write, read, recover and delete ledgers. See :class:`BookKeeper`."""

from bookie.client.bookkeeper import BookKeeper, LedgerHandle, ReadHandle
from bookie.client.config import ClientConfig

__all__ = ["BookKeeper", "ClientConfig", "LedgerHandle", "ReadHandle"]

"""What a bookie keeps of a ledger besides its entries: its master key, its fence bit and its explicit LAC.

InterleavedLedgerStorage keeps it in the ledger's index file header (bookie/storage/index.py's ``IndexHeader``, a
subclass), DbLedgerStorage in its ledgers index (a ``LedgerData``, bookie/storage/db/indexes.py). The rules that read
and change it are in bookie/storage/ledger_storage.py, once for both.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LedgerHeader:
    """A ledger's master key, fence bit and explicit LAC (the LAC buffer its writer sent; None: never sent).

    Frozen: a change is a new header handed to the engine, never one changed under a checkpoint writing it.
    """

    master_key: bytes = b""
    fenced: bool = False
    explicit_lac: bytes | None = None

    @property
    def has_master_key(self) -> bool:
        """Whether a writer's key is set: an empty or all-zero key is none yet (a ledger first seen by a fence or
        entry record in replay, or rebuilt from entry logs), and the next writer's key is taken (BookKeeper:
        bookie/storage/ldb/LedgerMetadataIndex.java, setMasterKey's ``isArrayAllZeros``)."""
        return any(self.master_key)

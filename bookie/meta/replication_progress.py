"""How far each replication worker is: what `bkctl autorecovery status` shows.

One ephemeral znode per ledger a worker re-replicates, ``<ledgers root>/underreplication/bkctl-progress/urL%010d``,
holding JSON: ``worker``, ``ledgerId``, ``entries`` and ``bytes`` copied, ``totalBytes`` (what the lost replicas
hold, estimated from the metadata), ``startedAt`` and ``updatedAt`` (ms). It goes with the worker's session, as its
re-replication lock does. It lives beside BookKeeper's re-replication state, where BookKeeper's workers and tools
never look (they list only ``underreplication/ledgers`` and ``underreplication/locks``), and the lock's own data —
``LockDataFormat``, which a Java worker parses as TextFormat to name the holder — gets nothing new. A Java worker
writes no progress: its ledgers show as locked, with no count.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from kazoo.exceptions import NodeExistsError

from bookie.errors import NotFound
from bookie.meta.store import MetadataStore, zk_errors


@dataclass
class Progress:
    ledger_id: int
    worker: str
    total_bytes: int
    entries: int = 0
    copied: int = 0  # bytes
    started_at: int = 0  # ms since the epoch
    updated_at: int = 0

    def doc(self) -> dict[str, Any]:
        return {
            "ledgerId": self.ledger_id,
            "worker": self.worker,
            "entries": self.entries,
            "bytes": self.copied,
            "totalBytes": self.total_bytes,
            "startedAt": self.started_at,
            "updatedAt": self.updated_at,
        }

    @classmethod
    def parse(cls, ledger_id: int, data: bytes) -> Progress | None:
        """None for data that is not a progress record (the znode is informative only)."""
        try:
            doc = json.loads(data)
            return cls(
                ledger_id,
                str(doc["worker"]),
                int(doc["totalBytes"]),
                int(doc["entries"]),
                int(doc["bytes"]),
                int(doc["startedAt"]),
                int(doc["updatedAt"]),
            )
        except (ValueError, KeyError, TypeError):
            return None


class ReplicationProgress:
    def __init__(self, store: MetadataStore) -> None:
        self.store = store
        self.root = store.path("underreplication", "bkctl-progress")

    def path(self, ledger_id: int) -> str:
        return f"{self.root}/urL{ledger_id:010d}"

    def start(self, ledger_id: int, worker: str, total_bytes: int) -> Progress:
        """Say that ``worker`` (holding the ledger's lock) starts copying it (blocking)."""
        now = int(time.time() * 1000)
        progress = Progress(ledger_id, worker, total_bytes, started_at=now, updated_at=now)
        data = json.dumps(progress.doc()).encode()
        with zk_errors(f"write the progress of ledger {ledger_id}"):
            try:
                self.store.zk.create(self.path(ledger_id), data, ephemeral=True, makepath=True)
            except NodeExistsError:  # this session's, from a try that failed: the lock is ours, so is the record
                self.store.zk.set(self.path(ledger_id), data)
        return progress

    def update(self, progress: Progress) -> None:
        """Write how far it is (blocking)."""
        progress.updated_at = int(time.time() * 1000)
        with zk_errors(f"write the progress of ledger {progress.ledger_id}"):
            self.store.zk.set(self.path(progress.ledger_id), json.dumps(progress.doc()).encode())

    def finish(self, ledger_id: int) -> None:
        """Remove this session's record of the ledger (blocking)."""
        self.store.delete_own(self.path(ledger_id))

    def list(self) -> list[Progress]:
        """The ledgers being re-replicated by workers that write their progress, by ledger id (blocking)."""
        found = []
        for name in sorted(self.store.children(self.root)):
            if not (name.startswith("urL") and name[3:].isdigit()):
                continue
            try:
                data, _ = self.store.get(f"{self.root}/{name}")
            except NotFound:
                continue  # finished meanwhile
            progress = Progress.parse(int(name[3:]), data)
            if progress is not None:
                found.append(progress)
        return found

"""The cluster's data-movement lock: one drain, rebalance or placement repair at a time.

An ephemeral znode, ``<ledgers root>/underreplication/bkctl-movement``, holding who took it (what, host, pid, since)
as JSON: it goes with the session of the process that holds it, so a killed bkctl frees it when ZooKeeper expires
its session. It lives beside BookKeeper's re-replication state, where BookKeeper's tools never look: they list only
``underreplication/ledgers`` and ``underreplication/locks``.
"""

from __future__ import annotations

import json
import os
import socket
import time
from types import TracebackType

from kazoo.exceptions import NodeExistsError

from bookie.errors import Busy, NotFound
from bookie.meta.store import MetadataStore, zk_errors


class MovementLock:
    """``with MovementLock(store, "drain of b1:3181"):`` — raises :class:`Busy` naming the holder when taken."""

    def __init__(self, store: MetadataStore, what: str) -> None:
        self.store, self.what = store, what
        self.path = store.path("underreplication", "bkctl-movement")

    def holder(self) -> dict[str, object] | None:
        """Who holds it now, as they wrote it; None when nobody does."""
        try:
            with zk_errors("read the data-movement lock"):
                data, _ = self.store.zk.get(self.path)
        except NotFound:
            return None
        try:
            doc = json.loads(data)
        except ValueError:
            doc = None
        return doc if isinstance(doc, dict) else {"what": "unknown"}

    def __enter__(self) -> MovementLock:
        doc = {"what": self.what, "host": socket.gethostname(), "pid": os.getpid(), "since": int(time.time())}
        try:
            with zk_errors("take the data-movement lock"):
                self.store.zk.create(self.path, json.dumps(doc).encode(), ephemeral=True, makepath=True)
        except NodeExistsError:
            held = self.holder() or {}
            since = held.get("since")
            when = time.strftime(" since %Y-%m-%d %H:%M:%S UTC", time.gmtime(since)) if isinstance(since, int) else ""
            raise Busy(
                f"another data movement runs on this cluster: {held.get('what', 'unknown')} "
                f"(pid {held.get('pid', '?')} on {held.get('host', '?')}{when})"
            ) from None
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        try:
            with zk_errors("release the data-movement lock"):
                self.store.zk.delete(self.path)
        except NotFound:
            pass

"""The cluster's data-movement lock: one drain, rebalance or placement repair at a time.

An ephemeral znode, ``<ledgers root>/underreplication/bkctl-movement``, holding who took it (what, host, pid, since)
as JSON: it goes with the session of the process that holds it, so a killed bkctl frees it when ZooKeeper expires
its session (a rerun on the same host waits for that when the holder's pid is gone). It lives beside BookKeeper's
re-replication state, where BookKeeper's tools never look: they list only ``underreplication/ledgers`` and
``underreplication/locks``.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from collections.abc import Callable
from types import TracebackType

from kazoo.exceptions import NodeExistsError

from bookie.errors import Busy, NotFound
from bookie.local.process import pid_alive
from bookie.meta.store import MetadataStore, zk_errors

log = logging.getLogger(__name__)
STALE_WAIT = 60.0  # seconds: ZooKeeper's default longest session is 40 s (20 ticks of 2 s)


class MovementLock:
    """``with MovementLock(store, "drain of b1:3181"):`` — raises :class:`Busy` naming the holder when taken."""

    def __init__(
        self,
        store: MetadataStore,
        what: str,
        on_wait: Callable[[str], None] = log.warning,
        stale_wait: float = STALE_WAIT,
    ) -> None:
        """``on_wait``: told, once, that it waits for a dead holder's session to expire, for up to ``stale_wait``
        seconds (a holder that runs, or runs elsewhere, is refused at once)."""
        self.store, self.what, self.on_wait, self.stale_wait = store, what, on_wait, stale_wait
        self.waited = False  # it waited for a dead holder (said once in the log)
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
        deadline = time.monotonic() + self.stale_wait
        while True:
            try:
                with zk_errors("take the data-movement lock"):
                    self.store.zk.create(self.path, json.dumps(doc).encode(), ephemeral=True, makepath=True)
                return self
            except NodeExistsError:
                found = self.holder()
                if found is None:  # its holder's session ended between the two calls: take it now
                    continue
                held = found
            if not self.dead(held) or time.monotonic() >= deadline:
                break
            if not self.waited:
                self.on_wait(
                    f"the data-movement lock is held by {held.get('what')} (pid {held.get('pid')}, no longer "
                    "running): waiting for its ZooKeeper session to expire"
                )
                self.waited = True
            time.sleep(0.5)
        since = held.get("since")
        when = time.strftime(" since %Y-%m-%d %H:%M:%S UTC", time.gmtime(since)) if isinstance(since, int) else ""
        raise Busy(
            f"another data movement runs on this cluster: {held.get('what', 'unknown')} "
            f"(pid {held.get('pid', '?')} on {held.get('host', '?')}{when})"
        )

    @staticmethod
    def dead(held: dict[str, object]) -> bool:
        """The holder is a process of this host that no longer runs (a bkctl killed with -9): its session, and the
        lock with it, goes when ZooKeeper expires it."""
        pid = held.get("pid")
        return held.get("host") == socket.gethostname() and isinstance(pid, int) and not pid_alive(pid)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.store.delete_own(self.path)  # one taken by another after this session expired stays theirs

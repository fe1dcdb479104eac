"""The bookie port's listener (BookKeeper's ``BookieNettyServer``): one :class:`BookieConnection` per client."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bookie.server.wire.connection import BookieConnection


class WireServer:
    """The bookie port's listener and its connections."""

    def __init__(self, bookie: Any, handlers: Any, max_frame_size: int) -> None:
        self.bookie = bookie
        self.tls = bookie.config.tls  # bookie.tls.Tls, or None: START_TLS is answered EBADREQ
        self.authorizer = bookie.config.authorizer
        self.read_requires_key: bool = bookie.config.bkctlReadRequiresMasterKey  # the opt-in per-ledger read check
        self.handlers = handlers  # BookieHandlers
        self.storage = bookie.storage
        self.max_frame_size = max_frame_size
        self.connections: set[BookieConnection] = set()
        self.server: asyncio.AbstractServer | None = None

    async def start(self, host: str, port: int) -> None:
        loop = asyncio.get_running_loop()
        self.server = await loop.create_server(lambda: BookieConnection(self), host, port, reuse_address=True)

    async def stop(self, grace: float = 2.0) -> None:
        """Stop accepting; give adds in flight ``grace`` seconds to be answered; close every connection."""
        if self.server is None:
            return
        self.server.close()
        deadline = time.monotonic() + grace
        while any(c.adds_in_flight for c in self.connections) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        for connection in list(self.connections):
            connection.close()

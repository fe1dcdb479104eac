"""BookKeeper's own wire protocol on the bookie port (proto/README.md), as stages one can read alone, after
BookKeeper's Netty pipeline (``BookieNettyServer``, ``BookieProtoEncoding``):

- ``server.py``: the listener;
- ``connection.py``: framing, pacing (back-pressure) and writing, one asyncio ``Protocol`` per connection;
- ``admission.py``: authentication, START_TLS and the opt-in per-ledger read check;
- ``requests.py``: the request processor, v3 and v2, dispatched by the operation table of ``operations.py``;
- ``adds.py``: a pass's adds as one storage batch; ``reads.py``: the one read path.

Frames are decoded and encoded by bookie/codec (``frames.py`` in C for plain adds and reads, ``wire.py`` for the
rest); the operations that wait run on bookie/server/handlers.py.
"""

from bookie.server.wire.connection import BookieConnection
from bookie.server.wire.server import WireServer

__all__ = ["BookieConnection", "WireServer"]

"""DbLedgerStorage's caches, as BookKeeper's ``WriteCache`` and ``ReadCache``
(``bookkeeper-server/src/main/java/org/apache/bookkeeper/bookie/storage/ldb/``).

The write cache holds every entry added since the last checkpoint: there are two, swapped by the checkpoint, which
then writes the full one into the entry log sorted by ledger and entry id (so a ledger's entries lie together, and a
sequential read finds them together), then their locations, then empties it. Reads look in both. The read cache
holds the entries read ahead of a read that missed: the entries that follow it in the entry log, while they belong
to the same ledger.
"""

from __future__ import annotations

import threading
from collections import OrderedDict


class WriteCache:
    """Entries (framed: ledgerId, entryId, ...) by ledger and entry id, up to ``max_size`` bytes."""

    def __init__(self, max_size: int):
        self.max_size = max_size
        self.size = 0
        self.count = 0
        self.ledgers: dict[int, dict[int, bytes]] = {}
        self._last: dict[int, int] = {}  # ledgerId -> highest entry id in the cache

    def fits(self, size: int) -> bool:
        """Whether ``size`` more bytes fit. An empty cache takes anything, so an entry larger than the cache is
        stored rather than refused forever."""
        return self.size + size <= self.max_size or self.count == 0

    def put(self, ledger_id: int, entry_id: int, entry: bytes) -> None:
        entries = self.ledgers.get(ledger_id)
        if entries is None:
            entries = self.ledgers[ledger_id] = {}
        old = entries.get(entry_id)
        if old is not None:
            self.size -= len(old)
            self.count -= 1
        entries[entry_id] = entry
        self.size += len(entry)
        self.count += 1
        if entry_id > self._last.get(ledger_id, -1):
            self._last[ledger_id] = entry_id

    def get(self, ledger_id: int, entry_id: int) -> bytes | None:
        entries = self.ledgers.get(ledger_id)
        return entries.get(entry_id) if entries is not None else None

    def last_entry(self, ledger_id: int) -> int:
        """The highest entry id of the ledger in the cache; -1 when none."""
        return self._last.get(ledger_id, -1)

    def delete_ledger(self, ledger_id: int) -> None:
        entries = self.ledgers.pop(ledger_id, None)
        self._last.pop(ledger_id, None)
        if entries:
            self.size -= sum(map(len, entries.values()))
            self.count -= len(entries)

    def sorted_entries(self) -> list[tuple[int, int, bytes]]:
        """``(ledgerId, entryId, entry)``, by ledger then entry id (BookKeeper's ``forEach``)."""
        return [
            (ledger_id, entry_id, entries[entry_id])
            for ledger_id, entries in sorted(self.ledgers.items())
            for entry_id in sorted(entries)
        ]

    def clear(self) -> None:
        self.ledgers, self._last = {}, {}
        self.size = self.count = 0


class ReadCache:
    """Entries read ahead, least recently inserted evicted first, up to ``max_size`` bytes."""

    def __init__(self, max_size: int):
        self.max_size = max_size
        self.size = 0
        self._entries: OrderedDict[tuple[int, int], bytes] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def put(self, ledger_id: int, entry_id: int, entry: bytes) -> None:
        if len(entry) > self.max_size:
            return
        key = (ledger_id, entry_id)
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.size -= len(old)
            self._entries[key] = entry
            self.size += len(entry)
            while self.size > self.max_size:
                _, evicted = self._entries.popitem(last=False)
                self.size -= len(evicted)

    def get(self, ledger_id: int, entry_id: int) -> bytes | None:
        entry = self._entries.get((ledger_id, entry_id))
        if entry is None:
            self.misses += 1
        else:
            self.hits += 1
        return entry

    @property
    def count(self) -> int:
        return len(self._entries)

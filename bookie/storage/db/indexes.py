"""DbLedgerStorage's two indexes, in RocksDB (kv.py), as BookKeeper 4.17.4 lays them out
(``bookkeeper-server/src/main/java/org/apache/bookkeeper/bookie/storage/ldb/{EntryLocationIndex,
LedgerMetadataIndex}.java``).

Byte layout::

    locations   key   int64 ledgerId | int64 entryId   (16 bytes, big-endian)
                value int64 location = (entryLogId << 32) | position of the framed entry in the log
    ledgers     key   int64 ledgerId                   (8 bytes, big-endian; negative ids are not ledgers:
                                                        -0xeefd holds the storage state flags as an int64)
                value LedgerData protobuf (proto/db_ledger_storage.proto): exists, fenced, masterKey,
                      explicitLac, limbo

A ledger's last entry is the floor of ``(ledgerId, INT64_MAX)``. Deleting a ledger only marks it: its locations
go in one range delete ``[(ledgerId, 0), (ledgerId, INT64_MAX))`` after the next checkpoint, as in BookKeeper.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Iterator
from pathlib import Path

from bookie._proto.db_ledger_storage_pb2 import LedgerData
from bookie.storage.db.kv import LEDGERS, LOCATIONS, KeyValueStorage, RocksDbConfig

LOCATION_KEY = struct.Struct(">qq")
LONG = struct.Struct(">q")
MAX_ENTRY = (1 << 63) - 1
STORAGE_FLAGS = -0xEEFD


class EntryLocationIndex:
    """The ``locations`` database: ``(ledgerId, entryId) -> location``."""

    def __init__(self, index_dir: Path, config: RocksDbConfig | None = None, read_only: bool = False):
        self.db = KeyValueStorage(index_dir, LOCATIONS, config, read_only)
        self.deleted: set[int] = set()

    def location(self, ledger_id: int, entry_id: int) -> int:
        """0 when the index has no such entry."""
        value = self.db.get(LOCATION_KEY.pack(ledger_id, entry_id))
        return LONG.unpack(value)[0] if value is not None else 0

    def last_entry(self, ledger_id: int) -> int:
        """The ledger's highest entry id in the index; -1 when it has none."""
        if ledger_id in self.deleted:
            return -1
        found = self.db.floor(LOCATION_KEY.pack(ledger_id, MAX_ENTRY))
        if found is None:
            return -1
        found_ledger, entry_id = LOCATION_KEY.unpack(found[0])
        return entry_id if found_ledger == ledger_id else -1

    def entries(self, ledger_id: int) -> Iterator[tuple[int, int]]:
        """``(entryId, location)`` of the ledger, ascending."""
        begin, end = LOCATION_KEY.pack(ledger_id, 0), LOCATION_KEY.pack(ledger_id, MAX_ENTRY)
        for key, value in self.db.items(begin, end):
            yield LOCATION_KEY.unpack(key)[1], LONG.unpack(value)[0]

    def all(self) -> Iterator[tuple[int, int, int]]:
        """``(ledgerId, entryId, location)`` of every record, in key order."""
        for key, value in self.db.items():
            ledger_id, entry_id = LOCATION_KEY.unpack(key)
            yield ledger_id, entry_id, LONG.unpack(value)[0]

    def write(self, locations: list[tuple[int, int, int]]) -> None:
        """Add or replace ``(ledgerId, entryId, location)`` records, durable on return."""
        self.db.write((LOCATION_KEY.pack(lid, eid), LONG.pack(loc)) for lid, eid, loc in locations)

    def delete(self, ledger_id: int) -> None:
        self.deleted.add(ledger_id)

    def remove_deleted(self) -> None:
        """Drop the locations of the ledgers deleted so far (BookKeeper's removeOffsetFromDeletedLedgers)."""
        gone = set(self.deleted)
        if gone:
            ranges = [(LOCATION_KEY.pack(lid, 0), LOCATION_KEY.pack(lid, MAX_ENTRY)) for lid in sorted(gone)]
            self.db.write((), ranges)
            self.deleted -= gone

    def close(self) -> None:
        self.db.close()


def ledger_data(master_key: bytes = b"", fenced: bool = False) -> LedgerData:
    return LedgerData(exists=True, fenced=fenced, masterKey=master_key)


class LedgerMetadataIndex:
    """The ``ledgers`` database, all of it held in memory (as BookKeeper does): changes are written at the next
    :meth:`flush` (a checkpoint), deletions at :meth:`remove_deleted`."""

    def __init__(self, index_dir: Path, config: RocksDbConfig | None = None, read_only: bool = False):
        self.db = KeyValueStorage(index_dir, LEDGERS, config, read_only)
        self.ledgers: dict[int, LedgerData] = {}
        for key, value in self.db.items():
            (ledger_id,) = LONG.unpack_from(key)
            # BookKeeper's rebuild-db-ledgers-index writes 16-byte keys (8 zero bytes more), which sort after the
            # ledger's 8-byte key written since by the bookie: that one is the ledger's state
            if ledger_id >= 0 and (len(key) == LONG.size or ledger_id not in self.ledgers):
                self.ledgers[ledger_id] = LedgerData.FromString(value)
        self.lock = threading.Lock()
        self._pending: dict[int, LedgerData] = {}
        self._deleted: set[int] = set()

    def get(self, ledger_id: int) -> LedgerData | None:
        return self.ledgers.get(ledger_id)

    def set(self, ledger_id: int, data: LedgerData) -> None:
        with self.lock:
            data.exists = True
            self.ledgers[ledger_id] = data
            self._pending[ledger_id] = data
            self._deleted.discard(ledger_id)

    def delete(self, ledger_id: int) -> None:
        with self.lock:
            self.ledgers.pop(ledger_id, None)
            self._pending.pop(ledger_id, None)
            self._deleted.add(ledger_id)

    def ledger_ids(self) -> list[int]:
        return sorted(self.ledgers)

    def flush(self) -> None:
        """Write the changed ledgers, synced."""
        with self.lock:
            pending, self._pending = self._pending, {}
        if pending:
            self.db.write((LONG.pack(lid), data.SerializeToString()) for lid, data in pending.items())

    def remove_deleted(self) -> None:
        with self.lock:
            deleted, self._deleted = self._deleted, set()
        for ledger_id in deleted:
            self.db.delete(LONG.pack(ledger_id))
        if deleted:
            self.db.sync()

    def storage_flags(self) -> int:
        value = self.db.get(LONG.pack(STORAGE_FLAGS))
        return LONG.unpack(value)[0] if value is not None else 0

    def close(self) -> None:
        self.db.close()

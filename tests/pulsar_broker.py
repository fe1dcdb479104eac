"""A stand-in for a Pulsar broker's metadata work, for tests: it writes what a broker writes, where a broker writes
it (apache/pulsar MetaStoreImpl, BookkeeperSchemaStorage, LedgerMetadataUtils), with Pulsar's messages
(bookie/_proto/pulsar_*_pb2, from proto/pulsar_*.proto) in binary protobuf, and creates ledgers with the custom
metadata a broker gives them — through our client, or through whatever ``create`` it is handed (the Java client).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from bookie._proto.pulsar_ml_data_formats_pb2 import ManagedCursorInfo, ManagedLedgerInfo, PositionInfo
from bookie._proto.pulsar_schema_storage_format_pb2 import SchemaLocator
from bookie.client import BookKeeper
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.store import MetadataStore


def managed_ledger_metadata(name: str, cursor: str | None = None) -> dict[str, bytes]:
    """LedgerMetadataUtils.buildBaseManagedLedgerMetadata (+ buildAdditionalMetadataForCursor)."""
    md = {"application": b"pulsar", "component": b"managed-ledger", "pulsar/managed-ledger": name.encode()}
    if cursor is not None:
        md["pulsar/cursor"] = cursor.encode()
    return md


def schema_metadata(schema_id: str) -> dict[str, bytes]:
    return {"application": b"pulsar", "component": b"schema", "pulsar/schemaId": schema_id.encode()}


def compacted_metadata(topic: str) -> dict[str, bytes]:
    return {
        "application": b"pulsar",
        "component": b"compacted-ledger",
        "pulsar/compactedTopic": topic.encode(),
        "pulsar/compactedTo": b"\x08\x01\x10\x02",  # a MessageIdData; bkctl does not read it
    }


class Broker:
    """Writes Pulsar's metadata under ``root`` (Pulsar's metadata root) of ``store``'s ZooKeeper, and creates
    ledgers in ``bk``'s cluster. ``create(custom_metadata, entries)`` makes a ledger (default: our client)."""

    def __init__(self, store: MetadataStore, root: str, bk: BookKeeper, create: Callable | None = None):
        self.store, self.root, self.bk = store, root.rstrip("/"), bk
        self.create = create or self._create
        self.java = create is not None
        self.ledgers = LedgerManager(store)

    def _create(self, custom_metadata: dict[str, bytes], entries: int = 3, close: bool = True) -> int:
        handle = self.bk.create_ledger(3, 2, 2, digest_type="crc32c", password=b"", custom_metadata=custom_metadata)
        for i in range(entries):
            handle.add_entry(b"pulsar-entry-%d" % i)
        if close:
            handle.close()
        return handle.ledger_id

    def _put(self, path: str, data: bytes) -> None:
        zk = self.store.zk
        if zk.exists(path):
            zk.set(path, data)
        else:
            zk.create(path, data, makepath=True)

    # ---- managed ledgers ----
    def data_ledger(self, name: str, entries: int = 3, close: bool = True) -> int:
        return self.create(managed_ledger_metadata(name), entries, close)

    def cursor_ledger(self, name: str, cursor: str, position: PositionInfo | None = None) -> int:
        """A cursor ledger whose entries are mark-delete positions (PositionInfo), left open as a broker does."""
        if self.java:  # the Java client's ledgers have one entry
            return self.create(managed_ledger_metadata(name, cursor), 1, False)
        handle = self.bk.create_ledger(
            3, 2, 2, digest_type="crc32c", password=b"", custom_metadata=managed_ledger_metadata(name, cursor)
        )
        for _ in range(2):  # the last one is confirmed only by the next add, as in a broker
            handle.add_entry((position or PositionInfo(ledgerId=1, entryId=0)).SerializeToString())
        return handle.ledger_id

    def managed_ledger(self, name: str, ledger_ids: list[int], data: bytes | None = None) -> str:
        """/managed-ledgers/{name} with these ledgers (MetaStoreImpl: binary ManagedLedgerInfo)."""
        info = ManagedLedgerInfo()
        for lid in ledger_ids:
            info.ledgerInfo.add(ledgerId=lid, entries=3, size=60, timestamp=int(time.time() * 1000))
        path = f"{self.root}/managed-ledgers/{name}"
        self._put(path, info.SerializeToString() if data is None else data)
        return path

    def cursor(self, name: str, cursor: str, ledger_id: int, properties: dict[str, int] | None = None) -> str:
        """/managed-ledgers/{name}/{cursor} (ManagedCursorInfo: cursorsLedgerId, and a position snapshot)."""
        info = ManagedCursorInfo(cursorsLedgerId=ledger_id, markDeleteLedgerId=1, markDeleteEntryId=0)
        for key, value in (properties or {}).items():
            info.properties.add(name=key, value=value)
        path = f"{self.root}/managed-ledgers/{name}/{cursor}"
        self._put(path, info.SerializeToString())
        return path

    # ---- schemas ----
    def schema_ledger(self, schema_id: str) -> int:
        return self.create(schema_metadata(schema_id), 1, True)

    def schema(self, schema_id: str, ledger_ids: list[int]) -> str:
        """/schemas/{schemaId}: info is the latest version, index every version (BookkeeperSchemaStorage)."""
        locator = SchemaLocator()
        for version, lid in enumerate(ledger_ids):
            entry = locator.index.add(version=version, hash=b"h%d" % version)
            entry.position.ledgerId, entry.position.entryId = lid, 0
        locator.info.CopyFrom(locator.index[-1])
        path = f"{self.root}/schemas/{schema_id}"
        self._put(path, locator.SerializeToString())
        return path

    # ---- compaction ----
    def compacted_ledger(self, topic: str, close: bool = True) -> int:
        return self.create(compacted_metadata(topic), 2, close)

    # ---- time ----
    def age(self, ledger_id: int, seconds: float) -> None:
        """Make a ledger ``seconds`` old: its metadata's ctime (format 3), as if created then."""
        md, version = self.ledgers.read(ledger_id)
        self.ledgers.write(ledger_id, md.with_changes(ctime=int((time.time() - seconds) * 1000)), version)

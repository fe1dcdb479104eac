"""What a backup holds, decided before anything is written: the cluster's facts, every selected ledger's metadata
as stored, and (with data) the export plan of their entries.

The metadata is read once, first, in batches (``ZooKeeperTree.read_batched``: 200 znodes a request), and the data
is planned from that snapshot: closed ledgers are immutable, so their entries are those of the metadata read; open
ones are left out (listed) or, with ``include_open``, backed up to the LAC their bookies give now (READ_LAC, no
fencing). A ledger listed but gone when its znode is read was deleted while the backup ran: it is dropped and
listed, not a failure.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from admin.backup.manifest import Source
from admin.export.plan import DEFAULT_PARTITION_BYTES, ExportPlan, Selection, pack, plan_ledgers
from bookie.errors import CorruptData, NoSuchLedger
from bookie.meta import ledger_metadata
from bookie.meta.layout import read_instance_id, read_layout
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.ledger_metadata import LedgerMetadata
from bookie.meta.store import MetadataStore
from bookie.meta.tree import ZooKeeperTree


@dataclass(frozen=True)
class LedgerSnapshot:
    """A ledger's metadata as read for the backup: the znode's bytes as stored, and parsed (password included:
    never printed, never written unless asked)."""

    ledger_id: int
    znode: bytes = field(repr=False)  # holds the password
    metadata: LedgerMetadata = field(repr=False)


@dataclass
class BackupPlan:
    source: Source
    ledgers: list[LedgerSnapshot]  # every selected ledger, in id order
    data: ExportPlan | None  # the entries to back up; None for a metadata-only backup
    open_left_out: list[int] = field(default_factory=list)
    deleted_during_backup: list[int] = field(default_factory=list)
    partition_bytes: int = DEFAULT_PARTITION_BYTES

    @property
    def open_included(self) -> list[int]:
        if self.data is None:
            return []
        return [ledger.ledger_id for ledger in self.data.ledgers if not ledger.metadata.is_closed]

    @property
    def entries(self) -> int:
        return self.data.entries if self.data is not None else 0

    @property
    def bytes(self) -> int:
        return self.data.bytes if self.data is not None else 0

    @property
    def data_files(self) -> int:
        return max(1, len(self.data.partitions)) if self.data is not None else 0

    def without(self, gone: set[int]) -> None:
        """Drop ledgers deleted while the backup ran: from the ledgers and from the data plan."""
        self.ledgers = [ledger for ledger in self.ledgers if ledger.ledger_id not in gone]
        self.deleted_during_backup = sorted({*self.deleted_during_backup, *gone})
        self.open_left_out = [lid for lid in self.open_left_out if lid not in gone]
        if self.data is not None:
            ranges = [r for p in self.data.partitions for r in p.ranges if r.ledger.ledger_id not in gone]
            self.data.ledgers = [ledger for ledger in self.data.ledgers if ledger.ledger_id not in gone]
            self.data.partitions = pack(ranges, self.partition_bytes)

    def doc(self) -> dict[str, Any]:
        return {
            "source": self.source.doc(),
            "ledgers": len(self.ledgers),
            "data": self.data is not None,
            "entries": self.entries,
            "bytes": self.bytes,
            "dataFiles": self.data_files,
            "openIncluded": self.open_included,
            "openLeftOut": self.open_left_out,
            "deletedDuringBackup": self.deleted_during_backup,
        }


def read_source(store: MetadataStore, manager: str, service_uri: str) -> Source:
    """The cluster's facts for the manifest. The id generator's position is informational: the short generator's
    next id is about its parent's cversion; the long one's high bits are its newest ``HOB-`` folder."""
    layout = read_layout(store)
    generator: dict[str, Any] = {}
    stat = store.exists(store.path("idgen"))
    if stat is not None:
        generator["idgenCversion"] = getattr(stat, "cversion", None)
    hobs = [n for n in store.children(store.path("idgen-long")) if n.startswith("HOB-") and n[4:].isdigit()]
    if hobs:
        newest = max(hobs, key=lambda name: int(name[4:]))
        stat = store.exists(store.path("idgen-long", newest))
        generator["newestHob"] = int(newest[4:])
        generator["newestHobCversion"] = getattr(stat, "cversion", None) if stat is not None else None
    return Source(service_uri, read_instance_id(store), manager, layout.encode().decode(), generator)


def _candidates(manager: LedgerManager, selection: Selection | None) -> list[int]:
    all_ids = list(manager.iter_ledger_ids())
    if selection is None:
        return all_ids
    existing = set(all_ids)
    missing = [lid for lid in selection.ids if lid not in existing]
    if missing:
        more = f" (and {len(missing) - 1} more named)" if len(missing) > 1 else ""
        raise NoSuchLedger(f"ledger {missing[0]} does not exist{more}", ledger_id=missing[0])
    for low, high in selection.ranges:
        if not any(low <= lid <= high for lid in all_ids):
            raise NoSuchLedger(f"no ledger in range {low}-{high}")
    return [lid for lid in all_ids if selection.covers(lid)]


def plan_backup(
    bk,
    service_uri: str,
    selection: Selection | None = None,
    custom_metadata: dict[str, bytes] | None = None,
    with_data: bool = False,
    include_open: bool = False,
    partition_bytes: int = DEFAULT_PARTITION_BYTES,
    progress: Callable[[int], None] | None = None,
    open_also: Collection[int] = (),
) -> BackupPlan:
    """Read the selected ledgers' metadata (all when ``selection`` is None; those carrying every pair of
    ``custom_metadata``) and plan the backup. ``progress(n)`` counts znodes read, once their number is known
    (returned first as a negative total: ``progress(-total)``). With data, open ledgers among ``open_also`` are
    backed up to their LAC as with ``include_open`` (the ledgers Pulsar's metadata references)."""
    manager: LedgerManager = bk.core.ledgers
    store = manager.store
    source = read_source(store, manager.manager, service_uri)
    candidates = _candidates(manager, selection)
    if progress is not None:
        progress(-len(candidates))
    paths = {manager.path(lid): lid for lid in candidates}
    ledgers, deleted = [], []
    for path, data, stat in ZooKeeperTree(store, store.root).read_batched(paths):
        lid = paths[path]
        if progress is not None:
            progress(1)
        if data is None or stat is None:
            deleted.append(lid)
            continue
        try:
            md = ledger_metadata.parse(data, path, stat.ctime)
        except CorruptData as exc:
            raise CorruptData(f"ledger {lid} cannot be backed up: {exc}", ledger_id=lid) from None
        if all(md.custom_metadata.get(k) == v for k, v in (custom_metadata or {}).items()):
            ledgers.append(LedgerSnapshot(lid, data, md))
    metadata = {ledger.ledger_id: ledger.metadata for ledger in ledgers}
    also = set(open_also)
    left_open = [
        lid for lid, md in metadata.items() if not md.is_closed and not (with_data and (include_open or lid in also))
    ]
    if with_data:
        left = set(left_open)
        backed_up = {lid: md for lid, md in metadata.items() if lid not in left}
        entries = plan_ledgers(bk, backed_up, True, partition_bytes)
        entries.left_open = left_open
    else:
        entries = None
    return BackupPlan(source, ledgers, entries, left_open, deleted, partition_bytes)

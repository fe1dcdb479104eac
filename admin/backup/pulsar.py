"""Pulsar's metadata in a backup (``--with-pulsar-metadata``): every persistent znode under Pulsar's
``/managed-ledgers`` (managed ledgers, their cursors) and ``/schemas`` (schema locators), and the ledgers they
reference; and the restore of such a snapshot into a ZooKeeper tree.

``metadata/pulsar.parquet``: one row per znode, parents before children: ``path`` (relative to Pulsar's root, e.g.
``managed-ledgers/public/default/persistent/orders``), ``data`` (as stored), ``ctime``, ``mtime`` (ms), ``version``
(the source's; a restored znode starts again at version 0, with its own ctime and mtime: ZooKeeper sets them).
Ephemeral znodes are never kept. The ledgers referenced are found in the stored znodes themselves (the reader of
admin/pulsar/metadata.py run over the snapshot), so the backup's completeness is judged against exactly what it
holds; a compaction cursor's ledger is named in its cursor ledger's last entry, read from the bookies.

Restore refuses to merge: a znode of the snapshot that exists in the target with data (or that the snapshot has
with data) is a conflict; an existing znode without data on both sides (``/managed-ledgers`` of an initialized
Pulsar, a tenant's or namespace's znode) is a shared parent, kept as it is. Ledger ids also live inside cursor
ledgers' and compacted ledgers' entries, which cannot be rewritten: an id map that moves a referenced ledger is
refused.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from admin.backup.manifest import is_local, local_path
from admin.pulsar.metadata import MANAGED_LEDGERS, SCHEMAS, CursorPositionReader, PulsarMetadata, read_pulsar_metadata
from bookie.errors import CorruptData, Unsafe
from bookie.meta.store import ZnodeStat
from bookie.meta.tree import ZooKeeperTree, stat

PULSAR_FILE = "metadata/pulsar.parquet"
SUBTREES = (MANAGED_LEDGERS, SCHEMAS)
CREATES_PER_TRANSACTION = 500
BYTES_PER_TRANSACTION = 512 * 1024  # well under ZooKeeper's jute.maxbuffer (1 MiB) for one multi request


def pulsar_schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            ("path", pa.string()),
            ("data", pa.binary()),
            ("ctime", pa.int64()),
            ("mtime", pa.int64()),
            ("version", pa.int32()),
        ]
    )


@dataclass(frozen=True)
class PulsarZnode:
    path: str  # relative to Pulsar's root, without a leading /
    data: bytes = field(repr=False)
    ctime: int
    mtime: int
    version: int


@dataclass
class PulsarSnapshot:
    """Pulsar's persistent znodes under ``root`` (parents before children) and the ledgers they reference.
    ``offloaded``: referenced ledgers whose offload to tiered storage completed (their bookie copies may be gone).
    ``metadata``: what the source's reading found (who references what), None for a snapshot read from a backup."""

    root: str
    znodes: list[PulsarZnode]
    topics: int
    referenced: list[int]
    offloaded: list[int] = field(default_factory=list)
    metadata: PulsarMetadata | None = field(default=None, repr=False)

    @property
    def required(self) -> list[int]:
        """The referenced ledgers a complete backup must hold: all but the offloaded ones."""
        offloaded = set(self.offloaded)
        return [lid for lid in self.referenced if lid not in offloaded]

    def doc(self) -> dict[str, Any]:
        """The manifest's ``pulsar`` object."""
        return {
            "root": self.root or "/",
            "znodes": len(self.znodes),
            "topics": self.topics,
            "referencedLedgers": self.referenced,
            "offloadedLedgers": self.offloaded,
        }

    def describe(self, ledger_id: int) -> str:
        """Who references the ledger, when known: ``12 (persistent://public/default/orders cursor sub)``."""
        references = self.metadata.references.get(ledger_id) if self.metadata is not None else None
        return f"{ledger_id} ({references[0].describe()})" if references else str(ledger_id)


class SnapshotTree(ZooKeeperTree):
    """A snapshot's znodes read as a ZooKeeperTree is read (what admin/pulsar/metadata.py needs of one)."""

    def __init__(self, root: str, znodes: Iterable[PulsarZnode]):
        self.root = root.rstrip("/")
        self._data: dict[str, tuple[bytes, ZnodeStat]] = {}
        self._children: dict[str, list[str]] = {}
        for z in znodes:
            path = self.path(z.path)
            self._data[path] = (z.data, stat(z.ctime, z.mtime, z.version, len(z.data)))
            self._children.setdefault(path, [])
            parent, _, name = path.rpartition("/")
            self._children.setdefault(parent, []).append(name)

    def close(self) -> None:
        pass

    def exists(self, path: str) -> bool:
        return path in self._data

    def get(self, path: str) -> tuple[bytes, ZnodeStat] | None:
        return self._data.get(path)

    def read_many(self, paths: Iterable[str]) -> Iterator[tuple[str, bytes | None, ZnodeStat | None]]:
        for path in paths:
            got = self._data.get(path)
            yield (path, got[0], got[1]) if got is not None else (path, None, None)

    read_batched = read_many

    def children_many(self, paths: Iterable[str]) -> Iterator[tuple[str, list[str] | None]]:
        for path in paths:
            yield path, (list(self._children.get(path, [])) if path in self._data else None)


def _list(tree: ZooKeeperTree) -> list[str]:
    """Every znode under the subtrees (the subtrees' own included), absolute, level by level."""
    level = [tree.path(s) for s in SUBTREES if tree.exists(tree.path(s))]
    found: list[str] = []
    while level:
        found += level
        level = [f"{path}/{child}" for path, children in tree.children_many(level) for child in sorted(children or ())]
    return found


def snapshot_pulsar(tree: ZooKeeperTree, read_cursor_position: CursorPositionReader | None = None) -> PulsarSnapshot:
    """Pulsar's persistent znodes under ``tree``'s root, read 200 a request, and the ledgers they reference
    (:class:`NotFound` when the root has no ``/managed-ledgers``). ``read_cursor_position`` reads a compaction
    cursor's ledger for the compacted ledger it names (without it, those are not found)."""
    znodes = []
    prefix = len(tree.root) + 1
    for path, data, got in tree.read_batched(_list(tree)):
        if data is None or got is None or got.ephemeralOwner:  # deleted meanwhile, or ephemeral: never kept
            continue
        znodes.append(PulsarZnode(path[prefix:], data, got.ctime, got.mtime, got.version))
    found = read_pulsar_metadata(SnapshotTree(tree.root, znodes), read_cursor_position)
    return _snapshot(tree.root, znodes, found)


def _snapshot(root: str, znodes: list[PulsarZnode], found: PulsarMetadata) -> PulsarSnapshot:
    offloaded = [lid for lid, refs in found.references.items() if any(r.offloaded for r in refs)]
    return PulsarSnapshot(root, znodes, found.topics, sorted(found.references), sorted(offloaded), found)


def missing_from_backup(snapshot: PulsarSnapshot, backed_up: Iterable[int]) -> list[int]:
    """The ledgers the snapshot needs (referenced, not offloaded) that are not among ``backed_up``."""
    have = set(backed_up)
    return [lid for lid in snapshot.required if lid not in have]


def referenced_now(tree: ZooKeeperTree, read_cursor_position: CursorPositionReader | None = None) -> set[int]:
    """The ledgers Pulsar's metadata under ``tree``'s root references now (read again after a backup's data)."""
    return set(read_pulsar_metadata(tree, read_cursor_position).references)


# --- in a backup ----------------------------------------------------------------------------------------------------


def pulsar_table(snapshot: PulsarSnapshot) -> Any:
    import pyarrow as pa

    rows = [
        {"path": z.path, "data": z.data, "ctime": z.ctime, "mtime": z.mtime, "version": z.version}
        for z in snapshot.znodes
    ]
    return pa.Table.from_pylist(rows, schema=pulsar_schema())


def read_pulsar_snapshot(path: str) -> PulsarSnapshot | None:
    """The Pulsar snapshot of the backup at ``path`` (its manifest's ``pulsar`` and metadata/pulsar.parquet, whose
    size and SHA-256 are checked against the manifest), or None when the backup has none."""
    import pyarrow.parquet as pq

    from admin.backup.manifest import Manifest, _remote, file_sha256

    manifest = Manifest.load(path)
    if manifest.pulsar is None:
        return None
    listed = {f.path: f for f in manifest.files}.get(PULSAR_FILE)
    if listed is None:
        raise CorruptData(f"{PULSAR_FILE}: the manifest has Pulsar metadata but does not list the file")
    try:
        size, digest = file_sha256(path, PULSAR_FILE)
    except FileNotFoundError:
        raise CorruptData(f"{PULSAR_FILE}: listed in the manifest but missing") from None
    if (size, digest) != (listed.bytes, listed.sha256):
        raise CorruptData(f"{PULSAR_FILE}: size or SHA-256 does not match the manifest (corrupt or changed)")
    if is_local(path):
        table = pq.read_table(os.path.join(local_path(path), PULSAR_FILE), schema=pulsar_schema())
    else:
        filesystem, root = _remote(path)
        table = pq.read_table(f"{root}/{PULSAR_FILE}", filesystem=filesystem, schema=pulsar_schema())
    znodes = [PulsarZnode(r["path"], r["data"], r["ctime"], r["mtime"], r["version"]) for r in table.to_pylist()]
    info = manifest.pulsar
    root = "" if info["root"] == "/" else info["root"]
    referenced = [int(i) for i in info["referencedLedgers"]]
    offloaded = [int(i) for i in info.get("offloadedLedgers", ())]
    return PulsarSnapshot(root, znodes, int(info["topics"]), referenced, offloaded)


# --- restore --------------------------------------------------------------------------------------------------------


def check_pulsar_restore(tree: ZooKeeperTree, snapshot: PulsarSnapshot, id_map: dict[int, int]) -> None:
    """What :func:`restore_pulsar_snapshot` refuses, checked without creating anything (before any ledger is
    restored): :class:`Unsafe` when ``id_map`` gives a ledger Pulsar references another id, or when the target has
    any of the snapshot's znodes with data or the snapshot has data for one the target has."""
    _check_ids(snapshot, id_map)
    _existing(tree, {tree.path(z.path): z.data for z in snapshot.znodes})


def _check_ids(snapshot: PulsarSnapshot, id_map: dict[int, int]) -> None:
    moved = [(lid, id_map[lid]) for lid in snapshot.referenced if id_map.get(lid, lid) != lid]
    if moved:
        lid, new = moved[0]
        raise Unsafe(
            f"the id map moves {len(moved)} ledger(s) Pulsar's metadata references (first: {lid} -> {new}): their ids "
            "are also inside cursor and compacted ledgers' entries, which cannot be rewritten; keep their ids"
        )


def _existing(tree: ZooKeeperTree, wanted: dict[str, bytes]) -> set[str]:
    """The paths of ``wanted`` the target has (all shared parents without data); :class:`Unsafe` on a conflict."""
    existing = {path: data for path, data, _ in tree.read_batched(sorted(wanted)) if data is not None}
    conflicts = [p for p, data in existing.items() if data or wanted[p]]
    if conflicts:
        first = sorted(conflicts)[0]
        raise Unsafe(
            f"{len(conflicts)} of the backup's Pulsar znodes exist in the target (first: {first}): Pulsar's metadata "
            "is restored into a tree without them, never merged"
        )
    return set(existing)


def restore_pulsar_snapshot(tree: ZooKeeperTree, snapshot: PulsarSnapshot, id_map: dict[int, int]) -> int:
    """Create the snapshot's znodes under ``tree``'s root (its own Pulsar root: the same or another), data byte
    for byte, missing parents created empty; the number created. Run it once every ledger is restored and closed.

    Refuses as :func:`check_pulsar_restore` does (nothing created). Creates in multi transactions of up to 500
    znodes; when one fails (someone created a znode meanwhile), deletes what it created and raises :class:`Unsafe`."""
    _check_ids(snapshot, id_map)
    wanted = {tree.path(z.path): z.data for z in snapshot.znodes}
    ancestors = {tree.path(*z.path.split("/")[:i]) for z in snapshot.znodes for i in range(1, z.path.count("/") + 1)}
    ancestors |= {"/".join(tree.root.split("/")[:i]) for i in range(2, tree.root.count("/") + 2)}
    ancestors -= set(wanted)
    present = _existing(tree, wanted) | {p for p, data, _ in tree.read_batched(sorted(ancestors)) if data is not None}
    creates = [(p, b"") for p in sorted(ancestors - present, key=_depth)]
    creates += [(p, wanted[p]) for p in sorted(set(wanted) - present, key=_depth)]
    created: list[str] = []
    try:
        for batch in _batches(creates):
            failed = tree.create_together(batch)
            if failed is not None:
                raise Unsafe(
                    f"creating Pulsar's znodes from {batch[0][0]} failed ({failed}): the target changed meanwhile; "
                    "what this restore created is deleted"
                )
            created += [path for path, _ in batch]
    except BaseException:
        for path in sorted(created, key=_depth, reverse=True):  # children first; one someone gave children stays
            tree.delete_childless(path)
        raise
    return len(created)


def _depth(path: str) -> tuple[int, str]:
    return path.count("/"), path


def _batches(creates: list[tuple[str, bytes]]) -> Iterator[list[tuple[str, bytes]]]:
    batch: list[tuple[str, bytes]] = []
    size = 0
    for path, data in creates:
        cost = len(path) + len(data) + 64
        if batch and (len(batch) >= CREATES_PER_TRANSACTION or size + cost > BYTES_PER_TRANSACTION):
            yield batch
            batch, size = [], 0
        batch.append((path, data))
        size += cost
    if batch:
        yield batch

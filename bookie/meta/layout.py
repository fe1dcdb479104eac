"""The cluster's root znodes: initialisation (``initnewcluster``), LAYOUT and INSTANCEID (BookKeeper:
meta/LedgerLayout.java).

LAYOUT is text, no trailing newline::

    2
    org.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1

Line 1 is the layout format version (2; 1 is still readable); line 2 is ``<factory class>:<manager version>``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from kazoo.exceptions import NodeExistsError

from bookie.errors import ClusterAlreadyInitialised, ClusterNotInitialised, CorruptData, NotFound, UnsupportedLayout
from bookie.meta.store import MetadataStore, zk_errors

LAYOUT_FORMAT_VERSION = 2
READABLE_LAYOUT_VERSIONS = (1, 2)
FACTORIES = {
    "org.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory": "hierarchical",
    "org.apache.bookkeeper.meta.LongHierarchicalLedgerManagerFactory": "longhierarchical",
    "org.apache.bookkeeper.meta.LegacyHierarchicalLedgerManagerFactory": "legacyhierarchical",
    "org.apache.bookkeeper.meta.FlatLedgerManagerFactory": "flat",
}
FACTORY_OF = {name: cls for cls, name in FACTORIES.items()}
SUPPORTED_MANAGERS = ("hierarchical", "longhierarchical", "legacyhierarchical")
MANAGER_VERSION = 1

# Children of the root that are not part of the ledger tree.
RESERVED = frozenset({"available", "cookies", "LAYOUT", "INSTANCEID", "underreplication", "idgen", "idgen-long"})


@dataclass(frozen=True)
class Layout:
    format_version: int
    factory_class: str
    manager_version: int

    @property
    def manager(self) -> str:
        """The short manager type name (``hierarchical``, ...), or the class name when unknown."""
        return FACTORIES.get(self.factory_class, self.factory_class)

    def encode(self) -> bytes:
        return f"{self.format_version}\n{self.factory_class}:{self.manager_version}".encode()

    @classmethod
    def for_manager(cls, manager: str) -> Layout:
        return cls(LAYOUT_FORMAT_VERSION, FACTORY_OF[manager], MANAGER_VERSION)

    @classmethod
    def decode(cls, data: bytes, where: str = "LAYOUT") -> Layout:
        lines = data.decode("utf-8", "replace").split("\n")
        if not lines[0].strip().isdigit():
            raise CorruptData(f"{where}: malformed layout format version {lines[0]!r}")
        version = int(lines[0])
        if version not in READABLE_LAYOUT_VERSIONS:
            raise UnsupportedLayout(f"{where}: layout format version {version} is not supported (1 or 2)")
        if len(lines) < 2:
            raise CorruptData(f"{where}: ledger manager and its version absent from layout")
        parts = lines[1].split(":")
        if len(parts) != 2 or not parts[1].strip().isdigit():
            raise CorruptData(f"{where}: malformed ledger manager line {lines[1]!r}")
        return cls(version, parts[0], int(parts[1]))


def read_layout(store: MetadataStore) -> Layout:
    """The cluster's LAYOUT, refusing a cluster that is not there or a manager this tool cannot read."""
    path = store.path("LAYOUT")
    try:
        data, _ = store.get(path)
    except NotFound:
        raise ClusterNotInitialised(
            f"no BookKeeper cluster at {store.uri}: {path} does not exist (run `bkctl cluster init`?)"
        ) from None
    layout = Layout.decode(data, path)
    if layout.manager not in SUPPORTED_MANAGERS:
        raise UnsupportedLayout(
            f"{path}: ledger manager {layout.factory_class} is not supported "
            f"(supported: {', '.join(SUPPORTED_MANAGERS)})"
        )
    return layout


def read_instance_id(store: MetadataStore) -> str:
    try:
        data, _ = store.get(store.path("INSTANCEID"))
    except NotFound:
        raise ClusterNotInitialised(f"no BookKeeper cluster at {store.uri}: no INSTANCEID") from None
    return data.decode()


def init_plan(store: MetadataStore) -> list[str]:
    """The znodes ``init_cluster`` would create; raises :class:`ClusterAlreadyInitialised` when there is a cluster."""
    root = store.root
    for marker in ("INSTANCEID", "LAYOUT"):
        if store.exists(f"{root}/{marker}"):
            raise ClusterAlreadyInitialised(f"cluster at {store.uri} is already initialised ({root}/{marker} exists)")
    wanted = [root, f"{root}/available", f"{root}/available/readonly", f"{root}/INSTANCEID", f"{root}/LAYOUT"]
    return [path for path in wanted if not store.exists(path)]


def init_cluster(store: MetadataStore, manager: str = "hierarchical") -> str:
    """Create the cluster's root znodes and LAYOUT; return the new instance id.

    BookKeeper creates root, available, available/readonly and INSTANCEID in one ``multi`` and writes LAYOUT just
    after. We put LAYOUT in the same ``multi``: the znodes and bytes are the same, and a crash in between cannot
    leave a cluster without a layout. Parents of a nested root (``/a/b/ledgers``) are created first, empty.
    """
    plan = init_plan(store)
    instance_id = str(uuid.uuid4())
    data = {
        store.root: b"",
        f"{store.root}/available": b"",
        f"{store.root}/available/readonly": b"",
        f"{store.root}/INSTANCEID": instance_id.encode(),
        f"{store.root}/LAYOUT": Layout.for_manager(manager).encode(),
    }
    parent = store.root.rsplit("/", 1)[0]
    with zk_errors(f"initialise {store.root}"):
        if parent:
            store.zk.ensure_path(parent)
        txn = store.zk.transaction()
        for path in plan:
            txn.create(path, data[path])
        try:
            results = txn.commit()
        except NodeExistsError:
            results = [NodeExistsError()]
    if any(isinstance(r, Exception) for r in results):
        raise ClusterAlreadyInitialised(f"cluster at {store.uri} was initialised concurrently; nothing changed")
    return instance_id

"""Pulsar's metadata in ZooKeeper, read whole and turned into "which znode references which ledger".

Where a broker keeps it (under Pulsar's metadata root, the ZooKeeper chroot of ``metadataStoreUrl``):

    /managed-ledgers/{tenant}/{namespace}/persistent/{encoded topic}          ManagedLedgerInfo: the data ledgers
    /managed-ledgers/{tenant}/{namespace}/persistent/{encoded topic}/{cursor} ManagedCursorInfo: cursorsLedgerId
    /managed-ledgers/{tenant}/{cluster}/{namespace}/persistent/...            the same for v1 (pre-2.0) namespaces
    /schemas/{tenant}/{namespace}/{topic}                                     SchemaLocator: one ledger per version

A compacted topic's ledger is named by its ``__compaction`` cursor's property ``CompactedTopicLedger``: in the
cursor's znode when the cursor was last closed (cursorsLedgerId -1), else in the last entry of its cursor ledger
(read from the bookies through ``read_cursor_position``, when given).

Reads are pipelined level by level (bookie.meta.tree), so 10,000 topics cost a few round trips per level, not
10,000 sequential ones.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from urllib.parse import quote_plus

from admin.pulsar import formats
from admin.pulsar.ownership import (
    COMPACTED_TOPIC_LEDGER,
    COMPACTION_CURSOR,
    topic_of_managed_ledger,
    topic_of_schema,
)
from bookie._proto.pulsar_ml_data_formats_pb2 import ManagedCursorInfo, PositionInfo
from bookie.errors import BKError, CorruptData, NotFound
from bookie.meta.tree import ZooKeeperTree
from bookie.progress import NO_PROGRESS, Progress

MANAGED_LEDGERS = "managed-ledgers"
SCHEMAS = "schemas"
SCHEMA_DEPTHS = (3, 4)  # tenant/namespace/topic, or tenant/cluster/namespace/topic (v1)

# Reads the last mark-delete position of a cursor ledger from the bookies; None when it cannot.
CursorPositionReader = Callable[[int], PositionInfo | None]


@dataclass(frozen=True)
class Reference:
    """A znode of Pulsar's that names a ledger. ``version`` is the znode's data version when read."""

    kind: str  # ledger | cursor | schema | compacted
    topic: str
    path: str
    version: int
    cursor: str | None = None
    schema_id: str | None = None
    current: bool = False  # a data ledger that is the last of its managed ledger's list: the one written now
    entries: int | None = None  # a data ledger's entries as its LedgerInfo records them (unset while it is current)
    schema_version: int | None = None
    offloaded: bool = False  # a data ledger whose offload to tiered storage completed: read from there, not bookies

    def describe(self) -> str:
        if self.kind == "cursor":
            return f"{self.topic} cursor {self.cursor}"
        if self.kind == "schema":
            return f"schema {self.schema_id}"
        if self.kind == "compacted":
            return f"{self.topic} compaction"
        return self.topic


@dataclass
class PulsarMetadata:
    root: str
    references: dict[int, list[Reference]] = field(default_factory=lambda: defaultdict(list))
    managed_ledgers: set[str] = field(default_factory=set)  # names of the managed ledgers read
    schemas: set[str] = field(default_factory=set)
    unreadable: dict[str, str] = field(default_factory=dict)  # managed ledger name or schema id -> the problem
    # topics whose compaction cursor could not be read whole: their compacted ledgers are never orphans
    compaction_unknown: set[str] = field(default_factory=set)
    topics: int = 0
    versions: dict[str, int] = field(default_factory=dict)  # every znode read that names ledgers -> its version

    def add(self, ledger_id: int, reference: Reference) -> None:
        if ledger_id >= 0:  # -1: none (a closed cursor, a schema's empty first index entry)
            self.references[ledger_id].append(reference)


def read_pulsar_metadata(
    tree: ZooKeeperTree, read_cursor_position: CursorPositionReader | None = None, progress: Progress = NO_PROGRESS
) -> PulsarMetadata:
    """Everything under ``tree``'s root that references a ledger. :class:`NotFound` when the root holds no
    Pulsar metadata at all (no /managed-ledgers): a wrong root must not make every ledger look orphaned.
    ``progress``: the topics listed, then managed ledgers and cursors read (each total known from the listing)."""
    base = tree.path(MANAGED_LEDGERS)
    if not tree.exists(base):
        raise NotFound(f"no Pulsar metadata at {tree.root or '/'} ({base} does not exist)")
    found = PulsarMetadata(tree.root)
    progress.phase("listing Pulsar's topics", None, "topics")
    names = list(managed_ledger_names(tree))
    found.topics = len(names)
    read_managed_ledgers(tree, names, found, read_cursor_position, progress)
    progress.phase("reading Pulsar's schemas", None, "schemas")
    read_schemas(tree, found)
    return found


def _children(tree: ZooKeeperTree, paths: Iterable[str]) -> list[str]:
    """Absolute paths of the children of ``paths``, read pipelined."""
    return [f"{path}/{child}" for path, children in tree.children_many(paths) for child in sorted(children or ())]


def managed_ledger_names(tree: ZooKeeperTree) -> list[str]:
    """Managed ledger names (``tenant/namespace/persistent/topic``), from the tree's shape: the third level is
    ``persistent`` in a v2 namespace, the namespace of a v1 one (whose ``persistent`` is the fourth)."""
    base = tree.path(MANAGED_LEDGERS)
    level3 = _children(tree, _children(tree, _children(tree, [base])))
    domains = [p for p in level3 if p.rsplit("/", 1)[1] == "persistent"]
    domains += [f"{p}/persistent" for p in level3 if p.rsplit("/", 1)[1] != "persistent"]
    return [p[len(base) + 1 :] for p in _children(tree, domains)]


def read_managed_ledgers(
    tree: ZooKeeperTree,
    names: list[str],
    found: PulsarMetadata,
    read_cursor_position: CursorPositionReader | None = None,
    progress: Progress = NO_PROGRESS,
) -> None:
    """The data and cursor ledgers of ``names`` (and compacted ledgers of their compaction cursors)."""
    base = tree.path(MANAGED_LEDGERS)
    paths = [f"{base}/{name}" for name in names]
    cursor_paths: list[tuple[str, str]] = []
    progress.phase("reading managed ledgers", len(names), "topics")
    for name, (path, data, stat) in zip(names, tree.read_many(paths), strict=True):
        progress.advance()
        if data is None or stat is None:
            continue  # deleted while we read
        found.managed_ledgers.add(name)
        found.versions[path] = stat.version
        topic = topic_of_managed_ledger(name)
        try:
            info = formats.parse_managed_ledger_info(data, path) if data else None
        except CorruptData as exc:
            found.unreadable[name] = str(exc)
            continue
        listed = list(info.ledgerInfo) if info is not None else []
        for at, ledger in enumerate(listed):
            entries = ledger.entries if ledger.HasField("entries") else None
            reference = Reference(
                "ledger",
                topic,
                path,
                stat.version,
                current=at == len(listed) - 1,
                entries=entries,
                offloaded=ledger.offloadContext.complete,
            )
            found.add(ledger.ledgerId, reference)
    for path, children in tree.children_many(paths):
        name = path[len(base) + 1 :]
        cursor_paths += [(name, child) for child in sorted(children or ())]
    cursor_znodes = (f"{base}/{name}/{cursor}" for name, cursor in cursor_paths)
    progress.phase("reading cursors", len(cursor_paths), "cursors")
    for (name, cursor), (path, data, stat) in zip(cursor_paths, tree.read_many(cursor_znodes), strict=True):
        progress.advance()
        if data is None or stat is None:
            continue
        found.versions[path] = stat.version
        topic = topic_of_managed_ledger(name)
        try:
            info = formats.parse_managed_cursor_info(data, path)
        except CorruptData as exc:
            found.unreadable[name] = str(exc)  # a cursor's ledger unknown: the whole topic is not judged
            if cursor == COMPACTION_CURSOR:
                found.compaction_unknown.add(topic)
            continue
        found.add(info.cursorsLedgerId, Reference("cursor", topic, path, stat.version, cursor=cursor))
        if cursor == COMPACTION_CURSOR:
            _compaction(found, topic, path, stat.version, info, read_cursor_position)


def _compaction(
    found: PulsarMetadata,
    topic: str,
    path: str,
    version: int,
    info: ManagedCursorInfo,
    read_cursor_position: CursorPositionReader | None,
) -> None:
    """The compacted ledger the compaction cursor names: in the last entry of its cursor ledger when it has one
    (the znode's properties then date from the cursor's last switch or close: stale), else in its znode."""
    properties = list(info.properties)
    cursor_ledger = info.cursorsLedgerId
    if cursor_ledger >= 0:
        position = None
        if read_cursor_position is not None:
            try:
                position = read_cursor_position(cursor_ledger)
            except BKError:
                position = None
        if position is None:
            found.compaction_unknown.add(topic)
            return
        properties = list(position.properties)
    for prop in properties:
        if prop.name == COMPACTED_TOPIC_LEDGER:
            found.add(prop.value, Reference("compacted", topic, path, version, cursor=COMPACTION_CURSOR))


def read_schemas(tree: ZooKeeperTree, found: PulsarMetadata) -> None:
    """The ledgers of every schema version listed in the locators under /schemas."""
    base = tree.path(SCHEMAS)
    level = [base]
    candidates: list[str] = []
    for depth in range(1, max(SCHEMA_DEPTHS) + 1):
        level = _children(tree, level)
        if depth in SCHEMA_DEPTHS:
            candidates += level
    for path, data, stat in tree.read_many(candidates):
        if data and stat is not None:  # a tenant's or namespace's znode has no data
            _schema(found, path[len(base) + 1 :], path, data, stat.version)


def _schema(found: PulsarMetadata, schema_id: str, path: str, data: bytes, version: int) -> None:
    try:
        locator = formats.parse_schema_locator(data, path)
    except CorruptData as exc:
        found.unreadable[schema_id] = str(exc)
        return
    found.schemas.add(schema_id)
    found.versions[path] = version
    topic = topic_of_schema(schema_id)
    for entry in (locator.info, *locator.index):
        reference = Reference("schema", topic, path, version, schema_id=schema_id, schema_version=entry.version)
        if reference not in found.references.get(entry.position.ledgerId, ()):  # info repeats the latest index entry
            found.add(entry.position.ledgerId, reference)


def recheck(
    tree: ZooKeeperTree,
    managed_ledger: str | None,
    schema_id: str | None,
    compacted_topic: str | None,
    read_cursor_position: CursorPositionReader | None = None,
) -> PulsarMetadata:
    """Pulsar's metadata again, for one owner only: its managed ledger (and cursors), its schema, or the managed
    ledger of a compacted topic. What deletion reads right before it deletes."""
    found = PulsarMetadata(tree.root)
    names = [n for n in (managed_ledger, compacted_topic and managed_ledger_of(compacted_topic)) if n]
    read_managed_ledgers(tree, names, found, read_cursor_position)
    if schema_id is not None:
        path = tree.path(SCHEMAS, schema_id)
        got = tree.get(path)
        if got is not None and got[0]:
            _schema(found, schema_id, path, got[0], got[1].version)
    return found


def managed_ledger_of(topic: str) -> str:
    """``persistent://t/ns/x`` → ``t/ns/persistent/x`` (the local name URL-encoded, as Pulsar's Codec.encode)."""
    rest = topic.split("://", 1)[-1]
    namespace, _, local = rest.rpartition("/")
    return f"{namespace}/persistent/{quote_plus(local)}"


def reread(
    tree: ZooKeeperTree, references: Iterable[Reference], read_cursor_position: CursorPositionReader | None = None
) -> PulsarMetadata:
    """Pulsar's metadata again, for the owners of ``references`` only (their managed ledgers with their cursors,
    their schema locators), read pipelined: what a finding is confirmed against before it is reported."""
    base, schemas = tree.path(MANAGED_LEDGERS), tree.path(SCHEMAS)
    names: set[str] = set()
    locators: set[str] = set()
    for reference in references:
        if reference.kind == "schema":
            locators.add(reference.path)
        else:  # a managed ledger's znode, or one of its cursors'
            name = reference.path[len(base) + 1 :]
            names.add(name if reference.kind == "ledger" else name.rsplit("/", 1)[0])
    found = PulsarMetadata(tree.root)
    read_managed_ledgers(tree, sorted(names), found, read_cursor_position)
    for path, data, stat in tree.read_many(sorted(locators)):
        if data and stat is not None:
            _schema(found, path[len(schemas) + 1 :], path, data, stat.version)
    return found

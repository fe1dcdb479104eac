"""Ledger metadata in ZooKeeper: create, read, compare-and-set, delete, and iteration over all ledgers.

Paths follow the cluster's manager (see :mod:`bookie.meta.paths`). Iteration walks the short tree, then the long
tree, listing znode names only, in ascending id order: it never reads a ledger's data unless asked to.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator

from kazoo.exceptions import NodeExistsError, NoNodeError

from bookie.errors import CorruptData, LedgerExists, NoSuchLedger, NotFound
from bookie.meta import ledger_metadata
from bookie.meta.layout import RESERVED, read_layout
from bookie.meta.ledger_metadata import LedgerMetadata
from bookie.meta.paths import ledger_path
from bookie.meta.store import MetadataStore, ZkResult, ZnodeStat, zk_errors

PIPELINE = 512  # metadata reads in flight while iterating with data


class LedgerManager:
    """The ledgers of one cluster. ``manager`` is read from LAYOUT unless the service URI names it."""

    def __init__(self, store: MetadataStore, manager: str | None = None):
        self.store = store
        self.root = store.root
        self.manager = manager or store.uri.manager or read_layout(store).manager

    def path(self, ledger_id: int) -> str:
        return ledger_path(self.root, ledger_id, self.manager)

    def create(self, ledger_id: int, md: LedgerMetadata) -> int:
        """Create the ledger's znode (and missing parents); return its version."""
        path = self.path(ledger_id)
        try:
            with zk_errors(f"create ledger {ledger_id}"):
                self.store.zk.create(path, ledger_metadata.serialize(md), makepath=True)
        except NodeExistsError:
            raise LedgerExists(f"ledger {ledger_id} already exists") from None
        return 0

    def read(self, ledger_id: int) -> tuple[LedgerMetadata, int]:
        """The ledger's metadata and znode version; :class:`NoSuchLedger` when absent."""
        path = self.path(ledger_id)
        try:
            data, stat = self.store.get(path)
        except NotFound:
            raise NoSuchLedger(f"ledger {ledger_id} does not exist", ledger_id=ledger_id) from None
        return _parse(ledger_id, data, path, stat.ctime), stat.version

    def write(self, ledger_id: int, md: LedgerMetadata, version: int) -> int:
        """Compare-and-set: replace the metadata if the znode is still at ``version``; return the new version.

        Raises :class:`MetadataVersionConflict` when someone else updated it first.
        """
        path = self.path(ledger_id)
        try:
            with zk_errors(f"update ledger {ledger_id}"):
                return self.store.zk.set(path, ledger_metadata.serialize(md), version=version).version
        except NotFound:
            raise NoSuchLedger(f"ledger {ledger_id} does not exist", ledger_id=ledger_id) from None

    def delete(self, ledger_id: int, version: int = -1) -> None:
        """Delete the ledger (at ``version``, or any with -1), then the parent folders it left empty."""
        path = self.path(ledger_id)
        try:
            with zk_errors(f"delete ledger {ledger_id}"):
                self.store.zk.delete(path, version=version)
        except NotFound:
            raise NoSuchLedger(f"ledger {ledger_id} does not exist", ledger_id=ledger_id) from None
        self.store.delete_empty_parents(path, self.root)

    def exists(self, ledger_id: int) -> bool:
        return self.store.exists(self.path(ledger_id)) is not None

    def iter_ledger_ids(self) -> Iterator[int]:
        """All ledger ids, ascending: the short tree, then the long tree."""
        top = sorted(name for name in self.store.children(self.root) if name not in RESERVED and name.isdigit())
        for depth, width in ((2, 2), (4, 3)):
            for name in top:
                if len(name) == width:
                    yield from self._walk(f"{self.root}/{name}", name, depth)

    def _walk(self, path: str, digits: str, depth: int) -> Iterator[int]:
        children = self.store.children(path)
        if depth == 1:  # the next level holds the L-prefixed leaves
            for leaf in sorted(children):
                if leaf.startswith("L") and leaf[1:].isdigit():
                    yield int(digits + leaf[1:])
            return
        for child in sorted(children):
            if child.isdigit():
                yield from self._walk(f"{path}/{child}", digits + child, depth - 1)

    def iter_ledgers(
        self, ledger_ids: Iterable[int] | None = None, on_corrupt: Callable[[CorruptData], None] | None = None
    ) -> Iterator[tuple[int, LedgerMetadata]]:
        """``(ledgerId, metadata)`` for every ledger (or those given), reading up to ``PIPELINE`` at once.

        Ledgers deleted while iterating are skipped. Unreadable metadata raises :class:`CorruptData` (naming the
        ledger in its ``ledger_id``), or, with ``on_corrupt``, is handed to it and skipped so the iteration goes on.
        """
        zk = self.store.zk
        pending: deque[tuple[int, str, ZkResult[tuple[bytes, ZnodeStat]]]] = deque()

        def drain_one() -> tuple[int, LedgerMetadata] | None:
            ledger_id, path, result = pending.popleft()
            try:
                with zk_errors(f"read ledger {ledger_id}"):
                    data, stat = result.get()
            except (NotFound, NoNodeError):
                return None
            try:
                return ledger_id, _parse(ledger_id, data, path, stat.ctime)
            except CorruptData as exc:
                if on_corrupt is None:
                    raise
                on_corrupt(exc)
                return None

        for ledger_id in self.iter_ledger_ids() if ledger_ids is None else ledger_ids:
            path = self.path(ledger_id)
            pending.append((ledger_id, path, zk.get_async(path)))
            if len(pending) >= PIPELINE and (item := drain_one()):
                yield item
        while pending:
            if item := drain_one():
                yield item


def _parse(ledger_id: int, data: bytes, path: str, ctime: int) -> LedgerMetadata:
    """The ledger's metadata from its znode; a :class:`CorruptData` says which ledger's it is."""
    try:
        return ledger_metadata.parse(data, path, ctime)
    except CorruptData as exc:
        exc.ledger_id = ledger_id
        raise

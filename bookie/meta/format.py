"""Formatting and removing a cluster's metadata, as BookKeeper's ``metaformat`` and ``nukeexistingcluster`` do it
(BookKeeperAdmin.format / nukeExistingCluster, ZKRegistrationManager, AbstractZkLedgerManagerFactory).

Format keeps the cluster's root but gives it a fresh start: every ledger's metadata and the ledger id generator
are deleted, LAYOUT is written again, the under-replication markers and locks and every cookie are deleted, and a
new INSTANCEID is written (so bookies of the old cluster are refused by their cookies). Nuke deletes the root and
everything under it, after checking the operator named the cluster's instance id and that no unexpected znode
lives under the root. Both refuse while a bookie is registered (BookKeeper's nuke does; its format does not, and
formatting under running bookies leaves them serving ledgers that no longer exist: ours refuses that too).

Each has a plan (what it would delete, for ``--dry-run``) and the action, which re-checks what its plan checked.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field

from bookie.errors import ClusterNotInitialised, Unsafe
from bookie.meta.layout import Layout, read_instance_id, read_layout
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.registration import BookieRegistry
from bookie.meta.store import MetadataStore, zk_errors

# AbstractZkLedgerManager.isSpecialZnode: the root's children that are not ledger metadata
SPECIAL = frozenset({"available", "cookies", "LAYOUT", "INSTANCEID", "underreplication", "idgen", "idgen-long"})
ID_GENERATOR_PREFIX = "ID-"  # ZkLedgerIdGenerator.LEDGER_ID_GEN_PREFIX
# getLedgerParentNodeRegex per ledger manager: the top level of the ledger tree
LEDGER_PARENTS = {"hierarchical": r"\d{2,3}", "legacyhierarchical": r"\d{2}", "longhierarchical": r"\d{3}"}


class BookiesRunning(Unsafe):
    """The cluster's metadata cannot be formatted or removed while bookies are registered in it."""


class UnexpectedZnode(Unsafe):
    """A znode under the root that is neither BookKeeper's nor a ledger's: nuke stops rather than delete it."""


class WrongInstanceId(Unsafe):
    """The instance id given is not the cluster's."""


@dataclass
class MetadataPlan:
    """What a format or a nuke deletes."""

    instance_id: str
    ledgers: int  # ledgers whose metadata goes
    cookies: list[str]  # bookie ids whose cookie goes
    znodes: list[str] = field(default_factory=list)  # deleted with everything under them


def _is_special(name: str) -> bool:
    return name in SPECIAL or name.startswith(ID_GENERATOR_PREFIX)


def _is_id_generator(name: str) -> bool:
    return name in ("idgen", "idgen-long") or name.startswith(ID_GENERATOR_PREFIX)


def _require_no_bookies(store: MetadataStore, action: str) -> None:
    registry = BookieRegistry(store)
    running = [b.bookie_id for b in registry.list(writable=True, readonly=True)]
    if running:
        raise BookiesRunning(
            f"cannot {action} {store.uri}: {len(running)} bookie(s) registered ({', '.join(sorted(running))}); "
            "stop every bookie of the cluster first"
        )


def _ledger_tree(store: MetadataStore, manager: str) -> list[str]:
    """The root's children that are ledger metadata or the ledger id generator (LedgerManagerFactory.format)."""
    parent = re.compile(LEDGER_PARENTS.get(manager, LEDGER_PARENTS["hierarchical"]))
    return [
        store.path(name)
        for name in sorted(store.children(store.root))
        if (not _is_special(name) and parent.fullmatch(name)) or _is_id_generator(name)
    ]


def _plan(store: MetadataStore, layout: Layout) -> MetadataPlan:
    return MetadataPlan(
        instance_id=read_instance_id(store),
        ledgers=sum(1 for _ in LedgerManager(store, layout.manager).iter_ledger_ids()),
        cookies=sorted(store.children(store.path("cookies"))),
        znodes=_ledger_tree(store, layout.manager),
    )


def format_plan(store: MetadataStore) -> MetadataPlan:
    """What :func:`format_metadata` deletes; BookiesRunning while bookies are registered."""
    layout = read_layout(store)
    _require_no_bookies(store, "format")
    plan = _plan(store, layout)
    plan.znodes += [
        store.path(*p)
        for p in (("underreplication", "ledgers"), ("underreplication", "locks"), ("cookies",), ("INSTANCEID",))
        if store.exists(store.path(*p))
    ]
    return plan


def _delete(store: MetadataStore, path: str) -> None:
    with zk_errors(f"delete {path}"):
        if store.zk.exists(path) is not None:
            store.zk.delete(path, recursive=True)


def _format_ledgers(store: MetadataStore, layout: Layout) -> None:
    """AbstractZkLedgerManagerFactory.format: the ledger tree and id generator go, LAYOUT is written anew."""
    for path in _ledger_tree(store, layout.manager):
        _delete(store, path)
    _delete(store, store.path("LAYOUT"))
    with zk_errors(f"write {store.path('LAYOUT')}"):
        store.zk.create(store.path("LAYOUT"), Layout.for_manager(layout.manager).encode())


def format_metadata(store: MetadataStore) -> str:
    """Format the cluster's metadata (BookKeeperAdmin.format); return its new instance id."""
    layout = read_layout(store)
    _require_no_bookies(store, "format")
    for path in (store.root, store.path("available"), store.path("available", "readonly")):  # prepareFormat
        with zk_errors(f"create {path}"):
            store.zk.ensure_path(path)
    _format_ledgers(store, layout)
    for parts in (("underreplication", "ledgers"), ("underreplication", "locks"), ("cookies",), ("INSTANCEID",)):
        _delete(store, store.path(*parts))  # ZKRegistrationManager.format
    instance_id = str(uuid.uuid4())
    with zk_errors(f"write {store.path('INSTANCEID')}"):
        store.zk.create(store.path("INSTANCEID"), instance_id.encode())
    return instance_id


def nuke_plan(store: MetadataStore, instance_id: str) -> MetadataPlan:
    """What :func:`nuke_cluster` deletes: the whole root. Refused (nothing deleted) when ``instance_id`` is not the
    cluster's, while bookies are registered, or when a znode under the root is neither BookKeeper's nor a ledger's."""
    if not store.exists(store.root):
        raise ClusterNotInitialised(f"no BookKeeper cluster at {store.uri}: {store.root} does not exist")
    layout = read_layout(store)
    actual = read_instance_id(store)
    if instance_id != actual:
        raise WrongInstanceId(
            f"instance id {instance_id!r} is not the one of the cluster at {store.uri} ({actual}): nothing deleted"
        )
    _require_no_bookies(store, "nuke")
    parent = re.compile(LEDGER_PARENTS.get(layout.manager, LEDGER_PARENTS["hierarchical"]))
    for name in sorted(store.children(store.root)):
        if not _is_special(name) and not parent.fullmatch(name):
            raise UnexpectedZnode(
                f"{store.path(name)} is neither BookKeeper's nor a ledger's: nothing deleted (remove it yourself "
                "if it is not needed, then nuke again)"
            )
    plan = _plan(store, layout)
    plan.znodes = [store.root]
    return plan


def nuke_cluster(store: MetadataStore, instance_id: str) -> MetadataPlan:
    """Delete the cluster's root and everything under it (BookKeeperAdmin.nukeExistingCluster)."""
    plan = nuke_plan(store, instance_id)
    layout = read_layout(store)
    _format_ledgers(store, layout)  # as BookKeeper: ledgers first, then the special znodes, then the root
    for name in sorted(store.children(store.root)):
        _delete(store, store.path(name))
    with zk_errors(f"delete {store.root}"):
        store.zk.delete(store.root)
    return plan

"""Ledger id generation (BookKeeper: meta/ZkLedgerIdGenerator.java, LongZkLedgerIdGenerator.java).

Short generator: create EPHEMERAL_SEQUENTIAL ``<root>/idgen/ID-``; the id is the 10-digit suffix; delete the node.
Valid while ``id < 2^31 - 1``. Long generator (after that, or when ``<root>/idgen-long`` exists): under
``<root>/idgen-long/HOB-%010d`` folders, id = ``(hob << 32) | seq``; the 3 newest HOB folders are kept.
"""

from __future__ import annotations

from kazoo.exceptions import NodeExistsError

from bookie.meta.paths import SHORT_ID_LIMIT
from bookie.meta.store import MetadataStore, zk_errors

HOB_KEEP = 3


def _take_sequence(store: MetadataStore, parent: str) -> int:
    with zk_errors(f"generate a ledger id under {parent}"):
        node = store.zk.create(f"{parent}/ID-", ephemeral=True, sequence=True, makepath=True)
        store.zk.delete(node)
    return int(node.rsplit("ID-", 1)[1])


def _newest_hob(store: MetadataStore, long_root: str) -> int:
    hobs = [int(name[4:]) for name in store.children(long_root) if name.startswith("HOB-") and name[4:].isdigit()]
    return max(hobs, default=0)


def _create_hob(store: MetadataStore, long_root: str, hob: int) -> None:
    try:
        with zk_errors(f"create {long_root}/HOB-{hob:010d}"):
            store.zk.create(f"{long_root}/HOB-{hob:010d}", makepath=True)
    except NodeExistsError:
        pass  # another client created it first


def _trim_hobs(store: MetadataStore, long_root: str, newest: int) -> None:
    for name in store.children(long_root):
        if name.startswith("HOB-") and name[4:].isdigit() and int(name[4:]) <= newest - HOB_KEEP:
            store.delete_empty_parents(f"{long_root}/{name}/x", long_root)


def generate_ledger_id(store: MetadataStore) -> int:
    """A new, cluster-unique ledger id."""
    long_root = store.path("idgen-long")
    if not store.exists(long_root):
        ledger_id = _take_sequence(store, store.path("idgen"))
        if 0 <= ledger_id < SHORT_ID_LIMIT:
            return ledger_id
        _create_hob(store, long_root, 1)
    while True:
        hob = _newest_hob(store, long_root)
        if hob == 0:
            _create_hob(store, long_root, hob := 1)
        seq = _take_sequence(store, f"{long_root}/HOB-{hob:010d}")
        if 0 <= seq < SHORT_ID_LIMIT:
            return (hob << 32) | seq
        _create_hob(store, long_root, hob + 1)
        _trim_hobs(store, long_root, hob + 1)

"""Ledger id generation (BookKeeper: meta/ZkLedgerIdGenerator.java, LongZkLedgerIdGenerator.java).

Short generator: create EPHEMERAL_SEQUENTIAL ``<root>/idgen/ID-``; the id is the 10-digit suffix; delete the node.
Valid while ``id < 2^31 - 1``. Long generator (after that, or when ``<root>/idgen-long`` exists): under
``<root>/idgen-long/HOB-%010d`` folders, id = ``(hob << 32) | seq``; the 3 newest HOB folders are kept.

ZooKeeper names a sequential child after its parent's cversion, which only moves forward: a generator can be moved
past an id (:func:`advance_past`, after a restore wrote ledgers under ids of its own) but never set back.
"""

from __future__ import annotations

import math
from collections import deque

from kazoo.exceptions import NodeExistsError

from bookie.errors import BKError
from bookie.meta.paths import SHORT_ID_LIMIT
from bookie.meta.store import MetadataStore, ZkResult, zk_errors
from bookie.progress import NO_PROGRESS, Progress

HOB_KEEP = 3
BUMP_PAIRS = 500  # throw-away creates and deletes per multi: 1000 operations, one round trip
BUMPS_IN_FLIGHT = 8  # a multi costs ~40 ms, most of it waiting: 8 at once moved ~20,000 ids/s instead of ~8,000
PROBE_PAIRS = 40_000  # pairs between two probes of a long bump (~2 s): each probe is a step of its progress
# Ids a restore moves the short generator by at most (~100 s at that rate); further, it moves the cluster to the long
# generator, as BookKeeper does once the short ids run out: every id it hands out is above 2^32
SHORT_BUMP_LIMIT = 2_000_000
BUMP_NAME = "ID-advance"  # ID-: format.py counts leftovers of the generator by that prefix (a multi leaves none)


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


def advance_past(store: MetadataStore, ledger_id: int, long_ids: bool = True, progress: Progress = NO_PROGRESS) -> int:
    """Move the cluster's id generator so that it never hands out an id <= ``ledger_id``; idempotent (a generator
    already past it is left as it is, but for the one id a probe takes). Returns a lower bound of the ids it hands
    out next.

    Short generator: each create under ``idgen`` advances the sequence (the parent's cversion); creates and deletes
    of a throw-away child, 500 pairs to a ``multi``, ``BUMPS_IN_FLIGHT`` multis at once, move it without leaving a
    znode. How far one pair moves it is measured by a probe (one id taken) after a first round, not assumed: on
    ZooKeeper 3.9 a pair moves it by 1 (tests/integration/meta/test_idgen.py), and an id of N costs N/500 multis,
    about N/20,000 seconds on one machine. Ids past the short form, or a cluster already on the long generator: a
    ``HOB-`` folder above ``ledger_id``'s high half, one create. A short id more than ``SHORT_BUMP_LIMIT`` ahead
    of the generator moves the cluster to the long generator instead, unless ``long_ids`` is False (a
    legacyhierarchical layout stores short ids only): clients that already run keep drawing short ids until they
    restart, and a draw that meets a restored ledger retries with the next id, as every create does.

    Bumping the short generator is a ``progress`` phase counted in ids, one step per probe (``PROBE_PAIRS``): a
    restore's million ids take most of a minute. The long generator's one create is no phase.
    """
    long_root = store.path("idgen-long")
    if ledger_id >= SHORT_ID_LIMIT or store.exists(long_root):
        hob = max((ledger_id >> 32) + 1, 1)
        if _newest_hob(store, long_root) < hob:
            _create_hob(store, long_root, hob)
        return max(_newest_hob(store, long_root), hob) << 32
    parent = store.path("idgen")
    position = _take_sequence(store, parent)
    if long_ids and ledger_id - position > SHORT_BUMP_LIMIT:
        _create_hob(store, long_root, 1)
        return 1 << 32
    if position < ledger_id:
        progress.phase("moving the ledger id generator", ledger_id - position, "ids")
    step: float | None = None  # what one pair advances the sequence by, measured
    while position < ledger_id:
        if step is None:
            rounds = [min(BUMP_PAIRS, ledger_id - position)]
        else:
            pairs = min(max(1, math.ceil((ledger_id - position) / step)), PROBE_PAIRS)
            rounds = [BUMP_PAIRS] * (pairs // BUMP_PAIRS) + ([pairs % BUMP_PAIRS] if pairs % BUMP_PAIRS else [])
        _bump(store, parent, rounds)
        before, position = position, _take_sequence(store, parent)
        progress.advance(min(position, ledger_id) - before)
        step = (position - before - 1) / sum(rounds)  # the probe took one id itself
        if step <= 0:
            raise BKError(f"the id generator under {parent} did not advance ({before} → {position})")
    return position + 1


def _bump(store: MetadataStore, parent: str, rounds: list[int]) -> None:
    """One multi per round of that many create and delete pairs, ``BUMPS_IN_FLIGHT`` at once."""
    what = f"advance the id generator under {parent}"
    pending: deque[ZkResult[list[object]]] = deque()

    def settle() -> None:
        with zk_errors(what):
            results = pending.popleft().get()
        failed = next((r for r in results if isinstance(r, Exception)), None)
        if failed is not None:  # a multi is all or nothing: nothing was left behind
            raise BKError(f"{what}: {type(failed).__name__}")

    for pairs in rounds:
        transaction = store.zk.transaction()
        for _ in range(pairs):
            transaction.create(f"{parent}/{BUMP_NAME}", ephemeral=True)
            transaction.delete(f"{parent}/{BUMP_NAME}")
        with zk_errors(what):
            pending.append(transaction.commit_async())
        if len(pending) >= BUMPS_IN_FLIGHT:
            settle()
    while pending:
        settle()

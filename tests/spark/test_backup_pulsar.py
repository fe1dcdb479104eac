"""`bkctl cluster backup --with-pulsar-metadata` on real bookies and ZooKeeper, Pulsar's metadata written as a
broker writes it (tests/pulsar_broker.py), and the restore of its snapshot into another root."""

from __future__ import annotations

import hashlib
import json

import pyarrow.parquet as pq
import pytest
from pulsar_broker import Broker

from admin.backup import pulsar as backup_pulsar
from admin.backup.manifest import Manifest, read_ledgers
from admin.backup.pulsar import (
    PULSAR_FILE,
    check_pulsar_restore,
    read_pulsar_snapshot,
    restore_pulsar_snapshot,
    snapshot_pulsar,
)
from admin.pulsar.metadata import read_pulsar_metadata
from admin.pulsar.orphans import cursor_position_reader
from bookie._proto.pulsar_ml_data_formats_pb2 import PositionInfo
from bookie.client import BookKeeper
from bookie.errors import CorruptData, Unsafe
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.store import MetadataStore
from bookie.meta.tree import ZooKeeperTree
from bookie.meta.uri import parse_service_uri

from support.cluster import shared_cluster

TOPIC = "public/default/persistent/orders"
SCHEMA = "public/default/orders"
EPHEMERAL = "schemas/public/lock"
LATER = "public/default/persistent/later"
LATER_TOPIC = "public/default/later"


@pytest.fixture(scope="module")
def world(three_bookies):
    """A Pulsar namespace over the module's cluster: a topic with closed and current (open) data ledgers, a
    cursor, a compaction cursor naming its compacted ledger in its cursor ledger, a schema with two versions, an
    ephemeral znode; and a ledger Pulsar does not reference. Pulsar's root is the parent of the ledgers root."""
    uri = three_bookies.service_uri
    parsed = parse_service_uri(uri)
    with MetadataStore(parsed) as store, BookKeeper(uri) as bk:
        root = parsed.root.rsplit("/", 1)[0]
        broker = Broker(store, root, bk)
        d1, d2 = broker.data_ledger(TOPIC), broker.data_ledger(TOPIC)
        current = broker.data_ledger(TOPIC, close=False)
        broker.managed_ledger(TOPIC, [d1, d2, current])
        cursor = broker.cursor_ledger(TOPIC, "sub")
        broker.cursor(TOPIC, "sub", cursor)
        compacted = broker.compacted_ledger("persistent://public/default/orders")
        position = PositionInfo(ledgerId=d2, entryId=2)
        position.properties.add(name="CompactedTopicLedger", value=compacted)
        compaction = broker.cursor_ledger(TOPIC, "__compaction", position)
        broker.cursor(TOPIC, "__compaction", compaction)
        s1, s2 = broker.schema_ledger(SCHEMA), broker.schema_ledger(SCHEMA)
        broker.schema(SCHEMA, [s1, s2])
        store.zk.create(f"{root}/{EPHEMERAL}", b"broker-1", ephemeral=True)
        other = bk.create_ledger(3, 2, 2, custom_metadata={"application": b"other"})
        other.add_entry(b"x")
        other.close()
        yield {
            "uri": uri,
            "store": store,
            "root": root,
            "referenced": {d1, d2, current, cursor, compacted, compaction, s1, s2},
            "open": {current, cursor, compaction},
            "other": other.ledger_id,
            "bk": bk,
        }


@pytest.fixture(scope="module")
def backed_up(world, spark, tmp_path_factory):
    from click.testing import CliRunner

    from bkctl.cli import cli

    out = tmp_path_factory.mktemp("pulsar-backup") / "b"
    args = ["-u", world["uri"], "cluster", "backup", "--to", str(out), "--data", "--with-pulsar-metadata", "-o", "json"]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return out, json.loads(result.stdout)


def normalized(tree: ZooKeeperTree, bk: BookKeeper) -> dict:
    """read_pulsar_metadata's findings with paths relative to the root and without znode versions."""
    found = read_pulsar_metadata(tree, cursor_position_reader(lambda: bk))
    cut = len(tree.root)
    references = {
        lid: sorted(
            (r.kind, r.topic, r.path[cut:], r.cursor, r.schema_id, r.current, r.entries, r.schema_version, r.offloaded)
            for r in refs
        )
        for lid, refs in found.references.items()
    }
    return {
        "references": references,
        "topics": found.topics,
        "managedLedgers": found.managed_ledgers,
        "schemas": found.schemas,
        "unreadable": found.unreadable,
        "compactionUnknown": found.compaction_unknown,
    }


def test_a_pulsar_backup_holds_its_znodes_and_every_ledger_they_reference(world, backed_up):
    out, doc = backed_up
    manifest = Manifest.load(str(out))
    manifest.check_files(str(out))
    listed = {f.path: f for f in manifest.files}
    assert listed[PULSAR_FILE].sha256 == hashlib.sha256((out / PULSAR_FILE).read_bytes()).hexdigest()
    assert manifest.pulsar is not None and manifest.pulsar["referencedLedgers"] == sorted(world["referenced"])
    assert manifest.pulsar["root"] == world["root"] and manifest.pulsar["topics"] == 1
    assert doc["pulsar"]["znodes"] == manifest.pulsar["znodes"] and doc["pulsar"]["referencedLater"] == []

    rows = {r["path"]: r for r in pq.read_table(out / PULSAR_FILE).to_pylist()}
    assert EPHEMERAL not in rows and "schemas/public" in rows
    zk, root = world["store"].zk, world["root"]
    for path in [f"managed-ledgers/{TOPIC}", f"managed-ledgers/{TOPIC}/sub", f"managed-ledgers/{TOPIC}/__compaction"]:
        data, stat = zk.get(f"{root}/{path}")
        assert (rows[path]["data"], rows[path]["version"], rows[path]["mtime"]) == (data, stat.version, stat.mtime)
    assert rows[f"schemas/{SCHEMA}"]["data"] == zk.get(f"{root}/schemas/{SCHEMA}")[0]

    # without --include-open, the open ledgers Pulsar references are backed up to their LAC; another's is not
    assert set(manifest.ledgers.open_included) == world["open"]
    ledgers = {ledger.ledger_id: ledger for ledger in read_ledgers(str(out))}
    bk = world["bk"]
    for lid in world["referenced"]:
        md = LedgerManager(world["store"]).read(lid)[0]
        with bk.open_ledger(lid, md.password, recovery=False) as reader:
            last = reader.last_add_confirmed
        assert (ledgers[lid].last_entry_id, ledgers[lid].entries) == (last, last + 1), lid
    assert ledgers[world["other"]].entries == 1


def test_a_snapshot_restored_into_another_root_reads_as_the_source(world, backed_up):
    out, _ = backed_up
    snapshot = read_pulsar_snapshot(str(out))
    assert snapshot is not None and snapshot.referenced == sorted(world["referenced"])
    store, bk = world["store"], world["bk"]
    source = ZooKeeperTree(store, world["root"])
    target = ZooKeeperTree(store, f"{world['root']}-restored/pulsar")  # its parents do not exist yet
    created = restore_pulsar_snapshot(target, snapshot, {world["other"]: 10**9})
    assert created == len(snapshot.znodes) + 2
    assert normalized(target, bk) == normalized(source, bk)
    assert normalized(target, bk)["compactionUnknown"] == set()
    for z in snapshot.znodes:
        assert store.zk.get(target.path(z.path))[0] == z.data, z.path
    assert not store.zk.exists(target.path(EPHEMERAL))

    # into a tree that has any of its znodes: refused, nothing created
    before = _count(store, target.root)
    with_data = sum(1 for z in snapshot.znodes if z.data)  # the shared empty parents are no conflict
    assert with_data == 4  # the managed ledger, its two cursors, the schema locator
    conflict = rf"^{with_data} of the backup's Pulsar znodes exist in the target \(first: {target.root}/"
    with pytest.raises(Unsafe, match=conflict):
        check_pulsar_restore(target, snapshot, {})
    with pytest.raises(Unsafe, match=conflict):
        restore_pulsar_snapshot(target, snapshot, {})
    assert _count(store, target.root) == before
    store.zk.delete(f"{world['root']}-restored", recursive=True)


def test_an_id_map_moving_a_referenced_ledger_is_refused(world, backed_up):
    out, _ = backed_up
    snapshot = read_pulsar_snapshot(str(out))
    assert snapshot is not None
    store, moved = world["store"], min(world["referenced"])
    target = ZooKeeperTree(store, f"{world['root']}-moved")
    refusal = rf"moves 1 ledger\(s\) Pulsar's metadata references \(first: {moved} -> 7\)"
    with pytest.raises(Unsafe, match=refusal):
        check_pulsar_restore(target, snapshot, {moved: 7, world["other"]: 8})
    with pytest.raises(Unsafe, match=refusal):
        restore_pulsar_snapshot(target, snapshot, {moved: 7, world["other"]: 8})
    assert not store.zk.exists(target.root)


def test_a_changed_pulsar_file_is_refused(backed_up, tmp_path):
    import shutil

    out, _ = backed_up
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    data = bytearray((copy / PULSAR_FILE).read_bytes())
    data[len(data) // 2] ^= 1
    (copy / PULSAR_FILE).write_bytes(bytes(data))
    with pytest.raises(CorruptData, match=r"^metadata/pulsar\.parquet: size or SHA-256 does not match the manifest"):
        read_pulsar_snapshot(str(copy))


def test_a_failed_transaction_deletes_what_the_restore_created(world, monkeypatch):
    store = world["store"]
    snapshot = snapshot_pulsar(ZooKeeperTree(store, world["root"]), cursor_position_reader(lambda: world["bk"]))
    target = ZooKeeperTree(store, f"{world['root']}-raced")
    racer = target.path(snapshot.znodes[-1].path)
    batches = backup_pulsar._batches

    def raced(creates):  # someone creates a znode of the last batch while the first ones commit
        for n, batch in enumerate(batches(creates)):
            if n == 1:
                store.zk.create(racer, b"", makepath=True)
            yield batch

    monkeypatch.setattr(backup_pulsar, "CREATES_PER_TRANSACTION", 5)
    monkeypatch.setattr(backup_pulsar, "_batches", raced)
    with pytest.raises(Unsafe, match="the target changed meanwhile; what this restore created is deleted"):
        restore_pulsar_snapshot(target, snapshot, {})
    racer_and_parents = racer[len(target.root) :].count("/")
    assert _count(store, target.root) == racer_and_parents + 1
    store.zk.delete(target.root, recursive=True)


def test_a_pulsar_backup_without_data_is_refused(bkctl, world, tmp_path):
    result = bkctl("-u", world["uri"], "cluster", "backup", "--to", str(tmp_path / "b"), "--with-pulsar-metadata")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "error: --with-pulsar-metadata needs --data: the ledgers Pulsar references are backed up whole"
    ]
    assert not (tmp_path / "b").exists()


def test_a_selection_leaving_out_a_referenced_ledger_is_refused(bkctl, world, tmp_path):
    args = ["-u", world["uri"], "cluster", "backup", str(world["other"]), "--to", str(tmp_path / "b"), "--data"]
    result = bkctl(*args, "--with-pulsar-metadata", "--dry-run")
    assert result.exit_code == 2
    assert "ledger(s) Pulsar's metadata references are not selected (first: " in result.stderr


def _count(store: MetadataStore, root: str) -> int:
    """Znodes under ``root``, itself included (0 when it does not exist)."""
    if not store.zk.exists(root):
        return 0
    return 1 + sum(_count(store, f"{root}/{child}") for child in store.zk.get_children(root))


def test_a_ledger_pulsar_starts_using_during_the_backup_is_warned_about(bkctl, world, tmp_path, monkeypatch):
    from admin.backup import job

    broker = Broker(world["store"], world["root"], world["bk"])
    first = broker.data_ledger(LATER)
    path = broker.managed_ledger(LATER, [first])
    rolled = []

    def rolling(*args, **kwargs):  # the topic rolls over to a new ledger while the entries are read
        rolled.append(broker.data_ledger(LATER, close=False))
        broker.managed_ledger(LATER, [first, rolled[0]])
        return export(*args, **kwargs)

    export = job.run_export
    monkeypatch.setattr(job, "run_export", rolling)
    try:
        out = tmp_path / "b"
        args = ["-u", world["uri"], "cluster", "backup", "--to", str(out), "--data", "--with-pulsar-metadata"]
        result = bkctl(*args, "-o", "json")
        assert result.exit_code == 0, result.stderr
        assert json.loads(result.stdout)["pulsar"]["referencedLater"] == rolled
        assert f"1 ledger(s) Pulsar references now are not in the backup (first: {rolled[0]})" in result.stderr
        manifest = Manifest.load(str(out))
        assert manifest.pulsar is not None
        assert first in manifest.pulsar["referencedLedgers"] and rolled[0] not in manifest.pulsar["referencedLedgers"]
    finally:
        world["store"].zk.delete(path, recursive=True)


def test_a_referenced_ledger_gone_before_the_ledgers_are_read_fails_the_backup(bkctl, world, tmp_path, monkeypatch):
    from admin.backup import plan

    broker = Broker(world["store"], world["root"], world["bk"])
    trimmed = broker.data_ledger(LATER)
    path = broker.managed_ledger(LATER, [trimmed])

    def trimming(*args, **kwargs):  # the broker trims the ledger after Pulsar's metadata is read
        LedgerManager(world["store"]).delete(trimmed)
        return plan_backup(*args, **kwargs)

    plan_backup = plan.plan_backup
    monkeypatch.setattr(plan, "plan_backup", trimming)
    try:
        args = ["-u", world["uri"], "cluster", "backup", "--to", str(tmp_path / "b"), "--data"]
        result = bkctl(*args, "--with-pulsar-metadata", "--dry-run")
        assert result.exit_code == 3
        assert (
            f"error: 1 ledger(s) Pulsar's metadata references do not exist (first: {trimmed} (persistent://{LATER_TOPIC})):"
            in result.stderr
        )
    finally:
        world["store"].zk.delete(path, recursive=True)


def test_a_referenced_ledger_deleted_while_its_entries_are_read_fails_the_backup(bkctl, world, tmp_path, monkeypatch):
    from admin.backup import job

    broker = Broker(world["store"], world["root"], world["bk"])
    trimmed = broker.data_ledger(LATER)
    path = broker.managed_ledger(LATER, [trimmed])
    runs = []

    def trimmed_meanwhile(*args, **kwargs):  # after planning: the ledger goes, and its bookies collect it
        if not runs:
            LedgerManager(world["store"]).delete(trimmed)
            assert bkctl("-u", world["uri"], "bookie", "gc", "--all", "--wait", "--timeout", "30").exit_code == 0
        runs.append(args)
        return export(*args, **kwargs)

    export = job.run_export
    monkeypatch.setattr(job, "run_export", trimmed_meanwhile)
    try:
        out = tmp_path / "b"
        result = bkctl("-u", world["uri"], "cluster", "backup", "--to", str(out), "--data", "--with-pulsar-metadata")
        assert result.exit_code == 3 and len(runs) == 2
        assert (
            f"error: 1 ledger(s) Pulsar's metadata references are not backed up (first: {trimmed} "
            f"(persistent://{LATER_TOPIC}), deleted while the backup ran): run the backup again"
        ) in result.stderr
        assert not (out / "manifest.json").exists()
    finally:
        world["store"].zk.delete(path, recursive=True)


def test_empty_parents_in_the_target_are_shared(world, backed_up):
    out, _ = backed_up
    snapshot = read_pulsar_snapshot(str(out))
    assert snapshot is not None
    store, bk = world["store"], world["bk"]
    target = ZooKeeperTree(store, f"{world['root']}-initialized")  # a Pulsar cluster with its namespace, no topics
    store.zk.create(target.path("managed-ledgers/public/default"), b"", makepath=True)
    try:
        assert restore_pulsar_snapshot(target, snapshot, {}) == len(snapshot.znodes) - 3
        assert normalized(target, bk) == normalized(ZooKeeperTree(store, world["root"]), bk)
    finally:
        store.zk.delete(target.root, recursive=True)


def test_cluster_restore_with_pulsar_metadata_gives_pulsar_its_topics_back(
    bkctl, world, backed_up, zookeeper, tmp_path_factory
):
    """Into a fresh cluster: every ledger restored under its id, then Pulsar's znodes under the target's Pulsar root
    (the parent of its ledgers root), so that Pulsar's metadata there reads as the source's. A second run finds
    Pulsar's znodes there and refuses before writing anything."""
    out, _ = backed_up
    snapshot = read_pulsar_snapshot(str(out))
    with shared_cluster(zookeeper, tmp_path_factory.mktemp("pulsar-target"), 3) as target:
        uri = target.service_uri
        restore = ["-u", uri, "cluster", "restore", "--from", str(out), "--yes", "-o", "json"]
        result = bkctl(*restore, "--with-pulsar-metadata")
        assert result.exit_code == 0, result.stderr
        assert json.loads(result.stdout)["pulsarZnodes"] == len(snapshot.znodes)  # its Pulsar root exists
        parsed = parse_service_uri(uri)
        with MetadataStore(parsed) as store, BookKeeper(uri) as bk:
            restored = ZooKeeperTree(store, parsed.root.rsplit("/", 1)[0])
            assert normalized(restored, bk) == normalized(ZooKeeperTree(world["store"], world["root"]), world["bk"])
            before = _count(store, restored.root)
            again = bkctl(*restore, "--with-pulsar-metadata")
            assert again.exit_code == 3 and "of the backup's Pulsar znodes exist in the target" in again.stderr
            assert _count(store, restored.root) == before
            without = bkctl(*restore)  # every ledger restored already; Pulsar's metadata named, not restored
            assert without.exit_code == 0 and "not restored without --with-pulsar-metadata" in without.stderr


def test_restoring_pulsar_metadata_from_a_backup_without_it_is_refused(bkctl, world, tmp_path):
    out = tmp_path / "b"
    made = bkctl("-u", world["uri"], "cluster", "backup", str(world["other"]), "--data", "--to", str(out))
    assert made.exit_code == 0, made.stderr
    refused = bkctl("-u", world["uri"], "cluster", "restore", "--from", str(out), "--with-pulsar-metadata", "--yes")
    assert refused.exit_code == 2
    assert (
        refused.stderr == f"error: the backup at {out} holds no Pulsar metadata (made without --with-pulsar-metadata)\n"
    )

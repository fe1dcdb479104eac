"""Pulsar audits against a real ZooKeeper and real bookies: Pulsar's metadata written where and as a broker writes
it (tests/pulsar_broker.py), ledgers created with Pulsar's custom metadata by our client, and every kind of orphan.
The Java client's ledgers: tests/interop/test_pulsar_ledgers.py."""

from __future__ import annotations

import json

import pytest
from pulsar_broker import Broker

from admin.pulsar.orphans import PulsarAudit
from bookie._proto.pulsar_ml_data_formats_pb2 import ManagedLedgerInfo, PositionInfo
from bookie.client import BookKeeper
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.store import MetadataStore
from bookie.meta.tree import ZooKeeperTree
from bookie.meta.uri import parse_service_uri

from support.cluster import shared_cluster
from support.progress import RecordingProgress, show_bars

TOPIC = "public/default/persistent/orders"
OLD = 7200  # seconds: older than the default --min-age


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    with shared_cluster(zookeeper, tmp_path_factory.mktemp("pulsar"), 3) as harness:
        yield harness


@pytest.fixture
def world(cluster):
    """A Pulsar namespace over the cluster, with one orphan of each kind (``orphans``) and everything that must
    not be called one. Pulsar's root is the parent of the ledgers root, as Pulsar lays out its ZooKeeper."""
    uri = parse_service_uri(cluster.service_uri)
    with MetadataStore(uri) as store, BookKeeper(cluster.service_uri) as bk:
        root = uri.root.rsplit("/", 1)[0]
        for child in ("managed-ledgers", "schemas"):  # a fresh Pulsar for each test, on the module's bookies
            if store.zk.exists(f"{root}/{child}"):
                store.zk.delete(f"{root}/{child}", recursive=True)
        for lid in LedgerManager(store).iter_ledger_ids():
            LedgerManager(store).delete(lid)
        broker = Broker(store, root, bk)
        w = {"broker": broker, "store": store, "root": root}

        # a topic with three data ledgers; the first dropped from ManagedLedgerInfo but not deleted
        dropped, d2, d3 = (broker.data_ledger(TOPIC) for _ in range(3))
        current = broker.data_ledger(TOPIC, close=False)
        broker.managed_ledger(TOPIC, [d2, d3, current])
        # a cursor with its ledger, and the ledger it switched away from, never deleted (leaked on failover)
        leaked_cursor = broker.cursor_ledger(TOPIC, "sub")
        cursor = broker.cursor_ledger(TOPIC, "sub")
        broker.cursor(TOPIC, "sub", cursor)
        broker.cursor(TOPIC, "closed-sub", -1)  # a cleanly closed cursor: no ledger
        unsubscribed = broker.cursor_ledger(TOPIC, "gone-sub")  # its cursor znode was deleted
        # a schema with two versions, and a version ledger the locator never got
        s1, s2, lost_schema = (broker.schema_ledger("public/default/orders") for _ in range(3))
        broker.schema("public/default/orders", [s1, s2])
        # a compacted topic: the compaction cursor's ledger names k2; k1 was superseded; k3 is the newest
        k1, k2, k3 = (broker.compacted_ledger("persistent://public/default/orders") for _ in range(3))
        position = PositionInfo(ledgerId=d3, entryId=2)
        position.properties.add(name="CompactedTopicLedger", value=k2)
        compaction = broker.cursor_ledger(TOPIC, "__compaction", position)
        broker.cursor(TOPIC, "__compaction", compaction, {"CompactedTopicLedger": k1})  # stale snapshot
        # a deleted topic whose ledger was left behind
        deleted_topic = broker.data_ledger("public/default/persistent/deleted")
        # what must never be reported: not Pulsar's, another component's
        foreign = bk.create_ledger(3, 2, 2, custom_metadata={"application": b"other"}).ledger_id
        bucket = broker.create({"application": b"pulsar", "component": b"delayed-index-bucket"}, 1, True)
        for lid in LedgerManager(store).iter_ledger_ids():
            broker.age(lid, OLD)
        young = broker.data_ledger(TOPIC)  # dropped too, but just created: a broker may be adding it now
        w.update(
            orphans={dropped, leaked_cursor, unsubscribed, lost_schema, k1, deleted_topic},
            referenced={d2, d3, current, cursor, s1, s2, k2, compaction},
            protected={k3, bucket},
            young=young,
            foreign=foreign,
            dropped=dropped,
            leaked_cursor=leaked_cursor,
            unsubscribed=unsubscribed,
            k1=k1,
            k3=k3,
        )
        yield w


def orphans(bkctl, cluster, *args):
    result = bkctl("-u", cluster.service_uri, "pulsar", "orphans", "-o", "json", *args)
    return result.exit_code, json.loads(result.stdout)


def test_orphans_are_exactly_the_unreferenced_old_ledgers_of_pulsar(bkctl, cluster, world):
    code, doc = orphans(bkctl, cluster)
    assert code == 3
    found = {o["ledgerId"]: o for o in doc["orphans"]}
    assert set(found) == world["orphans"]
    assert found[world["dropped"]]["reason"] == "not in its managed ledger's list"
    assert found[world["dropped"]]["owner"] == "persistent://public/default/orders"
    assert found[world["leaked_cursor"]]["kind"] == "cursor"
    assert found[world["leaked_cursor"]]["owner"] == "persistent://public/default/orders cursor sub"
    assert found[world["k1"]]["kind"] == "compacted"
    for orphan in found.values():
        assert orphan["ageFrom"] == "metadata" and orphan["ageSeconds"] >= OLD - 60
        assert orphan["state"] == "OPEN" or orphan["bytes"] > 0
    assert doc["count"] == len(world["orphans"]) and doc["managedLedgers"] == 1
    assert doc["bytes"] == sum(o["bytes"] or 0 for o in found.values())
    assert doc["storedBytes"] == 2 * doc["bytes"]  # write quorum 2


def test_owners_say_who_and_whether_still_referenced(bkctl, cluster, world):
    result = bkctl("-u", cluster.service_uri, "pulsar", "owners", "-o", "json")
    assert result.exit_code == 0, result.stderr
    status = {d["ledgerId"]: d["status"] for d in json.loads(result.stdout)}
    assert {lid for lid, s in status.items() if s == "orphaned"} == world["orphans"]
    assert {lid for lid, s in status.items() if s == "referenced"} == world["referenced"]
    assert {lid for lid, s in status.items() if s == "protected"} == world["protected"]
    assert status[world["young"]] == "young" and status[world["foreign"]] == "not-pulsar"

    one = bkctl("-u", cluster.service_uri, "pulsar", "owners", str(world["k3"]), "-o", "wide")
    assert one.exit_code == 0
    assert "the newest compacted ledger of its topic" in one.stdout
    listed = bkctl("-u", cluster.service_uri, "ledger", "list", "--owner", "-o", "json")
    assert {d["ledgerId"]: d["status"] for d in json.loads(listed.stdout)} == status


def test_delete_removes_exactly_the_orphans_and_is_safe_to_run_twice(bkctl, cluster, world):
    ledgers = LedgerManager(world["store"])
    before = set(ledgers.iter_ledger_ids())
    code, dry = orphans(bkctl, cluster, "--dry-run")
    assert (code, dry["count"]) == (3, len(world["orphans"])) and set(ledgers.iter_ledger_ids()) == before

    code, doc = orphans(bkctl, cluster, "--delete", "--yes")
    assert code == 0
    assert {d["ledgerId"] for d in doc["deletions"] if d["outcome"] == "deleted"} == world["orphans"]
    assert set(ledgers.iter_ledger_ids()) == before - world["orphans"]

    code, doc = orphans(bkctl, cluster, "--delete", "--yes")
    assert (code, doc["count"]) == (0, 0)
    assert set(ledgers.iter_ledger_ids()) == before - world["orphans"]


def test_usage_puts_pulsar_bytes_next_to_orphaned_and_foreign(bkctl, cluster, world):
    result = bkctl("-u", cluster.service_uri, "pulsar", "usage", "--by", "topic", "-o", "json")
    assert result.exit_code == 0, result.stderr
    rows = {(r["level"], r["name"]): r for r in json.loads(result.stdout)}
    topic = rows[("topic", "persistent://public/default/orders")]
    orphaned, total = rows[("orphaned", "orphaned")], rows[("total", "all ledgers")]
    assert orphaned["ledgers"] == len(world["orphans"])
    assert rows[("other", "not Pulsar's")]["ledgers"] == 1
    assert topic["openLedgers"] >= 2  # the current data ledger and the cursor ledgers are open
    parts = [r for (level, _), r in rows.items() if level in ("topic", "orphaned", "other")]
    assert sum(r["bytes"] for r in parts) == total["bytes"] and sum(r["ledgers"] for r in parts) == total["ledgers"]


def audit_of(world, cluster, min_age=3600.0):
    store = world["store"]
    return PulsarAudit(
        ZooKeeperTree(store, store.root),
        "hierarchical",
        ZooKeeperTree(store, world["root"]),
        min_age,
        same_zookeeper=True,
    )


def test_an_audit_announces_each_phase_with_its_total_and_reaches_it(bkctl, cluster, world, monkeypatch):
    progress = RecordingProgress()
    report = audit_of(world, cluster).run(progress=progress)
    ledgers = len(list(LedgerManager(world["store"]).iter_ledger_ids()))
    assert [(p.name, p.total) for p in progress.phases] == [
        ("listing Pulsar's topics", None),
        ("reading managed ledgers", 1),
        ("reading cursors", 3),  # sub, closed-sub, __compaction
        ("reading Pulsar's schemas", None),
        ("listing ledgers", None),
        ("reading ledger metadata", ledgers),
    ]
    assert len(report.verdicts) == ledgers
    progress.assert_complete()

    show_bars(monkeypatch)
    for verb in ("orphans", "usage", "owners"):
        result = bkctl("-u", cluster.service_uri, "pulsar", verb, "-o", "json")
        assert json.loads(result.stdout), verb
        assert "reading ledger metadata" in result.stderr, verb
    deleted = bkctl("-u", cluster.service_uri, "pulsar", "orphans", "--delete", "--yes", "-o", "json")
    assert len(json.loads(deleted.stdout)["deletions"]) == len(world["orphans"])
    count = len(world["orphans"])
    assert "deleting" in deleted.stderr and f"{count}/{count} ledgers" in deleted.stderr


def test_a_ledger_referenced_again_before_the_recheck_is_not_deleted(cluster, world):
    broker, dropped = world["broker"], world["dropped"]
    audit = audit_of(world, cluster)
    report = audit.run()
    assert {v.ledger.ledger_id for v in report.orphans} >= {dropped}

    def broker_adds_it_back(ledger_id):
        if ledger_id == dropped:
            info = ManagedLedgerInfo.FromString(world["store"].zk.get(f"{world['root']}/managed-ledgers/{TOPIC}")[0])
            broker.managed_ledger(TOPIC, [dropped, *(i.ledgerId for i in info.ledgerInfo)])

    outcomes = {d.ledger_id: d for d in audit.delete(report.orphans, before_recheck=broker_adds_it_back)}
    assert outcomes[dropped].outcome == "skipped" and "referenced" in outcomes[dropped].reason
    assert LedgerManager(world["store"]).exists(dropped)
    assert all(d.outcome == "deleted" for lid, d in outcomes.items() if lid != dropped)


def test_a_change_of_the_owner_between_recheck_and_delete_fails_the_transaction(cluster, world):
    broker, leaked = world["broker"], world["leaked_cursor"]
    audit = audit_of(world, cluster)
    report = audit.run()

    def broker_moves_the_cursor(ledger_id):
        if ledger_id == leaked:
            broker.cursor(TOPIC, "sub", leaked)  # the cursor switches to it, after our re-check

    outcomes = {d.ledger_id: d for d in audit.delete(report.orphans, before_delete=broker_moves_the_cursor)}
    assert outcomes[leaked].outcome == "skipped" and "changed while deleting" in outcomes[leaked].reason
    assert LedgerManager(world["store"]).exists(leaked)


def test_pulsar_metadata_in_another_zookeeper(bkctl, cluster, world, zookeeper):
    """--pulsar-zk naming other hosts: a session of its own (here the same server under another name)."""
    port = zookeeper.address.rsplit(":", 1)[1]
    code, doc = orphans(bkctl, cluster, "--pulsar-zk", f"localhost:{port}{world['root']}", "--delete", "--yes")
    assert code == 0 and {d["ledgerId"] for d in doc["deletions"] if d["outcome"] == "deleted"} == world["orphans"]


def test_a_wrong_pulsar_root_is_refused_rather_than_everything_called_orphaned(bkctl, cluster, world, zookeeper):
    result = bkctl("-u", cluster.service_uri, "pulsar", "orphans", "--pulsar-zk", f"{zookeeper.address}/nope")
    assert result.exit_code == 5 and "no Pulsar metadata at /nope" in result.stderr
    assert result.stderr.count("\n") == 1


def test_compressed_and_text_metadata_are_read_as_pulsar_writes_them(bkctl, cluster, world):
    from admin.pulsar.formats import compress_zlib
    from bookie._proto.pulsar_ml_data_formats_pb2 import ManagedLedgerInfoMetadata

    path = f"{world['root']}/managed-ledgers/{TOPIC}"
    info = ManagedLedgerInfo.FromString(world["store"].zk.get(path)[0])
    world["store"].zk.set(path, compress_zlib(info, ManagedLedgerInfoMetadata))
    code, doc = orphans(bkctl, cluster)
    assert code == 3 and {o["ledgerId"] for o in doc["orphans"]} == world["orphans"]

    from google.protobuf import text_format

    world["store"].zk.set(path, text_format.MessageToString(info).encode())
    code, doc = orphans(bkctl, cluster)
    assert code == 3 and {o["ledgerId"] for o in doc["orphans"]} == world["orphans"]

    world["store"].zk.set(path, b"\x00garbage")  # unreadable: the topic's data and cursor ledgers are not judged
    code, doc = orphans(bkctl, cluster)
    assert code == 3
    protected = {world["dropped"], world["leaked_cursor"], world["unsubscribed"]}
    assert {o["ledgerId"] for o in doc["orphans"]} == world["orphans"] - protected
    assert any(TOPIC in p for p in doc["problems"])


def test_the_tables_for_people(bkctl, cluster, world):
    result = bkctl("-u", cluster.service_uri, "pulsar", "orphans")
    assert result.exit_code == 3
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["LEDGER", "KIND", "OWNER", "AGE", "SIZE", "WHY"]
    assert len(lines) == 1 + len(world["orphans"]) + 1
    assert lines[-1].startswith(f"{len(world['orphans'])} ledger(s) orphaned: ") and "on bookies)" in lines[-1]
    dropped = next(line for line in lines if line.startswith(f"{world['dropped']} "))
    assert "persistent://public/default/orders" in dropped and " 2h00m " in dropped

    usage = bkctl("-u", cluster.service_uri, "pulsar", "usage", "--by", "tenant")
    assert usage.exit_code == 0
    names = [line.split("   ")[0].strip() for line in usage.stdout.splitlines()]
    assert names == ["TENANT", "public", "orphaned", "Pulsar's, no topic", "not Pulsar's", "all ledgers"]


def test_delete_without_yes_and_without_a_terminal_is_refused(bkctl, cluster, world):
    before = set(LedgerManager(world["store"]).iter_ledger_ids())
    result = bkctl("-u", cluster.service_uri, "pulsar", "orphans", "--delete")
    assert result.exit_code == 2 and result.stderr.startswith("error: refusing to delete without --yes")
    assert set(LedgerManager(world["store"]).iter_ledger_ids()) == before

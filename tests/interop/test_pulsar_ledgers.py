"""Pulsar's ledgers as Pulsar's own client creates them: the Java BookKeeper client of ../shared/bk-oracle
(tests/interop/java/InteropClient.java, mode create) writes ledgers with a broker's custom metadata into our
cluster (data, cursor, schema and compacted-topic ledgers); bkctl's Pulsar audit reads them next to Pulsar's
metadata (tests/pulsar_broker.py). The Java client stores no ctime (storeSystemtimeAsLedgerCreationTime is off by
default): ages come from the znodes."""

from __future__ import annotations

import time

from pulsar_broker import Broker, compacted_metadata, managed_ledger_metadata, schema_metadata

from admin.pulsar.orphans import PulsarAudit
from bookie.client import BookKeeper
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.store import MetadataStore
from bookie.meta.tree import ZooKeeperTree
from bookie.meta.uri import parse_service_uri

from interop.oracle import interop, require_oracle
from support.cluster import shared_cluster

require_oracle()

TOPIC = "public/default/persistent/java-topic"
SCHEMA = "public/default/java-topic"
# a compacted ledger's metadata but its binary pulsar/compactedTo (a MessageIdData, which bkctl does not read): the
# Java tool takes text lines
COMPACTED = {
    k: v for k, v in compacted_metadata("persistent://public/default/java-topic").items() if k != "pulsar/compactedTo"
}


def java_ledgers(classes, service_uri: str, specs: list[tuple[dict[str, bytes], int, bool]]) -> list[int]:
    """One Java client creates a ledger per spec ``(custom metadata, entries, close)``; their ids."""
    lines = "".join(
        f"{entries} {'close' if close else 'open'} " + " ".join(f"{k}={v.decode()}" for k, v in md.items()) + "\n"
        for md, entries, close in specs
    )
    return [int(line) for line in interop(classes, service_uri, "create", timeout=180, stdin=lines).split()]


def test_orphans_among_the_java_clients_pulsar_ledgers(classes, zookeeper, tmp_path):
    with shared_cluster(zookeeper, tmp_path, 3) as cluster:
        uri = parse_service_uri(cluster.service_uri)
        root = uri.root.rsplit("/", 1)[0]
        ids = java_ledgers(
            classes,
            cluster.service_uri,
            [
                (managed_ledger_metadata(TOPIC), 5, True),  # dropped from the ManagedLedgerInfo
                (managed_ledger_metadata(TOPIC), 5, True),
                (managed_ledger_metadata(TOPIC), 2, False),  # the topic's current ledger
                (managed_ledger_metadata(TOPIC, "sub"), 1, False),  # the cursor's ledger
                (managed_ledger_metadata(TOPIC, "sub"), 1, False),  # the one it switched from, leaked
                (schema_metadata(SCHEMA), 1, True),
                (schema_metadata(SCHEMA), 1, True),  # a version the locator never got
                (COMPACTED, 2, True),  # superseded by the next compaction, left behind
                (COMPACTED, 2, True),  # the one the compaction cursor names
                (COMPACTED, 2, True),  # the newest: a compaction may be acknowledging it
            ],
        )
        dropped, data, current, cursor, leaked, schema, lost_schema, superseded, compacted, newest = ids
        with MetadataStore(uri) as store, BookKeeper(cluster.service_uri) as bk:
            broker = Broker(store, root, bk)
            broker.managed_ledger(TOPIC, [data, current])
            broker.cursor(TOPIC, "sub", cursor)
            broker.schema(SCHEMA, [schema])
            # closed cleanly: no cursor ledger (-1), the compacted ledger in its znode's properties
            broker.cursor(TOPIC, "__compaction", -1, {"CompactedTopicLedger": compacted})
            time.sleep(3)  # the Java ledgers are 3 s older than the next one
            young = broker.data_ledger(TOPIC)  # ours, unreferenced: a broker may be adding it now
            now = LedgerManager(store).read(young)[0].ctime / 1000 + 1

            audit = PulsarAudit(
                ZooKeeperTree(store, store.root), "hierarchical", ZooKeeperTree(store, root), 3.0, same_zookeeper=True
            )
            report = audit.run(now=now)
            status = {v.ledger.ledger_id: v for v in report.verdicts}
            orphans = {dropped, leaked, lost_schema, superseded}
            assert {lid for lid, v in status.items() if v.status == "orphaned"} == orphans
            referenced = {data, current, cursor, schema, compacted}
            assert {lid for lid, v in status.items() if v.status == "referenced"} == referenced
            assert status[newest].status == "protected"
            owner = status[superseded].ledger.owner
            assert (owner.kind.value, owner.topic) == ("compacted", "persistent://public/default/java-topic")
            assert status[young].status == "young" and status[young].ledger.age_source == "metadata"
            for lid in ids:
                assert status[lid].ledger.age_source == "znode"  # the Java client wrote no ctime
            assert status[leaked].ledger.owner.describe() == "persistent://public/default/java-topic cursor sub"
            assert status[dropped].ledger.length == 5 * len(b"pulsar-entry-0")

            deleted = [d for d in audit.delete(report.orphans) if d.outcome == "deleted"]
            assert sorted(d.ledger_id for d in deleted) == sorted(orphans)
            left = set(LedgerManager(store).iter_ledger_ids())
            assert left == {*referenced, newest, young}
            assert audit.run(now=now).orphans == []  # a second run finds nothing


def test_missing_tells_a_java_writers_close_from_a_recoverys(classes, zookeeper, tmp_path):
    """`pulsar missing` on the Java client's ledgers: an empty current ledger its writer closed (a broker unloading
    the topic) is not reported; one left open and then closed by a recovery is (closed-head); a data ledger whose
    metadata is deleted is (no-metadata)."""
    from admin.check.checker import Checker, CheckOptions
    from admin.pulsar.missing import MissingLedgers

    idle, fenced = "public/default/persistent/idle", "public/default/persistent/fenced"
    with shared_cluster(zookeeper, tmp_path, 3) as cluster:
        uri = parse_service_uri(cluster.service_uri)
        root = uri.root.rsplit("/", 1)[0]
        specs = [(managed_ledger_metadata(idle), 3, True), (managed_ledger_metadata(idle), 0, True)]
        specs += [(managed_ledger_metadata(fenced), 3, True), (managed_ledger_metadata(fenced), 0, False)]
        idle_data, idle_head, gone, fenced_head = java_ledgers(classes, cluster.service_uri, specs)
        with MetadataStore(uri) as store, BookKeeper(cluster.service_uri) as bk:
            broker = Broker(store, root, bk)
            broker.managed_ledger(idle, [idle_data, idle_head])
            broker.managed_ledger(fenced, [gone, fenced_head])
            LedgerManager(store).delete(gone)
            bk.open_ledger(fenced_head, b"", recovery=True)  # as autorecovery fences an open ledger

            audit = PulsarAudit(ZooKeeperTree(store, store.root), "hierarchical", ZooKeeperTree(store, root), 3600)
            options = CheckOptions(recheck_delay=0)
            report = MissingLedgers(
                audit, lambda ledgers: bk.run(Checker(bk.core, options).holdings(ledgers)), 3600
            ).run()
            assert {m.ledger_id: m.reason for m in report.missing} == {gone: "no-metadata", fenced_head: "closed-head"}
            assert LedgerManager(store).read(idle_head)[1] == 1  # the Java writer closed it in one update

"""`pulsar missing` against a real ZooKeeper and real bookies: Pulsar's metadata written as a broker writes it
(tests/pulsar_broker.py), then BookKeeper loses what it references — ledger metadata deleted, a bookie's disks
wiped, an empty current ledger fenced and closed under its writer — and topics that must not be reported."""

from __future__ import annotations

import json

import pytest
from pulsar_broker import Broker, managed_ledger_metadata

from admin.check.checker import EMPTY
from admin.pulsar.missing import MissingLedgers
from admin.pulsar.orphans import PulsarAudit
from bookie._proto.pulsar_ml_data_formats_pb2 import ManagedLedgerInfo
from bookie.client import BookKeeper
from bookie.meta.cookies import CookieStore
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.ledger_metadata import LedgerState
from bookie.meta.registration import BookieRegistry
from bookie.meta.store import MetadataStore
from bookie.meta.tree import ZooKeeperTree
from bookie.meta.uri import parse_service_uri

from support.checks import wipe
from support.cluster import shared_cluster
from support.waiting import wait_for

HEALTHY = "public/default/persistent/healthy"
IDLE = "public/default/persistent/idle"  # unloaded by its broker: an empty current ledger its writer closed
LOST = "public/default/persistent/lost"
FENCED = "public/default/persistent/fenced"


def topic(name: str) -> str:
    return "persistent://" + name.replace("/persistent/", "/")


@pytest.fixture(scope="module")
def world(zookeeper, tmp_path_factory):
    """Built once (a bookie is wiped): the tests below only read it."""
    with shared_cluster(zookeeper, tmp_path_factory.mktemp("missing"), 3) as harness:
        uri = parse_service_uri(harness.service_uri)
        with MetadataStore(uri) as store, BookKeeper(harness.service_uri) as bk:
            root = uri.root.rsplit("/", 1)[0]
            broker, ledgers = Broker(store, root, bk), LedgerManager(store)
            w = {"store": store, "root": root, "broker": broker, "harness": harness, "bk": bk}

            # healthy: closed data ledgers, an open current one, a cursor, a schema
            done = [broker.data_ledger(HEALTHY) for _ in range(2)]
            broker.managed_ledger(HEALTHY, [*done, broker.data_ledger(HEALTHY, close=False)])
            broker.cursor(HEALTHY, "sub", broker.cursor_ledger(HEALTHY, "sub"))
            broker.schema("public/default/healthy", [broker.schema_ledger("public/default/healthy")])
            # idle: its broker closed the empty current ledger when it unloaded the topic
            broker.managed_ledger(IDLE, [broker.data_ledger(IDLE), broker.data_ledger(IDLE, entries=0)])

            # lost: a data ledger whose metadata was deleted, one on a single bookie whose disks are wiped, a
            # cursor's ledger and a schema version's ledger deleted
            gone = broker.data_ledger(LOST)
            single = bk.create_ledger(
                1, 1, 1, digest_type="crc32c", password=b"", custom_metadata=(managed_ledger_metadata(LOST))
            )
            single.add_entries(b"only-here-%d" % i for i in range(3))
            single.close()
            broker.managed_ledger(LOST, [gone, single.ledger_id, broker.data_ledger(LOST, close=False)])
            cursor = broker.cursor_ledger(LOST, "sub")
            broker.cursor(LOST, "sub", cursor)
            v0, v1 = (broker.schema_ledger("public/default/lost") for _ in range(2))
            broker.schema("public/default/lost", [v0, v1])
            for lid in (gone, cursor, v1):
                ledgers.delete(lid)
            holder = bk.ledger_metadata(single.ledger_id).segments[0].bookies[0]
            victim = next(b for b in harness.bookies if b.bookie_id == holder)
            wipe(victim)
            harness.restart(victim)

            # fenced: the current ledger is empty and open in its broker; a recovery fences and closes it
            head = broker.data_ledger(FENCED, entries=0, close=False)
            broker.managed_ledger(FENCED, [broker.data_ledger(FENCED), head])
            bk.open_ledger(head, b"", recovery=True)

            w.update(gone=gone, single=single.ledger_id, cursor=cursor, v1=v1, head=head)
            yield w


def missing(bkctl, world, *args):
    uri = world["harness"].service_uri
    result = bkctl("-u", uri, "pulsar", "missing", "--recheck-delay", "0", "-o", "json", *args)
    return result.exit_code, json.loads(result.stdout)


def test_every_kind_is_reported_per_topic_and_healthy_topics_are_not(bkctl, world):
    code, doc = missing(bkctl, world)
    assert code == 3
    topics = {t["topic"]: {m["ledgerId"]: m for m in t["missing"]} for t in doc["topics"]}
    assert set(topics) == {topic(LOST), topic(FENCED)}  # not healthy, not idle
    lost, fenced = topics[topic(LOST)], topics[topic(FENCED)]
    assert set(lost) == {world["gone"], world["single"], world["cursor"], world["v1"]}

    gone = lost[world["gone"]]
    assert (gone["reason"], gone["role"], gone["state"]) == ("no-metadata", "ledger", None)
    assert gone["impact"].startswith("its 3 entries are lost: reading ledger")
    single = lost[world["single"]]
    assert (single["reason"], single["state"], single["lostEntries"]) == ("no-data", "CLOSED", [[0, 2]])
    assert single["impact"].startswith("all 3 entries are lost")
    cursor = lost[world["cursor"]]
    assert (cursor["reason"], cursor["role"], cursor["cursor"]) == ("no-metadata", "cursor", "sub")
    assert "cursor sub loses its position" in cursor["impact"]
    schema = lost[world["v1"]]
    assert (schema["role"], schema["schemaVersion"]) == ("schema", 1)
    assert schema["impact"].startswith("schema version 1 is unreadable")

    head = fenced[world["head"]]
    assert (head["reason"], head["role"], head["state"]) == ("closed-head", "current-ledger", "CLOSED")
    assert "apache/pulsar#26074" in head["impact"]
    assert head["impact"].startswith("harmless if no broker serves the topic")
    assert f"stats-internal` shows currentLedgerId {world['head']}" in head["impact"]

    assert doc["count"] == 5 and doc["managedLedgers"] == 4
    assert doc["byReason"] == {"no-metadata": 3, "no-data": 1, "closed-head": 1, "in-recovery": 0}
    assert doc["problems"] == [] and doc["unavailableBookies"] == []
    assert doc["ledgers"] == 15  # every referenced ledger: 10 data, 2 cursor, 3 schema


def test_reading_the_entries_too_finds_the_same(bkctl, world):
    def reasons(doc):
        return {m["ledgerId"]: m["reason"] for t in doc["topics"] for m in t["missing"]}

    code, doc = missing(bkctl, world, "--verify-entries", "100")
    assert code == 3 and doc["verifyEntriesPercent"] == 100
    assert reasons(doc) == reasons(missing(bkctl, world)[1]) and len(reasons(doc)) == 5


def test_the_text_groups_findings_by_topic(bkctl, world):
    result = bkctl("-u", world["harness"].service_uri, "pulsar", "missing", "--recheck-delay", "0")
    assert result.exit_code == 3
    lines = result.stdout.splitlines()
    assert lines[0] == topic(FENCED)
    assert lines[1] == f"  ledger {world['head']} (current ledger): closed-head: the current ledger, empty and " + (
        "CLOSED by a recovery or an ensemble change (version 2)"
    )
    at = lines.index(topic(LOST))
    assert lines[at + 1].startswith(f"  ledger {world['gone']} (ledger): no-metadata: no ledger metadata")
    assert f"  ledger {world['single']} (ledger): no-data: no bookie holds some of its entries, all 3 entries lost" in (
        lines
    )
    assert lines[-1] == "5 ledger(s) missing in 2 topic(s): 3 no-metadata, 1 no-data, 1 closed-head"


async def unanswered(self, ledger_ids, timeout):
    """GET_LIST_OF_ENTRIES_OF_LEDGER as a Java bookie with DbLedgerStorage answers it for a ledger it holds."""
    from bookie.errors import BKError

    raise BKError(f"bookie {self.bookie_id}: GET_LIST_OF_ENTRIES_OF_LEDGER timed out")
    yield


@pytest.mark.parametrize("listing", [True, False], ids=["listed", "read"])
def test_in_recovery_ledgers_are_reported_once_older_than_min_age(bkctl, world, monkeypatch, listing):
    """A ledger left IN_RECOVERY (a recovery that stopped): an empty current one is a closed head, another one
    in-recovery; younger than --min-age (since it entered IN_RECOVERY) neither, a broker may be recovering it. Read:
    the bookies do not answer the listing, and the last entry each stores of these ledgers is read instead."""
    from bookie.client.wire_client import WireBookieClient

    if not listing:
        monkeypatch.setattr(WireBookieClient, "list_entries", unanswered)
    broker, ledgers = world["broker"], LedgerManager(world["store"])
    name = "public/default/persistent/recovering"
    stuck, head = broker.data_ledger(name, close=False), broker.data_ledger(name, entries=0, close=False)
    path = broker.managed_ledger(name, [stuck, head])
    busy = "public/default/persistent/recovering-busy"  # its current ledger has entries: not a closed head
    written = broker.data_ledger(busy, close=False)
    busy_path = broker.managed_ledger(busy, [written])
    for lid in (stuck, head, written):
        md, version = ledgers.read(lid)
        ledgers.write(lid, md.with_changes(state=LedgerState.IN_RECOVERY), version)
    try:
        code, doc = missing(bkctl, world)
        assert code == 3 and not {topic(name), topic(busy)} & {t["topic"] for t in doc["topics"]}
        code, doc = missing(bkctl, world, "--min-age", "0s")
        found = {
            m["ledgerId"]: m for t in doc["topics"] if t["topic"] in (topic(name), topic(busy)) for m in t["missing"]
        }
        assert (found[stuck]["reason"], found[stuck]["state"]) == ("in-recovery", "IN_RECOVERY")
        assert (found[head]["reason"], found[head]["state"]) == ("closed-head", "IN_RECOVERY")
        assert "cannot open the topic" not in found[head]["impact"]
        assert found[stuck]["impact"].startswith(f"ledger {stuck} was never closed")
        assert found[written]["reason"] == "in-recovery" and "cannot open the topic" in found[written]["impact"]
    finally:
        world["store"].zk.delete(path, recursive=True)
        world["store"].zk.delete(busy_path, recursive=True)


def test_an_offloaded_ledger_is_read_from_tiered_storage_not_checked(bkctl, world):
    name = "public/default/persistent/offloaded"
    info = ManagedLedgerInfo()
    offloaded = info.ledgerInfo.add(ledgerId=999_999, entries=3, size=60)
    offloaded.offloadContext.complete, offloaded.offloadContext.bookkeeperDeleted = True, True
    info.ledgerInfo.add(ledgerId=999_998)  # its current ledger, never created: missing
    path = world["broker"].managed_ledger(name, [], info.SerializeToString())
    try:
        code, doc = missing(bkctl, world)
        found = {m["ledgerId"] for t in doc["topics"] if t["topic"] == topic(name) for m in t["missing"]}
        assert code == 3 and found == {999_998} and doc["offloaded"] == 1
        assert next(t for t in doc["topics"] if t["topic"] == topic(name))["missing"][0]["impact"].startswith(
            'a broker loading the topic drops ledger 999998 ("Ledger not found"): its messages are lost if it held '
            "entries (Pulsar deletes an empty head before updating its list)"
        )
    finally:
        world["store"].zk.delete(path, recursive=True)


def test_a_ledger_trimmed_by_its_broker_during_the_check_is_not_reported(world):
    """A broker removes a ledger from its list and deletes it between our reads: the first look finds it gone from
    the bookies, the confirmation re-reads the managed ledger and drops it."""
    store, broker, bk = world["store"], world["broker"], world["bk"]
    name = "public/default/persistent/trimmed"
    trimmed, kept = broker.data_ledger(name), broker.data_ledger(name, close=False)
    path = broker.managed_ledger(name, [trimmed, kept])
    audit = PulsarAudit(ZooKeeperTree(store, store.root), "hierarchical", ZooKeeperTree(store, world["root"]), 0)
    from admin.check.checker import Checker, CheckOptions

    calls: list[set[int]] = []

    def holdings(ledgers):
        first = not calls
        calls.append(set(ledgers))
        if first:  # the broker trims now: the ledger's metadata was read, its bookies are asked next
            info = ManagedLedgerInfo.FromString(store.zk.get(path)[0])
            broker.managed_ledger(name, [i.ledgerId for i in info.ledgerInfo if i.ledgerId != trimmed])
            bk.delete_ledger(trimmed)
        held, unknown = bk.run(Checker(bk.core, CheckOptions(recheck_delay=0)).holdings(ledgers))
        if first:  # and the bookies have already collected it
            held = {key: EMPTY if key[1] == trimmed else entries for key, entries in held.items()}
        return held, unknown

    try:
        report = MissingLedgers(audit, holdings, 3600).run()
        assert trimmed in calls[0] and trimmed not in calls[1]  # no-data at first; unreferenced on the re-read
        assert trimmed not in {m.ledger_id for m in report.missing}
        assert {m.ledger_id for m in report.missing} == {
            world["gone"],
            world["single"],
            world["cursor"],
            world["v1"],
            world["head"],
        }
    finally:
        store.zk.delete(path, recursive=True)


def test_a_stopped_bookie_leaves_its_ledgers_unchecked_and_a_decommissioned_one_lost(bkctl, world):
    """The only bookie of a ledger (E1W1A1) stops: it still has its cookie, so its copies are unknown, not lost (a
    restart, maintenance); without its cookie (decommissioned) it holds nothing and the entries are lost."""
    harness, bk, broker, store = world["harness"], world["bk"], world["broker"], world["store"]
    name = "public/default/persistent/stopped"
    ledger = bk.create_ledger(
        1, 1, 1, digest_type="crc32c", password=b"", custom_metadata=managed_ledger_metadata(name)
    )
    ledger.add_entries(b"on-one-bookie-%d" % i for i in range(2))
    ledger.close()
    path = broker.managed_ledger(name, [ledger.ledger_id])
    holder = bk.ledger_metadata(ledger.ledger_id).segments[0].bookies[0]
    bookie = next(b for b in harness.bookies if b.bookie_id == holder)
    registry, cookies = BookieRegistry(store), CookieStore(store)
    bookie.stop()
    try:
        wait_for(
            lambda: holder not in {b.bookie_id for b in registry.list(writable=True, readonly=True)},
            f"bookie {holder} to leave the registry",
        )
        code, doc = missing(bkctl, world)
        found = {m["ledgerId"]: m for t in doc["topics"] for m in t["missing"]}
        assert code == 3 and ledger.ledger_id not in found  # 3: the module's other findings
        assert f"ledger {ledger.ledger_id}: not checked, bookie {holder} is not registered" in doc["problems"]
        assert holder in doc["unavailableBookies"]

        cookie, _ = cookies.read(holder)
        cookies.delete(holder)
        try:
            code, doc = missing(bkctl, world)
        finally:
            cookies.write(cookie)
        found = {m["ledgerId"]: m for t in doc["topics"] for m in t["missing"]}
        assert (found[ledger.ledger_id]["reason"], found[ledger.ledger_id]["lostEntries"]) == ("no-data", [[0, 1]])
    finally:
        harness.restart(bookie)
        store.zk.delete(path, recursive=True)


def test_a_ledger_the_confirmation_cannot_check_is_a_problem(world):
    """The first look finds the single-copy ledger's entries gone; when it is judged again its bookie does not
    answer: it is neither reported missing nor dropped, but a problem (exit 1 rather than "nothing missing")."""
    store, bk = world["store"], world["bk"]
    audit = PulsarAudit(ZooKeeperTree(store, store.root), "hierarchical", ZooKeeperTree(store, world["root"]), 0)
    from admin.check.checker import Checker, CheckOptions

    holder = bk.ledger_metadata(world["single"]).segments[0].bookies[0]
    calls: list[set[int]] = []

    def holdings(ledgers):
        calls.append(set(ledgers))
        held, unknown = bk.run(Checker(bk.core, CheckOptions(recheck_delay=0)).holdings(ledgers))
        if len(calls) > 1:  # the confirmation: the bookie fails twice
            held = {key: entries for key, entries in held.items() if key[0] != holder}
            unknown = unknown | {holder}
        return held, unknown

    report = MissingLedgers(audit, holdings, 3600).run()
    assert world["single"] in calls[1] and world["single"] not in {m.ledger_id for m in report.missing}
    assert f"ledger {world['single']}: not checked, bookie {holder} did not answer" in report.problems
    assert holder in report.unavailable


def test_bookies_that_do_not_answer_the_listing_are_read_instead(bkctl, world, monkeypatch):
    """Java bookies with DbLedgerStorage never answer GET_LIST_OF_ENTRIES_OF_LEDGER for a ledger they hold: the
    ends of each bookie's share are read instead, and the same ledgers are found missing, nothing left unchecked."""
    from bookie.client.wire_client import WireBookieClient

    expected = {m["ledgerId"]: m["reason"] for t in missing(bkctl, world)[1]["topics"] for m in t["missing"]}
    monkeypatch.setattr(WireBookieClient, "list_entries", unanswered)
    code, doc = missing(bkctl, world)
    assert code == 3 and (doc["problems"], doc["unavailableBookies"]) == ([], [])
    assert {m["ledgerId"]: m["reason"] for t in doc["topics"] for m in t["missing"]} == expected
    single = next(m for t in doc["topics"] for m in t["missing"] if m["ledgerId"] == world["single"])
    assert single["lostEntries"] == [[0, 2]]  # its bookie answers the reads of entries 0 and 2: no such ledger


def test_a_bookie_whose_reads_fail_too_is_read_once_and_unavailable(bkctl, world, monkeypatch):
    """A bookie that answers neither the listing nor a read (hung): one failed read ends its probing (a read per
    ledger would cost a timeout each), and its ledgers are not checked."""
    from collections import Counter

    from bookie.client.wire_client import WireBookieClient
    from bookie.errors import BKError

    reads: Counter[str] = Counter()

    async def hung(self, ledger_id, entry_id, timeout, what, fence_key=None):
        reads[self.bookie_id] += 1
        raise BKError(f"bookie {self.bookie_id}: read of entry {entry_id} timed out")

    monkeypatch.setattr(WireBookieClient, "list_entries", unanswered)
    monkeypatch.setattr(WireBookieClient, "read_entry", hung)
    code, doc = missing(bkctl, world)
    bookies = {b.bookie_id for b in world["harness"].bookies}
    assert code == 3 and set(doc["unavailableBookies"]) == bookies == set(reads)  # 3: the no-metadata findings
    assert max(reads.values()) <= 2  # once per pass: the first look and the confirmation
    assert f"ledger {world['single']}: not checked, bookie" in "\n".join(doc["problems"])


def test_no_pulsar_metadata_is_refused(bkctl, world, zookeeper):
    result = bkctl("-u", world["harness"].service_uri, "pulsar", "missing", "--pulsar-zk", f"{zookeeper.address}/no")
    assert result.exit_code == 5 and "no Pulsar metadata at /no" in result.stderr

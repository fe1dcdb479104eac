"""Over-replicated ledgers: a bookie frees the copies of ledgers whose ensembles no longer name it, under their
re-replication lock (bookie/server/overreplication.py); on real ZooKeeper, then on real bookie processes."""

import json
import logging
from pathlib import Path

import pytest
from google.protobuf import text_format

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie._proto.data_formats_pb2 import LockDataFormat
from bookie.client import BookKeeper
from bookie.codec.digest import DigestType
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState, Segment
from bookie.meta.underreplication import UnderReplicationManager
from bookie.server.overreplication import remove_over_replicated
from bookie.storage.db import DB_LEDGER_STORAGE

from support.cluster import metric
from support.waiting import wait_for
from support.wire import WireConn

ME = "127.0.0.1:3181"
OTHERS = ("127.0.0.1:3182", "127.0.0.1:3183", "127.0.0.1:3184")
WORKER = "127.0.0.1:3190"  # a replication worker's lock data


def metadata(*ensembles: tuple[str, ...], closed: bool = True) -> LedgerMetadata:
    """A ledger of 3 bookies with a segment per ensemble, 10 entries each."""
    segments = tuple(Segment(10 * i, ensemble) for i, ensemble in enumerate(ensembles))
    md = LedgerMetadata(3, 3, 2, segments, digest_type=DigestType.CRC32C, password=b"pw", ctime=1)
    if closed:
        md = md.with_changes(state=LedgerState.CLOSED, last_entry_id=10 * len(ensembles) - 1, length=1000)
    return md


def test_only_closed_ledgers_that_no_ensemble_names_it_are_removed(cluster):
    ledgers = LedgerManager(cluster)
    ledgers.create(1, metadata(OTHERS))  # recovered away: removed
    ledgers.create(2, metadata((ME, *OTHERS[:2]), OTHERS))  # an older segment still names it: kept
    ledgers.create(3, metadata(OTHERS, closed=False))  # open: its ensemble may name it again: kept
    ledgers.create(5, metadata((ME, *OTHERS[:2])))  # its own: kept
    forgotten: list[int] = []
    # 4 has no metadata: deleted ledgers are the ledger GC's, which runs next
    assert remove_over_replicated(cluster, ME, [1, 2, 3, 4, 5], forgotten.append) == [1]
    assert forgotten == [1]
    assert cluster.exists(UnderReplicationManager(cluster).lock_path(1)) is None  # the lock went with it


def test_the_ledger_is_removed_under_its_re_replication_lock(cluster):
    """BookKeeper's znode, so that its replication workers and ours wait for the bookie (and it for them)."""
    LedgerManager(cluster).create(1, metadata(OTHERS))
    locks = UnderReplicationManager(cluster)
    assert locks.lock_path(1) == f"{cluster.root}/underreplication/locks/urL0000000001"
    held = []

    def forget(ledger_id: int) -> None:
        data, _ = cluster.get(locks.lock_path(ledger_id))
        owner = text_format.Parse(data.decode(), LockDataFormat()).bookieId
        held.append((owner, locks.try_lock(ledger_id, WORKER)))

    assert remove_over_replicated(cluster, ME, [1], forget) == [1]
    assert held == [(ME, False)]  # a worker cannot take it meanwhile


def test_a_ledger_being_re_replicated_is_kept_until_its_lock_is_released(cluster, caplog):
    LedgerManager(cluster).create(1, metadata(OTHERS))
    locks = UnderReplicationManager(cluster)
    assert locks.try_lock(1, WORKER)
    forgotten: list[int] = []
    caplog.set_level(logging.INFO, "bookie.server.overreplication")
    assert remove_over_replicated(cluster, ME, [1], forgotten.append) == [] and forgotten == []
    assert "ledger 1 is over-replicated here but being re-replicated: kept for now" in caplog.text
    assert cluster.exists(locks.lock_path(1)) is not None  # the worker's lock is left alone
    locks.release_lock(1)
    assert remove_over_replicated(cluster, ME, [1], forgotten.append) == [1] and forgotten == [1]


# ---- on bookie processes ----

# GC every half second, over-replicated ledgers looked for every second
FAST_GC = {"gcWaitTime": 500, "gcOverreplicatedLedgerWaitTime": 1000, "logSizeLimit": 256 * 1024}
STORAGES = {"interleaved": {}, "db": {"ledgerStorageClass": DB_LEDGER_STORAGE}}


def payload(name: bytes, i: int) -> bytes:
    return (name + b"-%06d-" % i) * 113  # 1017 bytes


def write(bk, name: bytes, count: int) -> int:
    ledger = bk.create_ledger(3, 3, 2)
    for future in [ledger.add_entry_async(payload(name, i)) for i in range(count)]:
        future.result(30)
    ledger.close()
    return ledger.ledger_id


def stored(bookie, ledger_id: int) -> bool:
    """Whether the bookie answers entry 0 of the ledger (False: it has no such ledger)."""
    with WireConn(bookie.port) as conn:
        status = conn.ask(pb.ReadRequest(ledgerId=ledger_id, entryId=0)).status
    assert status in (pb.EOK, pb.ENOLEDGER), status
    return status == pb.EOK


def log_bytes(bookie) -> int:
    return sum(p.stat().st_size for p in Path(bookie.ledger_dir, "current").glob("*.log"))


def log_lines(bookie, text: str) -> int:
    return sum(text in line for line in bookie.log_path.read_text().splitlines())


def recovered_away(harness, bkctl, **settings):
    """Four bookies; ledgers L (600 entries, 610 KB) then K (5) on three of them, the victim among both ensembles.
    The victim is killed, L alone recovered from it onto the fourth bookie, and the victim started again. Returns the
    victim, L and K."""
    bookies = harness.start(4, **{**FAST_GC, **settings})
    uri = harness.service_uri
    with BookKeeper(uri) as bk:
        moved, kept = write(bk, b"L", 600), write(bk, b"K", 5)
        ensembles = [set(bk.ledger_metadata(lid).segments[0].bookies) for lid in (moved, kept)]
    victim = next(b for b in bookies if b.bookie_id in ensembles[0] & ensembles[1])
    (spare,) = {b.bookie_id for b in bookies} - ensembles[0]
    victim.stop(kill=True)
    result = bkctl("-u", uri, "bookie", "recover", victim.bookie_id, "--ledger", str(moved), "--yes", "-o", "json")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["recovered"] == [moved]
    with BookKeeper(uri) as bk:  # the fourth bookie in its place
        assert set(bk.ledger_metadata(moved).segments[-1].bookies) == ensembles[0] - {victim.bookie_id} | {spare}
    harness.restart(victim)
    return victim, moved, kept


def assert_reads_whole(uri, ledger_id, name, count):
    with BookKeeper(uri) as bk, bk.open_ledger(ledger_id, recovery=False) as reader:
        assert [e.payload for e in reader.iter_entries(0, count - 1)] == [payload(name, i) for i in range(count)]


@pytest.mark.parametrize("storage", STORAGES)
def test_a_recovered_bookie_frees_its_old_copies_and_keeps_what_it_owns(harness, bkctl, storage):
    victim, moved, kept = recovered_away(harness, bkctl, **STORAGES[storage])
    uri = harness.service_uri
    wait_for(lambda: not stored(victim, moved), f"the bookie to remove ledger {moved}")
    assert log_lines(victim, f"ledger {moved} removed: over-replicated, no ensemble of it names this bookie") == 1
    deleted = "bookie_gc_DELETED_LEDGER_TOTAL" if storage == "interleaved" else "bookie_DELETED_LEDGER_TOTAL"
    assert metric(victim, deleted) == 1
    assert log_lines(victim, "gcOverreplicatedLedgerWaitTime is not used") == 0
    # its space back, once the current entry log (which GC leaves alone) is sealed by a restart: the logs of L alone
    # are deleted, a major compaction copies K out of those it shares with L; what is left is K's 5 KB and headers
    victim.stop()
    harness.restart(victim)
    assert not stored(victim, moved)
    result = bkctl("-u", uri, "bookie", "gc", victim.bookie_id, "--major", "--wait", "-o", "json")
    assert result.exit_code == 0 and json.loads(result.stdout)[0]["error"] == "", result.stdout + result.stderr
    assert log_bytes(victim) < 50_000
    assert_reads_whole(uri, moved, b"L", 600)
    # K, whose ensemble names the bookie, stays through later looks
    looks = log_lines(victim, "looking for over-replicated ledgers")
    wait_for(lambda: log_lines(victim, "looking for over-replicated ledgers") >= looks + 2, "two more looks")
    assert stored(victim, kept)


def test_usage_shows_the_copies_a_bookie_no_longer_owns_until_its_gc_looks(harness, bkctl):
    """Before gcOverreplicatedLedgerWaitTime has passed, `bookie usage` names the recovered ledger's copies on the
    victim not-owned, with a reason and their bytes; the ledger it still owns is live."""
    victim, moved, kept = recovered_away(harness, bkctl, gcOverreplicatedLedgerWaitTime=3_600_000)
    result = bkctl("-u", harness.service_uri, "bookie", "usage", victim.bookie_id, "--logs", "100", "-o", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    states = {ledger["ledgerId"]: ledger["state"] for log in doc["logs"] for ledger in log["ledgers"]}
    assert states == {moved: "not-owned", kept: "closed"}
    held = sum(ledger["bytes"] for log in doc["logs"] for ledger in log["ledgers"] if ledger["ledgerId"] == moved)
    reasons = {r["reason"]: r for r in doc["reasons"]}
    assert reasons["not-owned"]["ledgers"] == [moved] and reasons["not-owned"]["bytes"] == held > 600_000
    assert "1 h (gcOverreplicatedLedgerWaitTime)" in reasons["not-owned"]["detail"]
    assert stored(victim, moved)


def test_a_ledger_being_re_replicated_is_not_removed_until_its_lock_goes(harness, bkctl, cluster):
    locks = UnderReplicationManager(cluster)
    bookies = harness.start(4, **FAST_GC)
    uri = harness.service_uri
    with BookKeeper(uri) as bk:
        moved = write(bk, b"L", 100)
        ensemble = bk.ledger_metadata(moved).segments[0].bookies
    victim = next(b for b in bookies if b.bookie_id == ensemble[0])
    victim.stop(kill=True)
    assert bkctl("-u", uri, "bookie", "recover", victim.bookie_id, "--yes").exit_code == 0
    assert locks.try_lock(moved, WORKER)  # as a replication worker holds it while it copies the ledger
    harness.restart(victim)
    kept_for_now = f"ledger {moved} is over-replicated here but being re-replicated: kept for now"
    wait_for(lambda: log_lines(victim, kept_for_now) >= 2, "two looks that find the ledger locked")
    assert stored(victim, moved)
    locks.release_lock(moved)
    wait_for(lambda: not stored(victim, moved), f"the bookie to remove ledger {moved}")
    assert_reads_whole(uri, moved, b"L", 100)

import threading

import pytest

from bookie.codec.digest import DigestType
from bookie.errors import CorruptData, LedgerExists, MetadataVersionConflict, NoSuchLedger
from bookie.meta.idgen import generate_ledger_id
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState, Segment, serialize

ENSEMBLE = ("127.0.0.1:3181", "127.0.0.1:3182", "127.0.0.1:3183")


def open_metadata(**changes) -> LedgerMetadata:
    md = LedgerMetadata(3, 2, 2, (Segment(0, ENSEMBLE),), digest_type=DigestType.CRC32C, password=b"pw", ctime=1)
    return md.with_changes(**changes)


def test_create_read_update_delete(cluster):
    ledgers = LedgerManager(cluster)
    ledgers.create(7, open_metadata())
    md, version = ledgers.read(7)
    assert md == open_metadata() and version == 0
    closed = md.with_changes(state=LedgerState.CLOSED, last_entry_id=9, length=100)
    assert ledgers.write(7, closed, version) == 1
    assert ledgers.read(7) == (closed, 1)
    with pytest.raises(LedgerExists):
        ledgers.create(7, open_metadata())
    ledgers.delete(7, 1)
    with pytest.raises(NoSuchLedger, match="ledger 7 does not exist"):
        ledgers.read(7)
    assert not any(name.isdigit() for name in cluster.zk.get_children(cluster.root))  # parents cleaned up


def test_delete_removes_only_empty_parents(cluster):
    ledgers = LedgerManager(cluster)
    ledgers.create(1, open_metadata())
    ledgers.create(2, open_metadata())
    ledgers.delete(1)
    assert cluster.zk.exists(f"{cluster.root}/00/0000")
    ledgers.delete(2)
    assert not cluster.zk.exists(f"{cluster.root}/00")


def test_compare_and_set_loses_against_a_concurrent_update(cluster):
    ledgers = LedgerManager(cluster)
    ledgers.create(3, open_metadata())
    md, version = ledgers.read(3)
    ledgers.write(3, md.with_changes(state=LedgerState.IN_RECOVERY), version)
    with pytest.raises(MetadataVersionConflict):
        ledgers.write(3, md.with_changes(state=LedgerState.CLOSED), version)
    assert ledgers.read(3)[0].state == LedgerState.IN_RECOVERY


def test_missing_ledger_errors(cluster):
    ledgers = LedgerManager(cluster)
    with pytest.raises(NoSuchLedger):
        ledgers.write(99, open_metadata(), 0)
    with pytest.raises(NoSuchLedger):
        ledgers.delete(99)


def test_iteration_walks_short_then_long_tree_in_order(cluster):
    ledgers = LedgerManager(cluster)
    ids = [0, 1, 9999, 10000, 123456789, 2147483646, 2147483647, 2**32 + 5, 2**62]
    for ledger_id in reversed(ids):
        ledgers.create(ledger_id, open_metadata(c_token=ledger_id))
    cluster.zk.create(f"{cluster.root}/idgen/ID-0000000001", makepath=True)  # reserved names are skipped
    assert list(ledgers.iter_ledger_ids()) == ids
    assert [(i, md.c_token) for i, md in ledgers.iter_ledgers()] == [(i, i) for i in ids]


def test_iteration_reads_many_ledgers_pipelined(cluster):
    ledgers = LedgerManager(cluster)
    cluster.zk.ensure_path(f"{cluster.root}/00/0000")
    writes = [cluster.zk.create_async(ledgers.path(i), serialize(open_metadata(c_token=i))) for i in range(1200)]
    for write in writes:
        write.get(timeout=10)
    seen = list(ledgers.iter_ledgers())
    assert [i for i, _ in seen] == list(range(1200))
    assert all(md.c_token == i for i, md in seen)


def test_id_generator_is_unique_and_sequential(cluster):
    ids = [generate_ledger_id(cluster) for _ in range(5)]
    assert ids == sorted(ids) and len(set(ids)) == 5 and ids[0] >= 0
    assert not cluster.zk.get_children(f"{cluster.root}/idgen")  # the ephemeral nodes are deleted


def test_id_generator_is_unique_across_threads(cluster):
    found: list[int] = []

    def take():
        found.extend(generate_ledger_id(cluster) for _ in range(25))

    threads = [threading.Thread(target=take) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(found)) == 100


def test_long_id_generator(cluster):
    cluster.zk.create(f"{cluster.root}/idgen-long")
    first, second = generate_ledger_id(cluster), generate_ledger_id(cluster)
    assert first >> 32 == 1 and second == first + 1
    assert cluster.zk.get_children(f"{cluster.root}/idgen-long") == ["HOB-0000000001"]
    ledgers = LedgerManager(cluster)
    ledgers.create(first, open_metadata())
    assert ledgers.path(first).count("/") == cluster.root.count("/") + 5  # long form
    assert list(ledgers.iter_ledger_ids()) == [first]


def test_long_hierarchical_manager_uses_long_paths_for_small_ids(cluster):
    ledgers = LedgerManager(cluster, manager="longhierarchical")
    ledgers.create(1, open_metadata())
    assert cluster.zk.exists(f"{cluster.root}/000/0000/0000/0000/L0001")
    assert list(ledgers.iter_ledger_ids()) == [1]


def test_errors_name_their_ledger_by_its_id(cluster):
    """Callers tell ledgers apart by the error's ledger_id, never by matching a path in its text."""
    ledgers = LedgerManager(cluster)
    for ledger_id in (1, 10, 100):
        ledgers.create(ledger_id, open_metadata())
    cluster.zk.set(ledgers.path(10), b"BookieMetadataFormatVersion\t3\ngarbage")
    corrupt: list[CorruptData] = []
    assert [lid for lid, _ in ledgers.iter_ledgers(on_corrupt=corrupt.append)] == [1, 100]
    assert [exc.ledger_id for exc in corrupt] == [10] and ledgers.path(10) in str(corrupt[0])
    with pytest.raises(CorruptData) as unreadable:
        ledgers.read(10)
    assert unreadable.value.ledger_id == 10
    with pytest.raises(NoSuchLedger) as missing:
        ledgers.read(99)
    assert missing.value.ledger_id == 99

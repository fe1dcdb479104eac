from bookie.meta.store import MetadataStore
from bookie.meta.underreplication import UnderReplicationManager, marker_path
from bookie.meta.uri import parse_service_uri

from support.cluster import expire_session
from support.waiting import wait_for


def test_mark_merge_list_unmark(cluster):
    ur = UnderReplicationManager(cluster)
    assert ur.count() == 0 and ur.get(1) is None
    ur.mark(1, ["b1:3181"], now_ms=1000)
    ur.mark(2**40 + 3, ["b2:3181"], now_ms=2000)
    merged = ur.mark(1, ["b2:3181", "b1:3181"], now_ms=3000)
    assert merged.replicas == ("b1:3181", "b2:3181") and merged.ctime == 1000  # first mark time kept
    assert cluster.zk.get(marker_path(ur.root, 1))[0] == b'replica: "b1:3181"\nreplica: "b2:3181"\nctime: 1000\n'
    assert cluster.zk.get(f"{ur.root}/LAYOUT")[0] == b'type: "BASIC"\nversion: 1\n'
    assert list(ur.iter_ledger_ids()) == [1, 2**40 + 3]
    assert [m.ledger_id for m in ur.iter_marked()] == [1, 2**40 + 3]
    assert ur.count() == 2
    ur.unmark(1)
    ur.unmark(2**40 + 3)
    ur.unmark(5)  # not marked: nothing to do
    assert ur.count() == 0
    assert cluster.zk.get_children(f"{ur.root}/ledgers") == []  # empty parents removed


def test_lock_is_exclusive_and_dies_with_its_session(cluster, service_uri):
    with MetadataStore(parse_service_uri(service_uri)) as worker:
        assert UnderReplicationManager(worker).try_lock(7, "worker-1")
        other = UnderReplicationManager(cluster)
        assert not other.try_lock(7, "worker-2")
        assert cluster.zk.get(other.lock_path(7))[0] == b'bookieId: "worker-1"\n'
        expire_session(worker)
        wait_for(lambda: other.try_lock(7, "worker-2"), "the expired lock to be free")
        other.release_lock(7)
        assert not cluster.zk.exists(other.lock_path(7))

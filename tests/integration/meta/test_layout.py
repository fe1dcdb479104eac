import pytest

from bookie.errors import ClusterAlreadyInitialised, ClusterNotInitialised, UnsupportedLayout
from bookie.meta.layout import init_cluster, read_instance_id, read_layout
from bookie.meta.store import MetadataStore
from bookie.meta.uri import parse_service_uri


def snapshot(store, path):
    """Every znode under ``path`` with its data and modification zxid."""
    data, stat = store.zk.get(path)
    nodes = {path: (data, stat.mzxid)}
    for child in store.zk.get_children(path):
        nodes.update(snapshot(store, f"{path}/{child}"))
    return nodes


def test_init_creates_the_spec_znodes_and_bytes(store):
    instance_id = init_cluster(store)
    root = store.root
    nodes = {path: data for path, (data, _) in snapshot(store, root).items()}
    assert nodes == {
        root: b"",
        f"{root}/available": b"",
        f"{root}/available/readonly": b"",
        f"{root}/INSTANCEID": instance_id.encode(),
        f"{root}/LAYOUT": b"2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1",
    }
    assert len(instance_id) == 36 and instance_id.count("-") == 4
    for path in nodes:
        assert store.zk.exists(path).ephemeralOwner == 0  # PERSISTENT
    assert read_instance_id(store) == instance_id
    assert read_layout(store).manager == "hierarchical"


def test_second_init_changes_nothing(cluster):
    before = snapshot(cluster, cluster.root)
    with pytest.raises(ClusterAlreadyInitialised, match="already initialised"):
        init_cluster(cluster)
    assert snapshot(cluster, cluster.root) == before


def test_init_under_an_existing_empty_root(store):
    store.zk.ensure_path(store.root)
    init_cluster(store)
    assert read_layout(store).format_version == 2


def test_long_hierarchical_layout(zookeeper):
    uri = parse_service_uri(f"zk+longhierarchical://{zookeeper.address}/lh/ledgers")
    with MetadataStore(uri) as store:
        init_cluster(store, "longhierarchical")
        assert store.zk.get("/lh/ledgers/LAYOUT")[0] == (
            b"2\norg.apache.bookkeeper.meta.LongHierarchicalLedgerManagerFactory:1"
        )
        assert read_layout(store).manager == "longhierarchical"


def test_no_cluster(store):
    with pytest.raises(ClusterNotInitialised, match="LAYOUT does not exist"):
        read_layout(store)


def test_unsupported_manager_is_refused(store):
    store.zk.create(f"{store.root}/LAYOUT", b"2\norg.apache.bookkeeper.meta.FlatLedgerManagerFactory:1", makepath=True)
    with pytest.raises(UnsupportedLayout, match="FlatLedgerManagerFactory is not supported"):
        read_layout(store)

import json


def test_init_then_info(bkctl, service_uri, store):
    result = bkctl("-u", service_uri, "cluster", "init")
    assert result.exit_code == 0, result.stderr
    instance_id = store.zk.get(f"{store.root}/INSTANCEID")[0].decode()
    assert result.stdout == f"cluster {service_uri} initialised (instance id {instance_id})\n"

    info = bkctl("-u", service_uri, "cluster", "info", "-o", "json")
    assert info.exit_code == 0
    assert json.loads(info.stdout) == {
        "serviceUri": service_uri,
        "instanceId": instance_id,
        "layout": {
            "formatVersion": 2,
            "manager": "hierarchical",
            "managerFactory": "org.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory",
            "managerVersion": 1,
        },
        "bookies": {"writable": 0, "readonly": 0, "missing": 0, "missingIds": []},
        "underReplicatedLedgers": 0,
    }


def test_info_table_counts_bookies_and_markers(bkctl, service_uri, cluster):
    from bookie.meta.registration import READONLY, BookieRegistry, BookieServiceInfo
    from bookie.meta.underreplication import UnderReplicationManager

    registry = BookieRegistry(cluster)
    registry.register("127.0.0.1:3181", BookieServiceInfo.for_bookie("127.0.0.1", 3181))
    registry.register("127.0.0.1:3182", BookieServiceInfo.for_bookie("127.0.0.1", 3182), state=READONLY)
    UnderReplicationManager(cluster).mark(4, ["127.0.0.1:3183"])
    result = bkctl("-u", service_uri, "cluster", "info")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == f"Service URI:              {service_uri}"
    assert lines[2] == (
        "Layout:                   hierarchical "
        "(format 2, org.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1)"
    )
    assert lines[3:] == [
        "Writable bookies:         1",
        "Read-only bookies:        1",
        "Missing bookies:          0",
        "Under-replicated ledgers: 1",
    ]


def test_second_init_exits_1_and_changes_nothing(bkctl, service_uri, cluster):
    before = cluster.zk.get(f"{cluster.root}/INSTANCEID")
    result = bkctl("-u", service_uri, "cluster", "init")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        f"error: cluster at {service_uri} is already initialised ({cluster.root}/INSTANCEID exists)\n"
    )
    assert cluster.zk.get(f"{cluster.root}/INSTANCEID") == before


def test_init_dry_run_creates_nothing(bkctl, service_uri, store):
    result = bkctl("-u", service_uri, "cluster", "init", "--dry-run")
    assert result.exit_code == 0
    root = store.root
    assert result.stdout.splitlines() == [
        f"would initialise cluster at {service_uri} (hierarchical ledger manager), creating:",
        f"  {root}",
        f"  {root}/available",
        f"  {root}/available/readonly",
        f"  {root}/INSTANCEID",
        f"  {root}/LAYOUT",
    ]
    assert not store.zk.exists(root)
    planned = json.loads(bkctl("-u", service_uri, "cluster", "init", "--dry-run", "-o", "json").stdout)
    assert planned["dryRun"] is True and planned["instanceId"] is None and planned["created"][-1] == f"{root}/LAYOUT"
    assert planned["layout"] == {  # the object cluster info gives
        "formatVersion": 2,
        "manager": "hierarchical",
        "managerFactory": "org.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory",
        "managerVersion": 1,
    }
    assert not store.zk.exists(root)


def test_info_of_a_missing_cluster_exits_5(bkctl, service_uri, store):
    result = bkctl("-u", service_uri, "cluster", "info")
    assert result.exit_code == 5
    assert result.stderr.count("\n") == 1 and "no BookKeeper cluster at" in result.stderr

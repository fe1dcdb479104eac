"""cluster format (metaformat) and cluster nuke (nukeexistingcluster) on a real ZooKeeper: what goes, what stays,
and the refusals that change nothing."""

import json

from bookie.meta.cookies import Cookie, CookieStore
from bookie.meta.layout import read_instance_id
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.registration import BookieRegistry, BookieServiceInfo
from bookie.meta.underreplication import UnderReplicationManager

from support.checks import write_ledgers


def populated(cluster, harness) -> tuple[list[int], str]:
    """Two ledgers, a cookie and an under-replication marker; the bookie stopped again. Returns ledgers, instance."""
    (bookie,) = harness.start(1)
    ledgers = write_ledgers(harness.service_uri, 2, quorum=(1, 1, 1))
    bookie.stop()
    UnderReplicationManager(cluster).mark(ledgers[0], ["127.0.0.1:1"])
    CookieStore(cluster).write(Cookie("127.0.0.1:2", ("/j",), ("/l",), read_instance_id(cluster)))
    return ledgers, read_instance_id(cluster)


def tree(cluster) -> set[str]:
    found, todo = set(), [cluster.root]
    while todo:
        path = todo.pop()
        found.add(path)
        todo += [f"{path}/{c}" for c in cluster.zk.get_children(path)]
    return found


def test_format_deletes_ledgers_cookies_markers_and_renews_the_instance_id(bkctl, cluster, harness):
    uri = harness.service_uri
    ledgers, old_id = populated(cluster, harness)
    before = tree(cluster)
    dry = bkctl("-u", uri, "cluster", "format", "--dry-run", "-o", "json")
    assert dry.exit_code == 0, dry.stderr
    plan = json.loads(dry.stdout)
    assert (plan["ledgers"], len(plan["cookies"]), plan["oldInstanceId"]) == (2, 2, old_id)
    assert f"{cluster.root}/cookies" in plan["deleted"] and f"{cluster.root}/idgen" in plan["deleted"]
    assert tree(cluster) == before  # the dry run changed nothing
    refused = bkctl("-u", uri, "cluster", "format")
    assert refused.exit_code == 2 and "without --yes" in refused.stderr

    done = bkctl("-u", uri, "cluster", "format", "--yes")
    assert done.exit_code == 0, done.stderr
    new_id = read_instance_id(cluster)
    assert new_id != old_id and done.stdout == (
        f"deleted: 2 ledgers and 2 cookies; cluster {uri} formatted (instance id {new_id})\n"
    )
    assert list(LedgerManager(cluster).iter_ledger_ids()) == [] and CookieStore(cluster).list() == []
    assert UnderReplicationManager(cluster).get(ledgers[0]) is None
    kept = {f"{cluster.root}/{n}" for n in ("available", "available/readonly", "LAYOUT", "INSTANCEID")}
    assert kept <= tree(cluster)
    assert json.loads(bkctl("-u", uri, "cluster", "info", "-o", "json").stdout)["instanceId"] == new_id


def test_format_and_nuke_refuse_while_a_bookie_is_registered(bkctl, cluster, service_uri):
    BookieRegistry(cluster).register("127.0.0.1:3181", BookieServiceInfo.for_bookie("127.0.0.1", 3181))
    before = tree(cluster)
    for args in (["format", "--yes"], ["nuke", "--instance-id", read_instance_id(cluster), "--yes"]):
        result = bkctl("-u", service_uri, "cluster", *args)
        assert result.exit_code == 3
        assert "1 bookie(s) registered (127.0.0.1:3181); stop every bookie of the cluster first" in result.stderr
    assert tree(cluster) == before


def test_nuke_checks_the_instance_id_and_unexpected_znodes_then_deletes_the_root(bkctl, cluster, harness):
    uri = harness.service_uri
    _, instance_id = populated(cluster, harness)
    before = tree(cluster)
    wrong = bkctl("-u", uri, "cluster", "nuke", "--instance-id", "not-it", "--yes")
    assert wrong.exit_code == 3 and f"is not the one of the cluster at {uri} ({instance_id}): nothing deleted" in (
        wrong.stderr
    )
    cluster.zk.create(f"{cluster.root}/mine", b"")
    stranger = bkctl("-u", uri, "cluster", "nuke", "--instance-id", instance_id, "--yes")
    assert stranger.exit_code == 3 and f"{cluster.root}/mine is neither BookKeeper's nor a ledger's" in stranger.stderr
    assert tree(cluster) == before | {f"{cluster.root}/mine"}
    cluster.zk.delete(f"{cluster.root}/mine")

    dry = bkctl("-u", uri, "cluster", "nuke", "--instance-id", instance_id, "--dry-run")
    assert dry.exit_code == 0 and dry.stdout == f"would delete {cluster.root} with 2 ledgers and 2 cookies (dry run)\n"
    done = bkctl("-u", uri, "cluster", "nuke", "--instance-id", instance_id, "--yes", "-o", "json")
    assert done.exit_code == 0, done.stderr
    assert json.loads(done.stdout)["deleted"] == [cluster.root]
    assert cluster.zk.exists(cluster.root) is None
    again = bkctl("-u", uri, "cluster", "nuke", "--instance-id", instance_id, "--yes")
    assert again.exit_code == 5 and "does not exist" in again.stderr
    assert bkctl("-u", uri, "cluster", "init").exit_code == 0  # a new cluster on the same root

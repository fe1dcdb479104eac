"""bkctl bookies racks get|set|delete: Pulsar's /bookies, as its broker writes it."""

import json

from bookie.meta.racks import mapping_path, read_mapping
from bookie.meta.registration import READONLY, BookieRegistry, BookieServiceInfo


def register(cluster):
    registry = BookieRegistry(cluster)
    registry.register("127.0.0.1:3181", BookieServiceInfo.for_bookie("127.0.0.1", 3181, rack="/published"))
    registry.register("127.0.0.1:3182", BookieServiceInfo.for_bookie("127.0.0.1", 3182), state=READONLY)
    registry.register("bk-3", BookieServiceInfo.for_bookie("127.0.0.1", 3183))  # a bookie id that is no address


def test_set_get_delete(bkctl, service_uri, cluster):
    register(cluster)
    assert bkctl("-u", service_uri, "bookies", "racks", "get").stdout.splitlines() == [
        "BOOKIE           RACK            HOSTNAME   GROUP    SOURCE",
        "127.0.0.1:3181   /published      <none>     <none>   registration",
        "127.0.0.1:3182   /default-rack   <none>     <none>   default",
        "bk-3             /default-rack   <none>     <none>   default",
    ]
    result = bkctl("-u", service_uri, "bookies", "racks", "set", "127.0.0.1:3181", "--rack", "/rack-a")
    assert (result.exit_code, result.stdout) == (0, "bookie/127.0.0.1:3181 rack set: /rack-a (group default)\n")
    assert "bkctl cluster repair-placement" in result.stderr
    bkctl(
        "-u",
        service_uri,
        "bookies",
        "racks",
        "set",
        "127.0.0.1:3182",
        "--rack",
        "rack-b",
        "--group",
        "g2",
        "--hostname",
        "bk2.example",
    )
    # the mapping names bk-3 by the host:port it publishes, as Pulsar's operators write it
    cluster.zk.set(mapping_path(cluster), read_mapping(cluster)[0].updated("g2", "127.0.0.1:3183", "/rack-c").encode())
    result = bkctl("-u", service_uri, "bookies", "racks", "set", "10.9.9.9:3181", "--rack", "/rack-z")
    assert result.exit_code == 0
    assert result.stderr.startswith("warning: bookie 10.9.9.9:3181 is not registered")
    assert cluster.get(mapping_path(cluster))[0] == (
        b'{"default":{"10.9.9.9:3181":{"rack":"/rack-z"},"127.0.0.1:3181":{"rack":"/rack-a"}},'
        b'"g2":{"127.0.0.1:3182":{"rack":"rack-b","hostname":"bk2.example"},"127.0.0.1:3183":{"rack":"/rack-c"}}}'
    )
    assert json.loads(bkctl("-u", service_uri, "bookies", "racks", "get", "-o", "json").stdout) == [
        {
            "bookieId": "127.0.0.1:3181",
            "address": "127.0.0.1:3181",
            "rack": "/rack-a",
            "hostname": None,
            "group": "default",
            "source": "mapping",
            "registered": True,
        },
        {
            "bookieId": "127.0.0.1:3182",
            "address": "127.0.0.1:3182",
            "rack": "/rack-b",
            "hostname": "bk2.example",
            "group": "g2",
            "source": "mapping",
            "registered": True,
        },
        {
            "bookieId": "bk-3",
            "address": "127.0.0.1:3183",
            "rack": "/rack-c",
            "hostname": None,
            "group": "g2",
            "source": "mapping",
            "registered": True,
        },
        {
            "bookieId": "10.9.9.9:3181",
            "address": "10.9.9.9:3181",
            "rack": "/rack-z",
            "hostname": None,
            "group": "default",
            "source": "mapping",
            "registered": False,
        },
    ]
    # bookies list, writers and cluster check see the same racks
    listed = json.loads(bkctl("-u", service_uri, "bookies", "list", "--all", "-o", "json").stdout)
    assert {d["bookieId"]: d["rack"] for d in listed} == {
        "127.0.0.1:3181": "/rack-a",
        "127.0.0.1:3182": "/rack-b",
        "bk-3": "/rack-c",
    }
    # bk-3 named by its address is the registered bookie: no warning
    result = bkctl("-u", service_uri, "bookies", "racks", "set", "127.0.0.1:3183", "--rack", "/rack-c", "-g", "g2")
    assert result.stderr.startswith("earlier ledgers keep their ensembles")
    # setting bk-3 again updates its entry under 127.0.0.1:3183, and moves it to the group asked
    bkctl("-u", service_uri, "bookies", "racks", "set", "bk-3", "--rack", "/rack-d")
    mapping = read_mapping(cluster)[0]
    assert mapping.get("127.0.0.1:3183").group == "default" and mapping.get("bk-3") is None
    result = bkctl("-u", service_uri, "bookies", "racks", "delete", "bk-3", "--dry-run")
    assert result.stdout == "bookie/bk-3 rack would be deleted (dry run)\n"
    assert read_mapping(cluster)[0] == mapping
    assert bkctl("-u", service_uri, "bookies", "racks", "delete", "bk-3").stdout == "bookie/bk-3 rack deleted\n"
    for bookie in ("127.0.0.1:3182", "127.0.0.1:3181", "10.9.9.9:3181"):
        bkctl("-u", service_uri, "bookies", "racks", "delete", bookie)
    assert cluster.get(mapping_path(cluster))[0] == b"{}"  # every group gone with its last bookie
    result = bkctl("-u", service_uri, "bookies", "racks", "get", "127.0.0.1:3181")
    assert result.stdout.splitlines()[1].split() == ["127.0.0.1:3181", "/published", "<none>", "<none>", "registration"]


def test_dry_run_writes_nothing(bkctl, service_uri, cluster):
    register(cluster)
    result = bkctl(
        "-u", service_uri, "bookies", "racks", "set", "127.0.0.1:3181", "--rack", "/r", "--dry-run", "-o", "json"
    )
    assert json.loads(result.stdout)["dryRun"] is True
    assert cluster.exists(mapping_path(cluster)) is None


def test_bad_racks_and_unknown_bookies(bkctl, service_uri, cluster):
    register(cluster)
    for rack, why in (("/", "give a rack name"), ("/a/b/c", "no more '/'")):
        result = bkctl("-u", service_uri, "bookies", "racks", "set", "127.0.0.1:3181", "--rack", rack)
        assert result.exit_code == 2 and result.stderr.startswith(f"error: invalid rack {rack!r}: ")
        assert why in result.stderr
    bkctl("-u", service_uri, "bookies", "racks", "set", "127.0.0.1:3181", "--rack", "/rack-a")
    result = bkctl("-u", service_uri, "bookies", "racks", "set", "127.0.0.1:3182", "--rack", "/region/rack")
    assert result.exit_code == 2 and "of the form /rack" in result.stderr
    result = bkctl("-u", service_uri, "bookies", "racks", "set", "127.0.0.1:3181", "--rack", "/region/rack")
    assert result.exit_code == 0  # its own entry is no other rack of the mapping
    result = bkctl("-u", service_uri, "bookies", "racks", "delete", "127.0.0.1:3182")
    assert (result.exit_code, result.stderr) == (5, "error: bookie 127.0.0.1:3182 is not in the rack mapping\n")
    result = bkctl("-u", service_uri, "bookies", "racks", "get", "nobody:1")
    assert (result.exit_code, result.stderr) == (
        5,
        "error: no bookie nobody:1: not registered and not in the rack mapping\n",
    )
    result = bkctl("-u", service_uri, "bookies", "racks", "set", "bad id!", "--rack", "/r")
    assert result.exit_code == 2


def test_a_concurrent_writer_is_not_overwritten(cluster, monkeypatch):
    """Versioned read-modify-write: a change made between the read and the write is kept, the write retried."""
    from bookie.meta import racks

    real = racks.read_mapping
    calls = []

    def racing(store):
        found = real(store)
        if not calls:
            other = found[0].updated("default", "other:1", "/r9")
            if found[1] is None:
                store.zk.create(mapping_path(store), other.encode(), makepath=True)
            else:
                store.zk.set(mapping_path(store), other.encode())
        calls.append(1)
        return found

    monkeypatch.setattr(racks, "read_mapping", racing)
    written = racks.update_mapping(cluster, lambda m: m.updated("default", "mine:1", "/r1"))
    assert len(calls) == 2 and written.addresses() == ["mine:1", "other:1"]
    assert real(cluster)[0] == written


def test_a_damaged_mapping_is_reported_by_racks_and_ignored_by_placement(bkctl, service_uri, cluster):
    """Writers and checks must go on with the registrations' racks; `racks get` says what is wrong (exit 1)."""
    register(cluster)
    cluster.zk.create(mapping_path(cluster), b'{"default": [1]}', makepath=True)
    result = bkctl("-u", service_uri, "bookies", "racks", "get")
    assert (result.exit_code, result.stderr) == (
        1,
        f"error: {mapping_path(cluster)}: group 'default' is not an object of bookies\n",
    )
    result = bkctl("-u", service_uri, "bookies", "list", "-o", "json")
    assert [d["rack"] for d in json.loads(result.stdout)] == ["/published", "/default-rack"]
    assert "rack mapping ignored" in result.stderr

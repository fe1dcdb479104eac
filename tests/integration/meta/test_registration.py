import threading
import time

import pytest

from bookie.errors import NotFound, OperationTimeout
from bookie.meta.registration import READONLY, WRITABLE, BookieRegistry, BookieServiceInfo
from bookie.meta.store import MetadataStore

from support.cluster import expire_session
from support.waiting import wait_for


def info(port: int, rack: str | None = None) -> BookieServiceInfo:
    return BookieServiceInfo.for_bookie("127.0.0.1", port, **({"rack": rack} if rack else {}))


def test_register_list_and_move_to_readonly(cluster):
    registry = BookieRegistry(cluster)
    registry.register("127.0.0.1:3181", info(3181, "/rack-a"))
    registry.register("127.0.0.1:3182", info(3182))
    assert [b.bookie_id for b in registry.list()] == ["127.0.0.1:3181", "127.0.0.1:3182"]  # "readonly" skipped
    assert cluster.zk.exists(f"{cluster.root}/available/127.0.0.1:3181").ephemeralOwner != 0
    registry.register("127.0.0.1:3182", info(3182), state=READONLY)
    assert [b.bookie_id for b in registry.list()] == ["127.0.0.1:3181"]
    assert [(b.bookie_id, b.state) for b in registry.list(writable=False, readonly=True)] == [
        ("127.0.0.1:3182", READONLY)
    ]
    bookie = registry.get("127.0.0.1:3181")
    assert (bookie.state, bookie.rack, bookie.address()) == (WRITABLE, "/rack-a", ("127.0.0.1", 3181))
    assert registry.get("127.0.0.1:3182").rack == "/default-rack"
    with pytest.raises(NotFound, match="not registered"):
        registry.get("127.0.0.1:9999")


def test_bookie_without_registration_data(cluster):
    cluster.zk.create(f"{cluster.root}/available/10.0.0.1:3181", b"", ephemeral=True)
    (bookie,) = BookieRegistry(cluster).list()
    assert bookie.info is None and bookie.address() == ("10.0.0.1", 3181)


def test_registration_goes_away_with_the_session(cluster, service_uri):
    from bookie.meta.uri import parse_service_uri

    with MetadataStore(parse_service_uri(service_uri)) as bookie_session:
        BookieRegistry(bookie_session).register("127.0.0.1:3181", info(3181))
        assert BookieRegistry(cluster).list()
        expire_session(bookie_session)
        wait_for(lambda: not BookieRegistry(cluster).list(), "the expired registration to disappear")


def test_waits_out_a_stale_node_of_an_earlier_session(cluster, service_uri):
    from bookie.meta.uri import parse_service_uri

    earlier = MetadataStore(parse_service_uri(service_uri))
    BookieRegistry(earlier).register("127.0.0.1:3181", info(3181))
    threading.Timer(1.0, earlier.close).start()  # the earlier session ends a second later
    started = time.monotonic()
    BookieRegistry(cluster).register("127.0.0.1:3181", info(3181), stale_timeout=15)
    assert time.monotonic() - started >= 0.9
    owner = cluster.zk.exists(f"{cluster.root}/available/127.0.0.1:3181").ephemeralOwner
    assert owner == cluster.zk.client_id[0]


def test_a_live_stale_node_times_out(cluster, service_uri):
    from bookie.meta.uri import parse_service_uri

    with MetadataStore(parse_service_uri(service_uri)) as other:
        BookieRegistry(other).register("127.0.0.1:3181", info(3181))
        with pytest.raises(OperationTimeout, match=r"did not expire within 0\.5 s"):
            BookieRegistry(cluster).register("127.0.0.1:3181", info(3181), stale_timeout=0.5)


def test_only_a_node_of_its_own_session_is_removed(cluster, service_uri):
    from bookie.meta.uri import parse_service_uri

    def nodes():
        return [(b.bookie_id, b.state) for b in BookieRegistry(cluster).list(writable=True, readonly=True)]

    with MetadataStore(parse_service_uri(service_uri)) as live:
        BookieRegistry(live).register("127.0.0.1:3181", info(3181), state=READONLY)
        other = BookieRegistry(cluster)  # another process with the same bookie id
        other.unregister("127.0.0.1:3181")
        assert nodes() == [("127.0.0.1:3181", READONLY)]
        other.register("127.0.0.1:3181", info(3181), state=WRITABLE)  # moving state removes only its own node
        assert nodes() == [("127.0.0.1:3181", WRITABLE), ("127.0.0.1:3181", READONLY)]
        BookieRegistry(live).unregister("127.0.0.1:3181")
        assert nodes() == [("127.0.0.1:3181", WRITABLE)]


def test_waits_out_a_stale_node_across_a_zookeeper_restart(tmp_path):
    """A bookie restarted while ZooKeeper comes and goes still registers once its predecessor's session expires.
    On reconnection kazoo re-arms an exists-watch, which ZooKeeper answers at once with NodeCreated for a node that
    exists; a waiter that only listened for NodeDeleted then never heard of the expiry, and the bookie gave up
    after 30 s (seen in the fault suite)."""
    import os
    import signal
    import subprocess
    import sys

    from support.cluster import OwnZooKeeper

    with OwnZooKeeper(tmp_path) as zk:
        earlier = subprocess.Popen(  # a bookie killed -9: its registration stays until its session expires
            [
                sys.executable,
                "-c",
                (
                    "import sys, time\n"
                    "from bookie.meta.registration import BookieRegistry, BookieServiceInfo\n"
                    "from bookie.meta.store import MetadataStore\n"
                    "from bookie.meta.uri import parse_service_uri\n"
                    f"store = MetadataStore(parse_service_uri({zk.uri!r}), session_timeout=4)\n"
                    "info = BookieServiceInfo.for_bookie('127.0.0.1', 3181)\n"
                    "BookieRegistry(store).register('127.0.0.1:3181', info)\n"
                    "print('registered', flush=True)\n"
                    "time.sleep(600)\n"
                ),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert earlier.stdout.readline() == "registered\n"
        os.kill(earlier.pid, signal.SIGKILL)
        earlier.wait()
        with zk.store(session_timeout=15) as store:
            outcome = []
            waiter = threading.Thread(target=lambda: outcome.append(_register(store, stale_timeout=25)))
            waiter.start()
            stale = "/ledgers/available/127.0.0.1:3181"
            # kazoo records a watch once ZooKeeper has set it: the waiter is watching the stale node
            wait_for(lambda: store.zk._data_watchers.get(stale), "the waiter to watch the stale node")
            zk.kill()
            zk.start()  # ZooKeeper restores the dead session, and expires it 4 s later
            waiter.join(40)
            assert outcome == [None]
            owner = store.zk.exists(stale).ephemeralOwner
            assert owner == store.zk.client_id[0]


def _register(store, stale_timeout):
    try:
        BookieRegistry(store).register("127.0.0.1:3181", info(3181), stale_timeout=stale_timeout)
    except Exception as exc:  # noqa: BLE001 - reported through the outcome list, which the test asserts on
        return exc
    return None

"""The embedded ZooKeeper as the sandbox and the tests start it."""

from bookie.local.process import free_port, stop_process_group
from bookie.local.zookeeper import EmbeddedZooKeeper, serving
from bookie.meta.ensemble import four_letters
from bookie.meta.store import MetadataStore
from bookie.meta.uri import parse_service_uri


def test_start_returns_when_zookeeper_serves_clients(tmp_path):
    """`ruok` answers while the server still loads its database and turns clients away; a `sandbox start` right
    after `stop` then failed to connect (under load: its client gave up after three refusals)."""
    zk = EmbeddedZooKeeper(tmp_path, free_port())
    for attempt in range(2):  # a first start, then a restart on the data (with a database to load)
        pid = zk.start()
        try:
            assert serving("127.0.0.1", zk.port), f"start {attempt} returned before ZooKeeper served clients"
            with MetadataStore(parse_service_uri(f"zk://{zk.address}/ledgers")) as store:
                store.zk.ensure_path(f"/ledgers/n{attempt}")
        finally:
            stop_process_group(pid)


def test_the_tests_zookeeper_grants_long_sessions_up_to_its_maximum(zookeeper):
    """A client's session timeout is its own, within the server's bounds (``cons`` says what it got): the tests'
    ZooKeeper lets a killed process hold its lock or registration for 90 s, and caps a longer ask at 120 s."""
    uri = parse_service_uri(f"zk://{zookeeper.address}/ledgers")
    for asked, granted in ((90, 90_000), (300, 120_000)):
        with MetadataStore(uri, session_timeout=asked) as store:
            connections = four_letters("127.0.0.1", zookeeper.port, b"cons", 5.0).decode()
            [line] = [line for line in connections.splitlines() if f"sid=0x{store.session_id:x}," in line]
            assert f",to={granted}," in line, line

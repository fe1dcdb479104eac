"""The metadata store's ZooKeeper session: its id, and what a closed store answers."""

import pytest

from bookie.errors import ServiceUnavailable
from bookie.meta.store import MetadataStore
from bookie.meta.uri import parse_service_uri

from support.cluster import OwnZooKeeper
from support.waiting import wait_for


def test_session_id_owns_the_ephemeral_znodes_and_is_none_while_disconnected(tmp_path):
    """Registration compares a znode's ephemeralOwner with the session id; without a connection there is no
    session id to compare, which must read as "not ours" rather than fail (kazoo's client_id is None then)."""
    with OwnZooKeeper(tmp_path) as zk, zk.store(session_timeout=4) as store:
        store.zk.create("/ledgers/owned", b"", ephemeral=True)
        owner = store.exists("/ledgers/owned").ephemeralOwner
        assert owner != 0 and store.session_id == owner
        zk.kill()
        wait_for(lambda: store.session_id is None, "the store to notice that ZooKeeper is gone")


def test_a_closed_store_answers_service_unavailable(service_uri):
    store = MetadataStore(parse_service_uri(service_uri))
    store.close()
    store.close()  # a second close does nothing
    with pytest.raises(ServiceUnavailable, match="lost the ZooKeeper connection"):
        store.get("/")

import uuid

import pytest
from helpers import BookieHarness

from bookie.meta.layout import init_cluster
from bookie.meta.store import MetadataStore
from bookie.meta.uri import parse_service_uri


@pytest.fixture(scope="module")
def five_bookies(zookeeper, tmp_path_factory):
    """One cluster of five real bookies shared by a module's tests (each test uses its own ledgers)."""
    uri = f"zk+hierarchical://{zookeeper.address}/m{uuid.uuid4().hex[:8]}/ledgers"
    with MetadataStore(parse_service_uri(uri)) as store:
        init_cluster(store)
        harness = BookieHarness(store, uri, tmp_path_factory.mktemp("five"))
        harness.start(5)
        yield harness
        harness.close()

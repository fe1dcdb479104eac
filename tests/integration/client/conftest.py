import pytest
from helpers import shared_cluster


@pytest.fixture(scope="module")
def five_bookies(zookeeper, tmp_path_factory):
    """One cluster of five real bookies shared by a module's tests (each test uses its own ledgers)."""
    with shared_cluster(zookeeper, tmp_path_factory.mktemp("five"), 5) as harness:
        yield harness

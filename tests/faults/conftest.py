"""The fault suite's cluster: its own ZooKeeper (the nemesis kills it) and five bookies, shared by the module."""

import pytest
from faults.cluster import FaultCluster


@pytest.fixture(scope="module")
def fault_cluster(tmp_path_factory):
    cluster = FaultCluster(tmp_path_factory.mktemp("faults"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.close()

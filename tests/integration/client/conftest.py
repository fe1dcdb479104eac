"""Every client test twice: with BookKeeper's protocol v3 (the default) and with v2 for adds and reads
(useV2WireProtocol, what Pulsar brokers use), so that both of the client's paths meet the same faults. Clients built
here take ``client_config``; bkctl and the processes a test starts take ``BKCTL_USE_V2_WIRE_PROTOCOL``."""

import pytest

from bookie.client import ClientConfig

from support.cluster import shared_cluster


@pytest.fixture(autouse=True, params=["v3", "v2"])
def protocol_version(request, monkeypatch):
    monkeypatch.setenv("BKCTL_USE_V2_WIRE_PROTOCOL", str(request.param == "v2").lower())
    return request.param


@pytest.fixture
def client_config(protocol_version):
    return ClientConfig(use_v2_wire_protocol=protocol_version == "v2")


@pytest.fixture(scope="module")
def five_bookies(zookeeper, tmp_path_factory):
    """One cluster of five real bookies shared by a module's tests (each test uses its own ledgers)."""
    with shared_cluster(zookeeper, tmp_path_factory.mktemp("five"), 5) as harness:
        yield harness

"""Every client test twice: with BookKeeper's protocol v3 (the default) and with v2 for adds and reads
(useV2WireProtocol, what Pulsar brokers use), so that both of the client's paths meet the same faults."""

import pytest

from support.cluster import shared_cluster


@pytest.fixture(autouse=True, params=["v3", "v2"])
def protocol_version(request, monkeypatch):
    monkeypatch.setenv("BKCTL_USE_V2_WIRE_PROTOCOL", str(request.param == "v2").lower())
    return request.param


@pytest.fixture(scope="module")
def five_bookies(zookeeper, tmp_path_factory):
    """One cluster of five real bookies shared by a module's tests (each test uses its own ledgers)."""
    with shared_cluster(zookeeper, tmp_path_factory.mktemp("five"), 5) as harness:
        yield harness

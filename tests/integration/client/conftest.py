"""Every client test twice: with the default data transport (our batched gRPC data service where a bookie offers it)
and with BookKeeper's own protocol to every bookie (what a Java bookie gets), so that both paths meet the same
faults."""

import pytest

from helpers import shared_cluster


@pytest.fixture(autouse=True, params=["grpc", "bookkeeper"])
def data_transport(request, monkeypatch):
    monkeypatch.setenv("BKCTL_DATA_TRANSPORT", request.param)
    return request.param


@pytest.fixture(scope="module")
def five_bookies(zookeeper, tmp_path_factory):
    """One cluster of five real bookies shared by a module's tests (each test uses its own ledgers)."""
    with shared_cluster(zookeeper, tmp_path_factory.mktemp("five"), 5) as harness:
        yield harness

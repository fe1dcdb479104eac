"""The client's configuration from the environment."""

import pytest

from bookie.client.config import ClientConfig
from bookie.errors import InvalidArgument


def test_the_data_transport_is_bookkeepers_protocol_unless_asked(monkeypatch):
    monkeypatch.delenv("BKCTL_DATA_TRANSPORT", raising=False)
    assert ClientConfig().data_transport == "bookkeeper"
    monkeypatch.setenv("BKCTL_DATA_TRANSPORT", "grpc")
    assert ClientConfig().data_transport == "grpc"


def test_an_unknown_data_transport_is_named(monkeypatch):
    monkeypatch.setenv("BKCTL_DATA_TRANSPORT", "auto")
    with pytest.raises(InvalidArgument, match="BKCTL_DATA_TRANSPORT is 'auto': it is one of bookkeeper, grpc"):
        ClientConfig()

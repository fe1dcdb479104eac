"""The client's configuration from the environment."""

import pytest

from bookie.client.config import ClientConfig
from bookie.errors import InvalidArgument


def test_the_data_transport_is_our_grpc_stream_unless_asked(monkeypatch):
    monkeypatch.delenv("BKCTL_DATA_TRANSPORT", raising=False)
    assert ClientConfig().data_transport == "grpc"
    monkeypatch.setenv("BKCTL_DATA_TRANSPORT", "bookkeeper")
    assert ClientConfig().data_transport == "bookkeeper"


def test_an_unknown_data_transport_is_named(monkeypatch):
    monkeypatch.setenv("BKCTL_DATA_TRANSPORT", "auto")
    with pytest.raises(InvalidArgument, match="BKCTL_DATA_TRANSPORT is 'auto': it is one of bookkeeper, grpc"):
        ClientConfig()

"""The client's configuration from the environment."""

import pytest

from bookie.client.config import ClientConfig


@pytest.mark.parametrize(
    ("value", "v2"), [(None, False), ("true", True), ("TRUE", True), ("1", True), ("false", False), ("", False)]
)
def test_the_v2_protocol_is_used_for_adds_and_reads_only_when_asked(monkeypatch, value, v2):
    if value is None:
        monkeypatch.delenv("BKCTL_USE_V2_WIRE_PROTOCOL", raising=False)
    else:
        monkeypatch.setenv("BKCTL_USE_V2_WIRE_PROTOCOL", value)
    assert ClientConfig().use_v2_wire_protocol is v2

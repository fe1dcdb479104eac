"""The client's configuration: plain defaults, and bkctl's variables only through ``from_environment``."""

import pytest

from bookie.client.config import ClientConfig


@pytest.mark.parametrize(
    ("value", "v2"), [(None, False), ("true", True), ("TRUE", True), ("1", True), ("false", False), ("", False)]
)
def test_the_environment_asks_for_the_v2_protocol_only_through_from_environment(value, v2):
    env = {} if value is None else {"BKCTL_USE_V2_WIRE_PROTOCOL": value}
    assert ClientConfig.from_environment(env).use_v2_wire_protocol is v2


def test_the_defaults_read_no_bkctl_variable(monkeypatch, tmp_path):
    """With bkctl's variables asking for v2 and TLS, a configuration built by a library user is v3 in plaintext."""
    monkeypatch.setenv("BKCTL_USE_V2_WIRE_PROTOCOL", "1")
    monkeypatch.setenv("BKCTL_TLS_TRUST_STORE", str(tmp_path / "missing-ca.pem"))
    config = ClientConfig()
    assert config.use_v2_wire_protocol is False and config.tls is None


def test_from_environment_takes_tls_from_the_variables_unless_given(tmp_path):
    (tmp_path / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    env = {"BKCTL_TLS_TRUST_STORE": str(tmp_path / "ca.pem")}
    assert ClientConfig.from_environment(env).tls.trust_store == str(tmp_path / "ca.pem")
    assert ClientConfig.from_environment(env, tls=None).tls is None
    assert ClientConfig.from_environment({}).tls is None

"""What every command shares: the service URI from a configuration file, against a real cluster."""

import pytest


def test_a_conf_file_without_a_metadata_service_is_refused(bkctl, cluster, service_uri, tmp_path, monkeypatch):
    from bookie.local.sandbox import Sandbox

    conf = tmp_path / "bk.conf"
    conf.write_text("bookiePort=3181\n")
    # a running sandbox must not be picked instead of the cluster the file was meant to name
    monkeypatch.setattr(Sandbox, "running", lambda self: pytest.fail("the sandbox was consulted"))
    result = bkctl("-c", str(conf), "ledger", "list")
    assert (result.exit_code, result.stderr) == (
        2,
        f"error: configuration file {conf} names no metadata service (metadataServiceUri, or zkServers): add one, "
        "or pass -u/--service-uri\n",
    )
    conf.write_text(f"metadataServiceUri={service_uri}\n")
    result = bkctl("-v", "-c", str(conf), "ledger", "list")
    assert result.exit_code == 0 and f"metadata service: {service_uri} (from {conf})" in result.stderr


def test_a_relative_ledgers_root_path_in_conf_is_named(bkctl, zookeeper, tmp_path):
    conf = tmp_path / "old.conf"
    conf.write_text(f"zkServers={zookeeper.address}\nzkLedgersRootPath=ledgers\n")
    result = bkctl("-c", str(conf), "cluster", "info")
    assert (result.exit_code, result.stderr) == (
        2,
        f"error: {conf}: zkLedgersRootPath='ledgers' must be an absolute path, e.g. /ledgers\n",
    )


def test_service_uri_from_conf_file_and_env(bkctl, cluster, service_uri, tmp_path, monkeypatch):
    conf = tmp_path / "bk_server.conf"
    conf.write_text(f"# a bookie's configuration\nmetadataServiceUri={service_uri}\nbookiePort=3181\n")
    assert bkctl("-c", str(conf), "cluster", "info", "-o", "json").exit_code == 0
    monkeypatch.setenv("BKCTL_CONF", str(conf))
    assert bkctl("cluster", "info").exit_code == 0
    # env BKCTL_SERVICE_URI beats the file, and -u beats both
    monkeypatch.setenv("BKCTL_SERVICE_URI", "zk+hierarchical://h:1")
    assert bkctl("cluster", "info").exit_code == 2
    assert bkctl("-u", service_uri, "cluster", "info").exit_code == 0


def test_legacy_zk_servers_in_conf(bkctl, cluster, zookeeper, tmp_path):
    conf = tmp_path / "old.conf"
    conf.write_text(f"zkServers={zookeeper.address}\nzkLedgersRootPath={cluster.root}\n")
    assert bkctl("-c", str(conf), "cluster", "info").exit_code == 0

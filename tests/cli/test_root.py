"""What every command shares: service URI resolution, configuration, errors and exit codes."""

import time

import pytest

from bkctl import __version__


def test_help_lists_the_command_groups(bkctl):
    result = bkctl("--help")
    assert result.exit_code == 0
    section = result.stdout.split("Commands:\n")[1].splitlines()
    assert [line.split()[0] for line in section if line.startswith("  ") and not line.startswith("   ")] == [
        "autorecovery", "bench", "bookie", "bookies", "cluster", "completion", "ledger", "sandbox",
    ]


def test_version(bkctl):
    assert bkctl("--version").stdout == f"bkctl, version {__version__}\n"


@pytest.mark.parametrize("uri", ["not-a-uri", "zk+hierarchical://h:2181", "zk+weird://h:1/ledgers"])
def test_malformed_uri_exits_2(bkctl, uri):
    result = bkctl("-u", uri, "ledger", "list")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1


def test_unreachable_zookeeper_exits_6_within_10_seconds(bkctl):
    from bookie.local.process import free_port

    started = time.monotonic()
    result = bkctl("-u", f"zk+hierarchical://127.0.0.1:{free_port()}/ledgers", "cluster", "info")
    assert time.monotonic() - started < 10
    assert result.exit_code == 6
    assert result.stderr.startswith("error: cannot reach ZooKeeper at 127.0.0.1:") and result.stderr.count("\n") == 1


def test_no_service_and_no_sandbox_exits_6(bkctl, tmp_path):
    result = bkctl("ledger", "list")
    assert result.exit_code == 6
    assert "no metadata service given and no sandbox running" in result.stderr
    assert "bkctl sandbox start" in result.stderr


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


def test_missing_conf_file_exits_2(bkctl, tmp_path):
    result = bkctl("-c", str(tmp_path / "nope.conf"), "cluster", "info")
    assert (result.exit_code, result.stderr) == (2, f"error: configuration file {tmp_path / 'nope.conf'} does not exist\n")


def test_unknown_option_exits_2(bkctl):
    assert bkctl("ledger", "list", "--bogus").exit_code == 2
    assert bkctl("ledger", "list", "-o", "xml").exit_code == 2


@pytest.mark.parametrize("shell,marker", [("bash", "complete -o"), ("zsh", "compdef"), ("fish", "function _bkctl_completion")])
def test_completion_scripts(bkctl, shell, marker):
    result = bkctl("completion", shell)
    assert result.exit_code == 0
    assert marker in result.stdout and "_BKCTL_COMPLETE" in result.stdout

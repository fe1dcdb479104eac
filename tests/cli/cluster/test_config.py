"""bkctl config: which cluster a command acts on when a context, -u, -c and variables meet, on a real cluster."""

from __future__ import annotations

import json

import pytest

from support.cli import dead_uri
from support.cluster import shared_cluster


@pytest.fixture(scope="module")
def live(zookeeper, tmp_path_factory):
    """A cluster with one bookie that also serves BookKeeper's HTTP admin API."""
    with shared_cluster(zookeeper, tmp_path_factory.mktemp("contexts"), 1, http=True) as harness:
        yield harness


def source(result) -> str:
    """Where -v says the service URI came from."""
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("metadata service: ")]
    return line.split(" (from ", 1)[1][:-1]


def test_which_source_names_the_cluster(bkctl, live, monkeypatch, tmp_path, config_file):
    uri, dead = live.service_uri, dead_uri()
    conf = tmp_path / "bk.conf"
    conf.write_text(f"metadataServiceUri={uri}\n")
    bkctl("config", "set-context", "live", "--service-uri", uri)
    bkctl("config", "set-context", "dead", "--service-uri", dead, "--timeout", "0.5")

    def used(*args: str) -> str:
        result = bkctl("-v", *args, "cluster", "info", "-o", "json")
        return source(result) if result.exit_code == 0 else result.stderr.splitlines()[-1]

    assert used().startswith("error: no metadata service given and no sandbox running")
    bkctl("config", "use-context", "dead")
    assert used() == f"error: cannot reach ZooKeeper at {dead.split('/')[2]} (gave up after 0.5 s)"
    assert used("--context", "live") == f"context live in {config_file}, named by --context"
    bkctl("config", "use-context", "live")
    assert used() == f"context live in {config_file}, the current context"
    # an option beats a variable; among options, and among variables: -u, then -c, then --context
    assert used("-u", uri, "--context", "dead") == "-u/--service-uri"
    assert used("-c", str(conf), "--context", "dead") == str(conf)
    monkeypatch.setenv("BKCTL_CONTEXT", "dead")
    assert used().startswith("error: cannot reach ZooKeeper")
    assert used("--context", "live") == f"context live in {config_file}, named by --context"
    monkeypatch.setenv("BKCTL_SERVICE_URI", uri)
    assert used() == "BKCTL_SERVICE_URI"  # beats BKCTL_CONTEXT and the current context
    assert used("--context", "live") == f"context live in {config_file}, named by --context"
    assert used("-c", str(conf)) == str(conf)
    monkeypatch.delenv("BKCTL_SERVICE_URI")
    monkeypatch.setenv("BKCTL_CONF", str(conf))
    assert used() == str(conf)  # BKCTL_CONF beats BKCTL_CONTEXT
    assert used("--context", "live") == f"context live in {config_file}, named by --context"
    result = bkctl("--context", "nope", "cluster", "info")
    assert (result.exit_code, result.stderr) == (
        5,
        f"error: no context 'nope' in {config_file} (`bkctl config get-contexts` lists them)\n",
    )


def test_the_context_http_port_sends_admin_commands_over_http(bkctl, live):
    (bookie,) = live.bookies
    bkctl("config", "set-context", "grpc", "--service-uri", live.service_uri)
    bkctl("config", "set-context", "http", "--service-uri", live.service_uri, "--http-port", str(bookie.http_port))
    args = ("bookie", "gc-status", bookie.bookie_id, "-o", "json")
    (grpc,) = json.loads(bkctl("--context", "grpc", *args).stdout)
    (http,) = json.loads(bkctl("--context", "http", *args).stdout)
    assert grpc["entryLogs"] is not None and http["entryLogs"] is None  # BookKeeper's API reports no entry logs
    result = bkctl("--context", "http", *args, "--http-port", "1")  # the command's option beats the context
    assert result.exit_code == 6 and "HTTP admin API is unreachable at http://127.0.0.1:1" in result.stderr
    # a context names a whole cluster: its port is not used for a cluster named otherwise
    bkctl("config", "use-context", "http")
    (other,) = json.loads(bkctl("-u", live.service_uri, *args).stdout)
    assert other["entryLogs"] is not None

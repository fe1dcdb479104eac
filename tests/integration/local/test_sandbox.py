"""The sandbox as a user runs it: real `bkctl` processes, a real ZooKeeper started and stopped by pid."""

import json
import subprocess
import sys

import pytest

from bookie.local.process import pid_alive
from bookie.meta.store import MetadataStore
from bookie.meta.uri import parse_service_uri

SPEC_LAYOUT = b"2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1"


def bkctl(*args, env_dir):
    return subprocess.run(
        [sys.executable, "-m", "bkctl", *args], capture_output=True, text=True, timeout=120,
        env={**__import__("os").environ, "BKCTL_SANDBOX_DIR": str(env_dir)},
    )


def cluster_znodes(service_uri):
    with MetadataStore(parse_service_uri(service_uri)) as store:
        root = store.root
        return {
            name: store.zk.get(f"{root}/{name}")[0] if name else store.zk.get(root)[0]
            for name in ["", "available", "available/readonly", "INSTANCEID", "LAYOUT"]
        }, sorted(store.zk.get_children(root))


@pytest.fixture
def sandbox_dir(tmp_path):
    directory = tmp_path / "sandbox"
    yield directory
    bkctl("sandbox", "stop", env_dir=directory)  # whatever a failed test left running


def test_no_init_then_cluster_init_through_the_default_sandbox(sandbox_dir):
    started = bkctl("sandbox", "start", "--no-init", "-o", "json", env_dir=sandbox_dir)
    assert started.returncode == 0, started.stderr
    status = json.loads(started.stdout)
    assert status["stateDir"] == str(sandbox_dir)
    assert status["serviceUri"] == f"zk+hierarchical://{status['zookeeper']['address']}/ledgers"
    assert status["bookies"] == [] and pid_alive(status["zookeeper"]["pid"])
    with MetadataStore(parse_service_uri(status["serviceUri"])) as store:
        assert not store.zk.exists("/ledgers")

    init = bkctl("cluster", "init", env_dir=sandbox_dir)  # no -u: the running sandbox
    assert init.returncode == 0, init.stderr
    nodes, children = cluster_znodes(status["serviceUri"])
    assert children == ["INSTANCEID", "LAYOUT", "available"]
    assert nodes["LAYOUT"] == SPEC_LAYOUT and len(nodes["INSTANCEID"]) == 36
    assert nodes[""] == nodes["available"] == nodes["available/readonly"] == b""

    again = bkctl("cluster", "init", env_dir=sandbox_dir)
    assert again.returncode == 1 and "already initialised" in again.stderr
    assert cluster_znodes(status["serviceUri"]) == (nodes, children)

    stopped = bkctl("sandbox", "stop", env_dir=sandbox_dir)
    assert stopped.returncode == 0 and stopped.stdout == f"sandbox {sandbox_dir} stopped\n"
    assert not pid_alive(status["zookeeper"]["pid"])
    gone = bkctl("sandbox", "status", env_dir=sandbox_dir)
    assert (gone.returncode, gone.stderr) == (5, f"error: no sandbox is running in {sandbox_dir}\n")


def test_plain_start_initialises_and_restart_keeps_the_cluster(sandbox_dir):
    first = json.loads(bkctl("sandbox", "start", "--bookies", "1", "-o", "json", env_dir=sandbox_dir).stdout)
    nodes, children = cluster_znodes(first["serviceUri"])
    assert children == ["INSTANCEID", "LAYOUT", "available", "cookies"]  # cookies: the bookie's
    assert nodes["LAYOUT"] == SPEC_LAYOUT and nodes[""] == nodes["available/readonly"] == b""

    twice = bkctl("sandbox", "start", env_dir=sandbox_dir)
    assert twice.returncode == 1 and "already running" in twice.stderr

    assert bkctl("sandbox", "stop", env_dir=sandbox_dir).returncode == 0
    second = json.loads(bkctl("sandbox", "start", "-o", "json", env_dir=sandbox_dir).stdout)
    assert second["serviceUri"] == first["serviceUri"]  # same port, same data
    assert second["bookies"][0]["bookieId"] == first["bookies"][0]["bookieId"]  # the same bookie, same port
    assert len(second["bookies"]) == 3  # plus new ones up to the default 3
    assert cluster_znodes(second["serviceUri"])[0]["INSTANCEID"] == nodes["INSTANCEID"]
    status = json.loads(bkctl("sandbox", "status", "-o", "json", env_dir=sandbox_dir).stdout)
    assert status == second


def test_bookie_fault_drills_and_bench(sandbox_dir):
    started = bkctl("sandbox", "start", "--bookies", "2", "--set", "journalMaxGroupWaitMSec=1", "-o", "json",
                    env_dir=sandbox_dir)
    assert started.returncode == 0, started.stderr
    status = json.loads(started.stdout)
    assert [b["state"] for b in status["bookies"]] == ["writable", "writable"]
    first = status["bookies"][0]
    assert set(first) >= {"bookieId", "pid", "port", "state", "journalDir", "ledgerDir"}
    assert "journalMaxGroupWaitMSec=1" in (sandbox_dir / "bookie-1" / "bk_server.conf").read_text()

    killed = bkctl("sandbox", "stop-bookie", "1", "--kill", env_dir=sandbox_dir)
    assert killed.stdout == f"bookie/{first['bookieId']} killed\n" and not pid_alive(first["pid"])
    after = json.loads(bkctl("sandbox", "status", "-o", "json", env_dir=sandbox_dir).stdout)
    assert [b["state"] for b in after["bookies"]] == ["stopped", "writable"]
    again = bkctl("sandbox", "stop-bookie", "1", env_dir=sandbox_dir)
    assert again.returncode == 5 and "is not running" in again.stderr

    restarted = bkctl("sandbox", "start-bookie", first["bookieId"], env_dir=sandbox_dir)
    assert restarted.returncode == 0, restarted.stderr
    after = json.loads(bkctl("sandbox", "status", "-o", "json", env_dir=sandbox_dir).stdout)
    assert [b["state"] for b in after["bookies"]] == ["writable", "writable"]

    bench = bkctl("bench", "bookie", "--bookie", first["bookieId"], "--entries", "3000", "--batch", "100", "-o", "json",
                  env_dir=sandbox_dir)
    assert bench.returncode == 0, bench.stderr
    result = json.loads(bench.stdout)
    assert set(result) >= {"entries", "seconds", "entriesPerSec", "mbPerSec", "latencyMs", "rawEntriesPerSec", "ratio"}
    assert result["entries"] == 3000 and set(result["latencyMs"]) == {"p50", "p95", "p99", "max"}
    unknown = bkctl("sandbox", "start-bookie", "9", env_dir=sandbox_dir)
    assert unknown.returncode == 5 and "no sandbox bookie '9'" in unknown.stderr


def test_sandbox_with_autorecovery(sandbox_dir):
    started = bkctl("sandbox", "start", "--bookies", "1", "--autorecovery", "-o", "json", env_dir=sandbox_dir)
    assert started.returncode == 0, started.stderr
    pid = json.loads(started.stdout)["autorecovery"]["pid"]
    assert pid_alive(pid)
    import time

    deadline = time.monotonic() + 30
    while bkctl("autorecovery", "who-is-auditor", env_dir=sandbox_dir).returncode != 0:
        assert time.monotonic() < deadline, "no auditor elected"
        time.sleep(0.3)
    assert bkctl("sandbox", "stop", env_dir=sandbox_dir).returncode == 0
    assert not pid_alive(pid)

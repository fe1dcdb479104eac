"""One bk_server.conf, one bookie id: the configuration that the oracle's bin/bk-conf writes for a Java bookie
starts our bookie under the id the Java bookie (Apache BookKeeper 4.17.4) takes with it, and listening where it
listens — the advertised address, and the host name of an interface (useHostNameAsBookieID)."""

from __future__ import annotations

import socket
import sys
import time

from bookie.local.process import free_port, spawn, stop_process_group
from bookie.meta.layout import init_cluster
from bookie.meta.registration import BookieRegistry
from bookie.meta.store import MetadataStore
from bookie.meta.uri import parse_service_uri

from interop.oracle import ENV, ORACLE, require_oracle, run

require_oracle()


def java_conf(directory, port: int, zk: str, root: str, *settings: str):
    conf = directory / "bookie.conf"
    run("bk-conf", str(conf), str(port), str(directory), zk, "--root", root, *settings)
    return conf


def ours_only() -> list[str]:
    """Our bookie serves metrics and its admin service too: on ports of their own, on 127.0.0.1 (keys Java
    ignores)."""
    return [
        f"prometheusStatsHttpPort={free_port()}",
        "prometheusStatsHttpAddress=127.0.0.1",
        f"bkctlAdminPort={free_port()}",
    ]


def started(store, command: list[str], log, env=None) -> tuple[int, str]:
    """Start a bookie process; its pid and the id it registered under (the one registration that appears)."""
    registry = BookieRegistry(store)
    before = {b.bookie_id for b in registry.list(writable=True, readonly=True)}
    pid = spawn(command, log, env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        new = {b.bookie_id for b in registry.list(writable=True, readonly=True)} - before
        if new:
            return pid, new.pop()
        time.sleep(0.2)
    stop_process_group(pid)
    raise AssertionError(f"no bookie registered within 120 s: {log.read_text()[-2000:]}")


def test_a_java_bookies_conf_gives_our_bookie_the_java_bookies_id(zookeeper, tmp_path):
    root = f"/ids{time.monotonic_ns()}/ledgers"
    with MetadataStore(parse_service_uri(f"zk+hierarchical://{zookeeper.address}{root}")) as store:
        init_cluster(store)
        for settings in ([], ["advertisedAddress=", "useHostNameAsBookieID=true"]):
            java_port, our_port = free_port(), free_port()
            conf = java_conf(tmp_path / f"java-{java_port}", java_port, zookeeper.address, root, *settings)
            pid, java_id = started(store, [str(ORACLE / "bin" / "bk-bookie"), str(conf)], tmp_path / "java.log", ENV)
            stop_process_group(pid, timeout=60)
            conf = java_conf(tmp_path / f"ours-{our_port}", our_port, zookeeper.address, root, *settings, *ours_only())
            pid, our_id = started(
                store, [sys.executable, "-m", "bkctl", "bookie", "run", "--conf", str(conf)], tmp_path / "ours.log"
            )
            stop_process_group(pid, timeout=60)
            host = java_id.removesuffix(f":{java_port}")
            assert our_id == f"{host}:{our_port}" and host != java_id, settings
        assert host == socket.gethostbyaddr("127.0.0.1")[0]  # by name: the canonical name of lo's address

"""Helpers for tests that drive real processes: waiting, and expiring ZooKeeper sessions."""

from __future__ import annotations

import time

from bookie.meta.store import MetadataStore


def expire_session(store: MetadataStore) -> None:
    """Expire ``store``'s ZooKeeper session the way kazoo's harness does: a second client joins the same session
    and closes it. ``store`` then gets a new session; the old session's ephemeral nodes are gone."""
    from kazoo.client import KazooClient

    old_session = store.zk.client_id[0]
    twin = KazooClient(hosts=store.uri.zk_hosts, client_id=store.zk.client_id)
    twin.start(timeout=10)
    twin.stop()
    twin.close()
    wait_for(lambda: store.zk.connected and store.zk.client_id[0] != old_session, "a new session")


def wait_for(condition, what: str, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")

"""bkctl's re-replication on a real Apache BookKeeper 4.17.4 cluster (../shared/bk-oracle): decommissioning a stopped
Java bookie, and the autorecovery daemon re-replicating a killed one, both with Java bookies on either side of every
copy (read with BookKeeper's protocol, written with RECOVERY_ADD). Five Java bookies, so that E3 ledgers can move."""

from __future__ import annotations

import json
import sys

import pytest

from bookie.local.process import spawn, stop_process_group
from bookie.meta.cookies import CookieStore
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.underreplication import UnderReplicationManager

from interop.oracle import JavaCluster, bk_read, bk_write, require_oracle
from support.checks import ledgers_naming
from support.waiting import wait_for

require_oracle()

ENTRIES = 300


@pytest.fixture(scope="module")
def java(tmp_path_factory):
    cluster = JavaCluster.start(tmp_path_factory.mktemp("java"), 5)
    try:
        yield cluster
    finally:
        cluster.stop()


def naming(bkctl, java, bookie_id: str) -> list[int]:
    return ledgers_naming(bkctl, java.service_uri, bookie_id)


def ledgers_on(java, store, n: int, wanted: int = 2) -> list[int]:
    """Java-written E3 W2 A2 ledgers with Java bookie ``n`` in their ensemble, ``wanted`` of them."""
    on_it = []
    while len(on_it) < wanted:
        ledger_id = bk_write(java.zk, "--n", str(ENTRIES), "--text", "entry", "--suffix-index")
        if java.bookie_id(n) in LedgerManager(store).read(ledger_id)[0].segments[0].bookies:
            on_it.append(ledger_id)
    return on_it


def assert_readable_by_java(java, ledger_ids: list[int]) -> None:
    for ledger_id in ledger_ids:
        assert bk_read(java.zk, ledger_id, "--no-recovery") == [(i, b"entry-%d" % i) for i in range(ENTRIES)]


def test_bkctl_decommissions_a_stopped_java_bookie(java, store, bkctl):
    ledger_ids = ledgers_on(java, store, 5)
    java.stop_bookie(5)
    gone = java.bookie_id(5)
    assert gone in CookieStore(store).list()
    done = bkctl("-u", java.service_uri, "bookie", "decommission", gone, "--yes")
    assert done.exit_code == 0, done.output
    assert naming(bkctl, java, gone) == [] and gone not in CookieStore(store).list()
    assert_readable_by_java(java, ledger_ids)


def test_bkctl_autorecovery_rereplicates_a_killed_java_bookie(java, store, bkctl, tmp_path):
    ledger_ids = ledgers_on(java, store, 4)
    uri = java.service_uri
    pid = spawn(
        [sys.executable, "-m", "bkctl", "-u", uri, "autorecovery", "run", "--poll", "0.3"],
        tmp_path / "autorecovery.log",
    )
    try:
        wait_for(lambda: bkctl("-u", uri, "autorecovery", "who-is-auditor").exit_code == 0, "an auditor", 30)
        lost = java.bookie_id(4)
        java.kill(4)  # for good: its ZooKeeper session expires, the auditor marks what it held
        wait_for(lambda: naming(bkctl, java, lost) == [], "every ledger of the killed Java bookie re-replicated", 120)
        wait_for(lambda: UnderReplicationManager(store).count() == 0, "the under-replication markers removed", 30)
    finally:
        stop_process_group(pid)
    assert_readable_by_java(java, ledger_ids)
    checked = bkctl("-u", uri, "cluster", "check", "-o", "json")
    assert checked.exit_code == 0, checked.output
    assert json.loads(checked.stdout)["violations"] == []

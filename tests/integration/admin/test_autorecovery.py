"""Autorecovery with real processes: a bookie killed for good is re-replicated without operator action."""

import json
import re
import sys

import pytest

from bookie.autorecovery.main import auditor_id
from bookie.local.process import spawn, stop_process_group
from bookie.meta.underreplication import UnderReplicationManager

from support.checks import check, ledgers_naming, write_ledgers
from support.waiting import wait_for


def test_a_lost_bookie_is_re_replicated_without_operator_action(harness, bkctl, cluster, tmp_path):
    bookies = harness.start(4)
    write_ledgers(harness.service_uri, 6, quorum=(3, 2, 2), entries=30)
    pid = spawn(
        [
            sys.executable,
            "-m",
            "bkctl",
            "-u",
            harness.service_uri,
            "autorecovery",
            "run",
            "--poll",
            "0.3",
            "--open-ledger-grace",
            "1",
        ],
        tmp_path / "autorecovery.log",
    )
    try:
        wait_for(
            lambda: bkctl("-u", harness.service_uri, "autorecovery", "who-is-auditor").exit_code == 0, "an auditor"
        )
        status = json.loads(bkctl("-u", harness.service_uri, "autorecovery", "status", "-o", "json").stdout)
        assert status["enabled"] is True and status["auditor"] is not None
        # without -c: the id a bookie with BookKeeper's defaults has, its address and bookiePort 3181 (not host:pid)
        assert re.fullmatch(r"[^:]+:3181", status["auditor"]) and status["auditor"] == auditor_id({}), status
        victim = next(b for b in bookies if ledgers_naming(bkctl, harness.service_uri, b.bookie_id))
        victim.stop(kill=True)  # for good: its session expires, its registration goes
        wait_for(
            lambda: not ledgers_naming(bkctl, harness.service_uri, victim.bookie_id),
            "every ledger of the lost bookie to be re-replicated",
            90,
        )
        wait_for(lambda: UnderReplicationManager(cluster).count() == 0, "the markers to be removed", 30)
        assert check(bkctl, harness.service_uri)[0] == 0
    finally:
        stop_process_group(pid)
    assert "re-replicated" in (tmp_path / "autorecovery.log").read_text()


def test_controls(bkctl, cluster, service_uri):
    assert bkctl("-u", service_uri, "autorecovery", "who-is-auditor").exit_code == 5
    assert bkctl("-u", service_uri, "autorecovery", "disable").stdout == "autorecovery disabled\n"
    assert json.loads(bkctl("-u", service_uri, "autorecovery", "status", "-o", "json").stdout)["enabled"] is False
    assert bkctl("-u", service_uri, "autorecovery", "enable", "--dry-run").stdout == (
        "autorecovery would be enabled (dry run)\n"
    )
    bkctl("-u", service_uri, "autorecovery", "enable")
    assert UnderReplicationManager(cluster).is_enabled()
    assert bkctl("-u", service_uri, "autorecovery", "lost-bookie-recovery-delay", "--set", "30").stdout == "30 s\n"
    assert UnderReplicationManager(cluster).lost_bookie_recovery_delay() == 30
    ur = UnderReplicationManager(cluster)
    ur.mark(5, ["b1:1"])
    ur.mark(6, ["b2:1"])
    listed = json.loads(
        bkctl(
            "-u", service_uri, "autorecovery", "list-under-replicated", "--missing-replica", "b2:1", "-o", "json"
        ).stdout
    )
    assert [d["ledgerId"] for d in listed] == [6]
    assert bkctl("-u", service_uri, "autorecovery", "list-under-replicated", "--count").stdout == "2\n"
    ur.mark(7, ["b3:1"], now_ms=1795837372372)
    table = bkctl("-u", service_uri, "autorecovery", "list-under-replicated", "--missing-replica", "b3:1").stdout
    assert table.splitlines()[0].split() == ["LEDGER", "MISSING-REPLICAS", "MARKED"]
    assert table.splitlines()[1].split() == ["7", "b3:1", "2026-11-28T03:42:52.372Z"]  # the JSON keeps ctime in ms


def test_the_delay_holds_marking_back_until_an_audit_is_triggered(harness, bkctl, cluster, tmp_path):
    bookies = harness.start(4)
    write_ledgers(harness.service_uri, 3, quorum=(3, 2, 2), entries=10)
    bkctl("-u", harness.service_uri, "autorecovery", "lost-bookie-recovery-delay", "--set", "600")
    log = tmp_path / "autorecovery.log"
    # run beside bookie 1 with its bk_server.conf (as the sandbox runs it): named after that bookie
    conf = str(bookies[0].conf_path)
    pid = spawn([sys.executable, "-m", "bkctl", "-c", conf, "autorecovery", "run", "--poll", "0.3"], log)
    try:
        wait_for(
            lambda: bkctl("-u", harness.service_uri, "autorecovery", "who-is-auditor").exit_code == 0, "an auditor"
        )
        assert bkctl("-u", harness.service_uri, "autorecovery", "who-is-auditor").stdout == bookies[0].bookie_id + "\n"
        victim = next(b for b in bookies if ledgers_naming(bkctl, harness.service_uri, b.bookie_id))
        named = ledgers_naming(bkctl, harness.service_uri, victim.bookie_id)
        victim.stop()  # a clean stop: unregistered at once
        wait_for(
            lambda: f"delaying the audit of lost bookies ['{victim.bookie_id}'] by 600 s" in log.read_text(),
            "the auditor to see the bookie lost",
        )
        assert UnderReplicationManager(cluster).count() == 0  # 600 s to go
        triggered = bkctl("-u", harness.service_uri, "autorecovery", "trigger-audit")
        assert triggered.exit_code == 0 and triggered.stdout.startswith("audit triggered (auditor ")
        wait_for(
            lambda: not ledgers_naming(bkctl, harness.service_uri, victim.bookie_id),
            "re-replication after the trigger",
            60,
        )
        assert named
    finally:
        stop_process_group(pid)


def test_a_worker_swaps_the_metadata_only_while_it_holds_the_lock(harness, cluster, service_uri):
    """A worker cut off while its lock was released as stale (`list-under-replicated --fix`) copies, but leaves the
    metadata to whoever holds the lock now."""
    from bookie.autorecovery.recovery import AutoRecovery
    from bookie.client import BookKeeper
    from bookie.errors import BKError

    bookies = harness.start(3)
    (ledger_id,) = write_ledgers(service_uri, 1, quorum=(2, 2, 2), entries=5)
    with BookKeeper(service_uri) as bk:
        named = bk.ledger_metadata(ledger_id).segments[0].bookies
        victim = next(b for b in bookies if b.bookie_id in named)
        victim.stop()
        wait_for(lambda: len(bk.core.registry.list()) == 2, "the victim to go")
        registered = {b.bookie_id for b in bk.core.registry.list()}
        worker = AutoRecovery(bk.core, "worker-1")
        with pytest.raises(BKError, match="no longer this worker's"):
            bk.run(worker._replicate_ledger(ledger_id, registered))
        assert victim.bookie_id in bk.ledger_metadata(ledger_id).segments[0].bookies
        assert worker.ur.try_lock(ledger_id, "worker-1")
        assert bk.run(worker._replicate_ledger(ledger_id, registered)) is True
        assert victim.bookie_id not in bk.ledger_metadata(ledger_id).segments[0].bookies

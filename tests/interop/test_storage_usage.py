"""The offline storage view (bookie/storage/usage.py) of a running Java bookie's directories (Apache BookKeeper
4.17.4, ../shared/bk-oracle), interleaved and DbLedgerStorage: its logs' ledgers maps agree with what BookKeeper's
shell reads in them (``readlog``), and nothing is left in its directories by the reading."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from bookie.server.config import BookieConfig
from bookie.storage.usage import view_of_dirs

from interop.oracle import JavaCluster, bk_write, output, require_oracle

require_oracle()

ENTRIES = 300


@pytest.fixture(scope="module", params=["interleaved", "db"])
def java(request, tmp_path_factory):
    """One Java bookie, with 64 KiB entry logs (so that most are sealed)."""
    root = tmp_path_factory.mktemp(f"java-usage-{request.param}")
    cluster = JavaCluster.start(root, 1, "logSizeLimit=65536", storage=request.param)
    try:
        yield cluster, request.param
    finally:
        cluster.stop()


def shell_ledgers(conf: str, log_id: int) -> dict[int, int]:
    """``bookkeeper shell readlog``: the bytes of each ledger's entries in the log (with their size prefixes)."""
    read = output("bk-shell", conf, "readlog", str(log_id))
    sizes: Counter[int] = Counter()
    for ledger_id, size in re.findall(r"Lid=(\d+), Eid=\d+, ByteOffset=\d+, EntrySize=(\d+)", read):
        sizes[int(ledger_id)] += int(size) + 4
    return dict(sizes)


def usage_args(java, conf: str) -> list[str]:
    return ["-u", java.service_uri, "-c", conf, "bookie", "usage", java.bookie_id(1), "--offline", "--logs", "100"]


def test_a_running_java_bookies_directories_read_offline(java, bkctl):
    """Two ledgers of 1 KB entries, then a restart, whose checkpoint writes everything (DbLedgerStorage's write
    cache too) into the entry logs and indexes; the view is read while the bookie runs again."""
    java, storage = java
    quorums = ["--ensemble", "1", "--write-quorum", "1", "--ack-quorum", "1"]
    text = ["--text", "u" * 1000, "--suffix-index"]
    ledgers = [bk_write(java.zk, "--n", str(ENTRIES), *text, *quorums) for _ in "ab"]
    java.stop_bookie(1)
    java.start_bookie(1)
    conf = str(java.conf(1))
    view = view_of_dirs(BookieConfig.load(conf))
    assert view.bookie_id == java.bookie_id(1)  # from its cookie
    assert view.storage == storage
    assert view.local_ledgers == dict.fromkeys(ledgers, ENTRIES)
    assert view.logs[-1].active
    done = [log for log in view.logs if not log.active]
    assert len(done) >= 3 and set(ledgers) <= {lid for log in done for lid in log.ledgers}
    for log in done:  # each one's ledgers map, or its scan when it has none, against the shell's scan
        assert log.ledgers == shell_ledgers(conf, log.log_id), log.log_id
    assert not list(java.root.rglob("rocksdict-config.json"))  # rocksdict's file, written into any database it opens

    # bkctl bookie usage, from the same directories, against the Java cluster's metadata: both ledgers closed and
    # live, the bytes the shell reads in the sealed logs theirs, and what they hold all expected
    usage = bkctl(*usage_args(java, conf))
    assert usage.exit_code == 0, usage.stderr
    doc = json.loads(bkctl(*usage_args(java, conf), "-o", "json").stdout)
    assert (doc["bookieId"], doc["source"], doc["storage"]) == (java.bookie_id(1), "offline", storage)
    states = {ledger["ledgerId"]: ledger["state"] for log in doc["logs"] for ledger in log["ledgers"]}
    assert states == dict.fromkeys(ledgers, "closed")
    by_log = {log["logId"]: log for log in doc["logs"]}
    for log in done:
        shell = shell_ledgers(conf, log.log_id)
        assert {ledger["ledgerId"]: ledger["bytes"] for ledger in by_log[log.log_id]["ledgers"]} == shell
        assert by_log[log.log_id]["liveBytes"] == sum(shell.values())
    assert doc["expectedBytes"] == doc["liveBytes"] and doc["expectedLedgers"] == 2

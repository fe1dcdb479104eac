"""bkctl top on three of our bookies under adds and reads: --once -o json fills every column from BookKeeper's
metric names; a bookie slowed on purpose (SIGSTOP bursts) is flagged, by top and by cluster check --latency; the live
view on a pseudo-terminal sorts on a key and quits on q or Ctrl-C; an unreachable bookie is a row saying so."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import termios
import threading
import time

import pytest

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.client import BookKeeper

from support.cluster import metric, shared_cluster
from support.waiting import wait_for
from support.wire import WireConn, add_requests


class Traffic(threading.Thread):
    """Adds to one bookie, 20 at a time, each batch read back, until stopped (the ledger's entries, written by
    each bookie's traffic alone)."""

    def __init__(self, port: int, ledger_id: int):
        super().__init__(daemon=True)
        self.port, self.ledger_id = port, ledger_id
        self.halt = threading.Event()

    def run(self):
        with WireConn(self.port) as conn:
            for first in range(0, 10**9, 20):
                if self.halt.is_set():
                    return
                adds = add_requests(self.ledger_id, first, 20)
                for txn in conn.send_requests(adds):
                    assert conn.answer(txn).addResponse.status == pb.EOK
                reads = [pb.ReadRequest(ledgerId=self.ledger_id, entryId=e) for e in range(first, first + 20)]
                for txn in conn.send_requests(reads):
                    conn.answer(txn)
                time.sleep(0.01)


@pytest.fixture(scope="module")
def bookies(zookeeper, tmp_path_factory):
    """Three bookies with one-second latency windows and a garbage collection every half second, each under adds
    and reads."""
    with shared_cluster(
        zookeeper, tmp_path_factory.mktemp("top"), bookies=3, prometheusStatsLatencyRolloverSeconds=1, gcWaitTime=500
    ) as harness:
        with BookKeeper(harness.service_uri) as bk:  # in the metadata, or the collectors delete it
            handle = bk.create_ledger(3, 3, 3)
            ledger_id = handle.ledger_id
            handle.close()
        traffic = [Traffic(b.port, ledger_id) for b in harness.bookies]
        for thread in traffic:
            thread.start()
        try:
            for bookie in harness.bookies:
                wait_for(
                    lambda b=bookie: metric(b, "bookkeeper_server_READ_ENTRY_REQUEST_count", success="true") > 100,
                    "reads on every bookie",
                )
            yield harness
        finally:
            for thread in traffic:
                thread.halt.set()
            for thread in traffic:
                thread.join(30)


def top_once(bkctl, uri, *args):
    result = bkctl("-u", uri, "top", "--once", "--interval", "1.2", *args, "-o", "json")
    return result, json.loads(result.stdout)


def test_once_fills_every_column_of_every_bookie(bkctl, bookies):
    def filled():
        """A sample in which every bookie's last closed latency window had adds and reads in it (a window without
        any leaves its quantiles empty) and a garbage collection finished between the scrapes."""
        result, doc = top_once(bkctl, bookies.service_uri)
        rows = doc["bookies"]
        if any(v is None for row in rows for k, v in row.items() if k != "error") or any(
            row["gc"] == "idle" for row in rows
        ):
            return None
        return result, doc

    result, doc = wait_for(filled, "every column of every bookie filled", timeout=60)
    assert result.exit_code == 0, result.stderr
    assert doc["intervalSeconds"] == 1.2 and doc["timestampIso"].endswith("Z")
    assert sorted(b["bookieId"] for b in doc["bookies"]) == sorted(b.bookie_id for b in bookies.bookies)
    for row in doc["bookies"]:
        assert [k for k, v in row.items() if v is None] == ["error"], row
        assert row["addsPerSec"] > 0 and row["readsPerSec"] > 0, row
        assert (row["state"], row["readOnly"], row["failedRequestsPerSec"]) == ("writable", False, 0), row
        assert row["rejectedPerSec"] == 0, row  # filled: both counters are there, unmoved
        assert 0 < row["addP50Ms"] <= row["addP99Ms"] and 0 < row["readP50Ms"] <= row["readP99Ms"], row
        assert row["journalFsyncP99Ms"] > 0 and row["requestsInFlight"] >= 0 and row["gc"] == "gc", row
        assert 0 < row["diskUsedPercent"] < 100 and row["diskFreeBytes"] > 0, row


def test_a_bookie_stopped_in_bursts_is_flagged_slow_by_top_and_by_cluster_check(bkctl, bookies):
    slowed, uri = bookies.bookies[0], bookies.service_uri
    halt = threading.Event()

    def bursts():
        while not halt.is_set():
            os.killpg(slowed.pid, signal.SIGSTOP)
            time.sleep(0.4)
            os.killpg(slowed.pid, signal.SIGCONT)
            time.sleep(0.3)

    burster = threading.Thread(target=bursts, daemon=True)
    burster.start()
    try:

        def flagged():
            rows = {r["bookieId"]: r for r in top_once(bkctl, uri)[1]["bookies"]}
            return rows if [b for b, r in rows.items() if r["slow"]] == [slowed.bookie_id] else None

        rows = wait_for(flagged, "top to flag the stopped bookie", timeout=30)
        assert all(r.startswith(("add p99 ", "read p99 ")) for r in rows[slowed.bookie_id]["slowReasons"]), rows

        def checked():
            result = bkctl("-u", uri, "cluster", "check", "--latency", "-o", "json")
            report = json.loads(result.stdout)
            named = [v["bookies"] for v in report["violations"] if v["category"] == "NUM_BOOKIES_SLOW"]
            return (result, report) if named == [[slowed.bookie_id]] else None

        result, report = wait_for(checked, "cluster check to name the stopped bookie", timeout=30)

        def listed():
            lines = bkctl("-u", uri, "cluster", "check", "--latency").stdout.splitlines()
            return lines if "NUM_BOOKIES_SLOW: 1" in lines else None

        lines = wait_for(listed, "cluster check's table to list the stopped bookie", timeout=30)
        plain = json.loads(bkctl("-u", uri, "cluster", "check", "-o", "json").stdout)
        assert plain["counts"]["NUM_BOOKIES_SLOW"] == 0  # only asked for: a quiet window's p99 says little
    finally:
        halt.set()
        burster.join()
        os.killpg(slowed.pid, signal.SIGCONT)
    assert result.exit_code == 0, result.stderr  # a warning: a slow bookie loses nothing
    [violation] = report["violations"]
    assert report["counts"]["NUM_BOOKIES_SLOW"] == 1 and violation["category"] == "NUM_BOOKIES_SLOW"
    assert " is " in violation["reason"] and "x the others' median " in violation["reason"]
    header = next(line for line in lines if line.startswith("LEDGER"))
    assert header.split() == ["LEDGER", "CATEGORY", "SEGMENT", "BOOKIES", "MISSING", "DETAIL"]
    row = next(line for line in lines if "NUM_BOOKIES_SLOW " in line).split()
    assert row[:5] == ["<none>", "NUM_BOOKIES_SLOW", "<none>", slowed.bookie_id, "<none>"]
    assert row[5] in ("add", "read") and row[6] == "p99", row


class Terminal:
    """bkctl top in a process of its own on a pseudo-terminal: what it draws, and keys typed."""

    def __init__(self, uri: str):
        self.master, self.slave = pty.openpty()
        env = {**os.environ, "COLUMNS": "200", "LINES": "40"}
        command = [sys.executable, "-m", "bkctl", "-u", uri, "top", "--interval", "0.5"]
        self.process = subprocess.Popen(command, stdin=self.slave, stdout=self.slave, stderr=self.slave, env=env)
        self.seen = b""

    def wait_for(self, text: str) -> None:
        ready = select.poll()  # not select(): a test process may hold more than FD_SETSIZE (1024) descriptors
        ready.register(self.master, select.POLLIN)

        def drawn():
            while ready.poll(50):
                self.seen += os.read(self.master, 1 << 16)
            return text.encode() in self.seen

        wait_for(drawn, f"top to draw {text!r}")

    def type(self, key: bytes) -> None:
        self.seen = b""
        os.write(self.master, key)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        os.close(self.master)
        os.close(self.slave)


def test_the_live_view_sorts_on_a_key_and_quits_on_q_or_ctrl_c(bookies):
    for quit_by in ("q", "ctrl-c"):
        terminal = Terminal(bookies.service_uri)
        try:
            terminal.wait_for("sorted by name")
            terminal.type(b"a")
            terminal.wait_for("sorted by adds/s")
            terminal.type(b"a")
            terminal.wait_for("sorted by adds/s reversed")
            if quit_by == "q":
                terminal.type(b"q")
            else:
                terminal.process.send_signal(signal.SIGINT)  # what a terminal's Ctrl-C sends its foreground process
            assert terminal.process.wait(20) == 0, terminal.seen
            assert b"error" not in terminal.seen and b"Traceback" not in terminal.seen
            lflag = termios.tcgetattr(terminal.slave)[3]
            assert lflag & termios.ICANON and lflag & termios.ECHO  # the terminal's modes as they were
        finally:
            terminal.close()


def test_an_unreachable_bookie_is_a_row_saying_so(bkctl, bookies):
    (dead,) = bookies.start(1, zkTimeout=30000)  # registered through CLI startup and both samples, under load too
    dead.stop(kill=True)  # still registered until its session expires
    result, doc = top_once(bkctl, bookies.service_uri)
    assert result.exit_code == 6
    rows = {r["bookieId"]: r for r in doc["bookies"]}
    assert rows[dead.bookie_id]["error"].startswith(f"metrics of bookie {dead.bookie_id} are unreachable")
    assert rows[dead.bookie_id]["addsPerSec"] is None and rows[dead.bookie_id]["slow"] is False
    assert all(rows[b.bookie_id]["addsPerSec"] > 0 for b in bookies.bookies[:3])
    assert result.stderr.startswith(f"warning: metrics of bookie {dead.bookie_id} are unreachable")

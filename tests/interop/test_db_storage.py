"""DbLedgerStorage on disk, against Apache BookKeeper 4.17.4 (../shared/bk-oracle, rocksdbjni from PySpark).

- Our RocksDB binding (rocksdict) and BookKeeper's own ``KeyValueStorageRocksDB`` (rocksdbjni) open each other's
  databases, SST files included.
- Java bookies with DbLedgerStorage write (the Java client, E3 W2 A2, one bookie killed -9 mid-write: an ensemble
  change), stop; our bookies start on their directories with their configuration files (same bookie ids, ports
  and cookies) and serve every entry; our bookies then take writes (one of them killed -9), stop, and the Java
  bookies start on the same directories again and serve every entry of both ledgers.
- bkctl's offline commands read the stopped Java bookies' files and agree with the BookKeeper shell.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import pytest

from bookie.local.process import free_port, spawn, stop_process_group
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.registration import BookieRegistry
from bookie.meta.store import MetadataStore
from bookie.storage.db.indexes import LOCATION_KEY, LONG

from interop.oracle import (
    ENV,
    JavaCluster,
    bk_read,
    bk_write,
    bk_write_during,
    compile_java,
    java_command,
    output,
    require_oracle,
)
from support.waiting import wait_for

require_oracle()

BOOKIES = 4  # one spare for the ensemble change of an E3 ledger


@pytest.fixture(scope="module")
def java(tmp_path_factory):
    cluster = JavaCluster.start(tmp_path_factory.mktemp("java-db"), BOOKIES, storage="db")
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def rocksdb_tool(tmp_path_factory):
    classes = compile_java(Path(__file__).with_name("java") / "RocksDbTool.java", tmp_path_factory.mktemp("classes"))
    return lambda *args: output_of(java_command(classes, "RocksDbTool", *args))


def output_of(command: list[str]) -> str:
    import subprocess

    done = subprocess.run(command, env=ENV, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_rocksdbjni_and_rocksdict_open_each_others_databases(rocksdb_tool, tmp_path):
    from bookie.storage.db.kv import KeyValueStorage

    (tmp_path / "java" / "current").mkdir(parents=True)
    rocksdb_tool("write", str(tmp_path / "java" / "current"), "locations", "EntryLocation", "5000")
    java_written = KeyValueStorage(tmp_path / "java", "locations", read_only=True)
    try:
        assert list(java_written.items()) == [(LOCATION_KEY.pack(i, i * 3), LONG.pack(i * 7)) for i in range(5000)]
        assert java_written.floor(LOCATION_KEY.pack(2500, (1 << 63) - 1))[0] == LOCATION_KEY.pack(2500, 7500)
    finally:
        java_written.close()
    for kind in ("locations", "ledgers"):
        ours = KeyValueStorage(tmp_path / "ours", kind)
        ours.write((LOCATION_KEY.pack(i, i * 3), LONG.pack(i * 7)) for i in range(3000))
        ours.compact()  # SST files, not only the write-ahead log
        ours.close()
        config_type = "EntryLocation" if kind == "locations" else "LedgerMetadata"
        lines = rocksdb_tool("dump", str(tmp_path / "ours" / "current"), kind, config_type).splitlines()
        assert lines[:-1] == [f"{LOCATION_KEY.pack(i, i * 3).hex()}\t{LONG.pack(i * 7).hex()}" for i in range(3000)]
        assert lines[-1] == f"floor\t{LOCATION_KEY.pack(1500, 4500).hex()}"


def test_bkctl_reads_a_stopped_java_bookies_files_as_the_bookkeeper_shell_does(java, bkctl):
    # on every bookie (an E3 ensemble of the four left bookie 1 out one time in four: the shell then has nothing to
    # list, "Entry -1 not found"), acknowledged by all, so that bookie 1's index holds every entry once it stops
    quorums = ["--ensemble", str(BOOKIES), "--write-quorum", str(BOOKIES), "--ack-quorum", str(BOOKIES)]
    ledger_id = bk_write(java.zk, "--n", "500", "--text", "db", "--suffix-index", *quorums)
    java.stop_bookie(1)
    try:
        conf, ledger_dir = str(java.conf(1)), java.root / "b1" / "ledgers"
        shell = re.findall(
            r"entry (\d+)\t:\t\(log: (\d+), pos: (\d+)\)", output("bk-shell", conf, "ledger", "-m", str(ledger_id))
        )
        ours = json.loads(
            bkctl("bookie", "inspect", "locations", str(ledger_dir), "--ledger", str(ledger_id), "-o", "json").output
        )
        assert shell and [tuple(map(int, row)) for row in shell] == [(r["entryId"], r["logId"], r["pos"]) for r in ours]
        for log_id in {r["logId"] for r in ours}:
            read = output("bk-shell", conf, "readlog", str(log_id))
            pattern = r"Lid=(\d+), Eid=(\d+), ByteOffset=(\d+), EntrySize=(\d+)"
            shell_log = [(int(lid), int(e), int(o) + 4, int(n)) for lid, e, o, n in re.findall(pattern, read)]
            listed = bkctl(
                "bookie", "inspect", "entrylog", str(ledger_dir / "current" / f"{log_id:x}.log"), "-o", "json"
            )
            assert shell_log == [(r["ledgerId"], r["entryId"], r["pos"], r["size"]) for r in json.loads(listed.output)]
        assert "Done checking DBStorage ledgers index" in output("bk-shell", conf, "check-db-ledgers-index")
        checked = bkctl("-c", conf, "bookie", "check-db-index", "--verify-entries", "-o", "json")
        assert checked.exit_code == 0, checked.output
        assert json.loads(checked.output)[0]["entriesVerified"] >= len(ours)
    finally:
        java.start_bookie(1)


class OurBookies:
    """Our bookies on the Java bookies' configuration files (their directories, ports and bookie ids), plus the
    ports of ours that Java does not use, on 127.0.0.1."""

    def __init__(self, java: JavaCluster, store: MetadataStore):
        self.java, self.registry = java, BookieRegistry(store)
        self.pids: dict[int, int] = {}

    def start(self, n: int) -> None:
        conf = self.java.root / f"b{n}" / "ours.conf"
        extra = f"prometheusStatsHttpPort={free_port()}\nprometheusStatsHttpAddress=127.0.0.1\n"
        conf.write_text(self.java.conf(n).read_text() + extra + f"bkctlAdminPort={free_port()}\n")
        command = [sys.executable, "-m", "bkctl", "bookie", "run", "--conf", str(conf)]
        self.pids[n] = spawn(command, self.java.root / f"b{n}" / "ours.log")

    def wait_registered(self) -> None:
        wanted = {self.java.bookie_id(n) for n in self.pids}
        wait_for(lambda: wanted <= {b.bookie_id for b in self.registry.list(writable=True)}, "our bookies", 120)

    def stop(self, n: int, kill: bool = False) -> None:
        stop_process_group(self.pids.pop(n), timeout=60, kill=kill)

    def stop_all(self) -> None:
        for n in list(self.pids):
            self.stop(n)


def write_through_a_kill(java: JavaCluster, store, count: int, kill) -> int:
    """The Java client writes ``count`` entries (E3 W2 A2); a second in, ``kill(bookie number)`` kills one bookie
    of the ensemble: the ledger changes ensemble. Its id."""

    def during(_ledger_id, ensemble):
        time.sleep(1.0)
        kill(java.bookie_ports.index(int(ensemble[0].rsplit(":", 1)[1])) + 1)

    ledger_id = bk_write_during(
        java.zk, "--n", str(count), "--text", "db", "--suffix-index", "--window", "10", during=during, timeout=300
    )
    segments = LedgerManager(store).read(ledger_id)[0].segments
    assert len(segments) >= 2 and segments[1].first_entry_id > 0, segments  # an ensemble change, entries before it
    return ledger_id


def every_entry(java: JavaCluster, ledger_id: int, count: int) -> None:
    assert bk_read(java.zk, ledger_id, "--no-recovery") == [(i, b"db-%d" % i) for i in range(count)]


def test_java_and_our_bookies_take_turns_on_the_same_directories(java, store, bkctl):
    java_ledger = write_through_a_kill(java, store, 20_000, java.kill)
    for n in range(1, BOOKIES + 1):
        java.stop_bookie(n)  # the killed one: already down (its journal is replayed by ours)
    ours = OurBookies(java, store)
    try:
        for n in range(1, BOOKIES + 1):
            ours.start(n)
        ours.wait_registered()
        every_entry(java, java_ledger, 20_000)
        assert bkctl("-u", java.service_uri, "cluster", "check", "--ledger", str(java_ledger)).exit_code == 0

        our_ledger = write_through_a_kill(java, store, 10_000, lambda n: ours.stop(n, kill=True))
        ours.stop_all()
    finally:
        for pid in ours.pids.values():
            stop_process_group(pid, kill=True)
    for n in range(1, BOOKIES + 1):
        java.start_bookie(n)
    every_entry(java, java_ledger, 20_000)
    every_entry(java, our_ledger, 10_000)
    # (no `cluster check` here: Java's DbLedgerStorage does not answer GET_LIST_OF_ENTRIES_OF_LEDGER, which it
    # needs — BookKeeper's getListOfEntriesOfLedger throws UnsupportedOperationException for it)

"""bkctl on a real Apache BookKeeper 4.17.4 cluster (../shared/bk-oracle): Java bookies, ledgers of the Java client.

One Java cluster for the module (4 bookies, so that a lost one can be recovered onto the others); the tests that
damage it (a lost index, a dead bookie) come last and use ledgers of their own.
"""

from __future__ import annotations

import json
import re

import pytest

from bookie.client import BookKeeper
from bookie.client.replay import LedgerReplay, ReplayEntry, payload_xor
from bookie.codec.write_set import entries_of_bookie
from bookie.meta.ledger_manager import LedgerManager

from interop.oracle import JavaCluster, bk_read, bk_write, bk_write_started, free_ports, require_oracle, run
from support.waiting import wait_for

require_oracle()

PASSWORD = "pw"  # bk-write's default


@pytest.fixture(scope="module")
def java(tmp_path_factory):
    cluster = JavaCluster.start(tmp_path_factory.mktemp("java"), 4)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def cli(bkctl, java):
    def run_cli(*args: str, input: str | None = None):
        return bkctl("-u", java.service_uri, *args, input=input)

    return run_cli


def entries(count: int, text: str = "entry") -> list[str]:
    return [f"{text}-{i}" for i in range(count)]


@pytest.mark.parametrize("v2", [False, True])
def test_bkctl_reads_what_the_java_client_wrote(java, cli, monkeypatch, v2):
    if v2:
        monkeypatch.setenv("BKCTL_USE_V2_WIRE_PROTOCOL", "true")
    ledger_id = bk_write(java.zk, "--n", "500", "--text", "entry", "--suffix-index")
    read = cli("ledger", "read", str(ledger_id), "--password", PASSWORD)
    assert read.exit_code == 0, read.stderr
    assert read.stdout.splitlines() == entries(500)
    tail = cli("ledger", "read", str(ledger_id), "--from", "498", "--password", PASSWORD, "-o", "json")
    assert [entry["entryId"] for entry in json.loads(tail.stdout)] == [498, 499]


def test_the_java_client_reads_what_bkctl_wrote(java, cli):
    created = cli(
        "ledger",
        "create",
        "--password",
        PASSWORD,
        "--digest",
        "crc32c",
        "--input",
        "-",
        input="".join(f"{e}\n" for e in entries(300, "ours")),
    )
    assert created.exit_code == 0, created.stderr
    ledger_id = int(created.stdout.split()[-1].split("/")[-1])
    assert bk_read(java.zk, ledger_id) == [(i, e.encode()) for i, e in enumerate(entries(300, "ours"))]
    assert bk_read(java.zk, ledger_id, "--v2") == [(i, e.encode()) for i, e in enumerate(entries(300, "ours"))]


def test_a_ledger_replayed_onto_java_bookies_is_read_back_by_the_java_client(java):
    """What a restore does per ledger (bookie/client/replay.py), onto Java bookies: claim under a new id, write with
    the stored LAC and length fields, read back from every replica, close; the Java client reads it."""
    custom = {"application": b"pulsar", "component": b"managed-ledger"}
    with BookKeeper(java.service_uri) as bk:
        source = bk.create_ledger(3, 2, 2, digest_type="mac", password=PASSWORD, custom_metadata=custom)
        source.add_entries((e.encode() for e in entries(300, "replayed")), max_outstanding=64)
        source_md = source.close()
        with bk.open_ledger(source.ledger_id, password=PASSWORD) as reader:
            stored = reader.read(0, source_md.last_entry_id)
        new_id = source.ledger_id + 1_000_000

        async def replay():
            replayed = await LedgerReplay.claim(bk.core, new_id, source_md, PASSWORD.encode(), ("bkctl.restore", b"1"))
            await replayed.write(ReplayEntry(e.entry_id, e.last_add_confirmed, e.length, e.payload) for e in stored)
            xor = payload_xor(source.ledger_id, ((e.entry_id, e.payload) for e in stored))
            await replayed.verify(xor, source.ledger_id)
            await replayed.verify(xor, source.ledger_id, every_replica=False)  # Java bookies list their entries
            return await replayed.close(source_md.last_entry_id, source_md.length)

        closed = bk.run(replay())
    assert set(closed.segments[0].bookies) <= {java.bookie_id(n) for n in range(1, 5)}
    assert closed.custom_metadata == custom and (closed.last_entry_id, closed.length) == (299, source_md.length)
    expected = [(i, e.encode()) for i, e in enumerate(entries(300, "replayed"))]
    assert bk_read(java.zk, new_id, "--digest", "MAC", "--password", PASSWORD) == expected


def test_a_backup_restored_onto_java_bookies_is_read_back_by_the_java_client(java, tmp_path):
    """`bkctl cluster restore` (Spark tasks writing, reading every replica back, closing) onto the Java bookies, of
    a backup of two ledgers the Java client wrote, under new ids; the Java client reads them."""
    import os
    import subprocess
    import sys

    from support.backups import write_backup

    crc = bk_write(java.zk, "--n", "200", "--text", "crc", "--suffix-index")
    mac = bk_write(java.zk, "--n", "50", "--text", "mac", "--suffix-index", "--digest", "MAC")
    with BookKeeper(java.service_uri) as bk:
        write_backup(tmp_path / "backup", bk, [crc, mac])
    id_map = {crc: crc + 1_000_000, mac: mac + 1_000_000}  # the ledgers are there: restored under other ids
    (tmp_path / "ids.txt").write_text("".join(f"{old} {new}\n" for old, new in id_map.items()))
    restore = ["cluster", "restore", "--from", str(tmp_path / "backup"), "--id-map", str(tmp_path / "ids.txt")]
    done = subprocess.run(
        [sys.executable, "-m", "bkctl", "-u", java.service_uri, *restore, "--yes", "--master", "local[1]", "-ojson"],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["created"] == sorted(id_map.values())
    assert bk_read(java.zk, id_map[crc]) == [(i, e.encode()) for i, e in enumerate(entries(200, "crc"))]
    macs = [(i, e.encode()) for i, e in enumerate(entries(50, "mac"))]
    assert bk_read(java.zk, id_map[mac], "--digest", "MAC") == macs


def test_bkctl_recovers_a_ledger_the_java_writer_left_open(java, cli, store):
    ledger_id = bk_write(java.zk, "--n", "120", "--text", "entry", "--suffix-index", "--no-close")
    dry = cli("ledger", "recover", str(ledger_id), "--password", PASSWORD, "--dry-run")
    assert dry.exit_code == 0 and not LedgerManager(store).read(ledger_id)[0].is_closed
    recovered = cli("ledger", "recover", str(ledger_id), "--password", PASSWORD)
    assert recovered.exit_code == 0, recovered.stderr
    md = LedgerManager(store).read(ledger_id)[0]
    assert md.is_closed and md.last_entry_id == 119  # every entry the Java client wrote, acknowledged or not
    assert bk_read(java.zk, ledger_id, "--no-recovery") == [(i, e.encode()) for i, e in enumerate(entries(120))]


def test_bkctl_deletes_a_java_ledger(java, cli, store):
    ledger_id = bk_write(java.zk, "--n", "10", "--text", "entry")
    assert cli("ledger", "delete", str(ledger_id), "--yes").exit_code == 0
    assert not LedgerManager(store).exists(ledger_id)
    assert run("bk-read", "--zk", java.zk, "--ledger", str(ledger_id), check=False).returncode != 0


@pytest.mark.parametrize("digest", ["CRC32", "MAC", "DUMMY"])
def test_every_digest_type_both_ways(java, cli, digest):
    ledger_id = bk_write(java.zk, "--n", "50", "--text", "java", "--suffix-index", "--digest", digest)
    read = cli("ledger", "read", str(ledger_id), "--password", PASSWORD)
    assert read.exit_code == 0, read.stderr
    assert read.stdout.splitlines() == entries(50, "java")
    created = cli(
        "ledger",
        "create",
        "--password",
        PASSWORD,
        "--digest",
        digest.lower(),
        "--input",
        "-",
        input="".join(f"{e}\n" for e in entries(50, "ours")),
    )
    assert created.exit_code == 0, created.stderr
    ours = int(created.stdout.split()[-1].split("/")[-1])
    assert bk_read(java.zk, ours, "--digest", digest) == [(i, e.encode()) for i, e in enumerate(entries(50, "ours"))]


def test_a_wrong_password_is_refused_on_a_java_ledger(java, cli):
    ledger_id = bk_write(java.zk, "--n", "5", "--text", "entry")
    for command in (("read",), ("recover",)):
        refused = cli("ledger", *command, str(ledger_id), "--password", "not-" + PASSWORD)
        assert refused.exit_code == 4, refused.output
        assert str(ledger_id) in refused.stderr and PASSWORD not in refused.stderr


def test_bkctl_recover_fences_a_live_java_writer(java, cli, store):
    """The writer is alive: once bkctl fenced the ledger, the Java writer's next add fails (EFENCED from its
    bookies) and the ledger stays closed where the recovery closed it, with every entry the writer had sent."""
    writer, ledger_id, _ = bk_write_started(
        java.zk, "--n", "1000000", "--text", "entry", "--suffix-index", "--window", "1"
    )
    try:
        wait_for(
            lambda: (
                cli("ledger", "read", str(ledger_id), "--password", PASSWORD, "--from", "20", "--to", "20").exit_code
                == 0
            ),
            "the Java writer's first entries",
            60,
        )
        recovered = cli("ledger", "recover", str(ledger_id), "--password", PASSWORD, "-o", "json")
        assert recovered.exit_code == 0, recovered.output
        _, err = writer.communicate(timeout=120)
    finally:
        if writer.poll() is None:
            writer.kill()
    assert writer.returncode != 0 and re.search(r"[Ff]enced|LedgerClosed", err), err[-2000:]
    md = LedgerManager(store).read(ledger_id)[0]
    assert md.is_closed and md.last_entry_id >= 20
    assert bk_read(java.zk, ledger_id, "--no-recovery") == [(i, b"entry-%d" % i) for i in range(md.last_entry_id + 1)]


def test_bookie_info_of_java_bookies(java, cli):
    info = cli("bookie", "info", "--all", "-o", "json")
    assert info.exit_code == 0, info.stderr
    docs = json.loads(info.stdout)
    assert sorted(d["bookieId"] for d in docs) == sorted(java.bookie_id(n) for n in range(1, 5))
    assert all(0 < d["freeDiskSpace"] < d["totalDiskCapacity"] for d in docs)


@pytest.mark.parametrize("command", [("gc",), ("gc-status",), ("compaction", "suspend"), ("readonly", "--on")])
def test_admin_commands_on_a_java_bookie_say_what_bookkeeper_offers(java, cli, command):
    bookie_id = java.bookie_id(1)
    result = (
        cli("bookie", *command[:1], bookie_id, *command[1:])
        if command[0] == "readonly"
        else cli("bookie", *command, bookie_id)
    )
    assert result.exit_code == 7, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    (line,) = lines
    assert bookie_id in line and "httpServerEnabled=true" in line


def test_bookie_metrics_of_a_java_bookie_asks_where_they_are(java, cli):
    """A Java bookie publishes no metrics address (this one serves none: no Prometheus provider in the oracle)."""
    bookie_id = java.bookie_id(1)
    result = cli("bookie", "metrics", bookie_id)
    assert (result.exit_code, result.stdout) == (7, "")
    assert (
        result.stderr == f"warning: bookie {bookie_id} publishes no address for its metrics: pass the port it "
        "serves /metrics on (--metrics-port: prometheusStatsHttpPort, 8000 by default in BookKeeper) or its HTTP "
        "admin API's (--http-port)\n"
    )
    (port,) = free_ports(1)  # nothing serves /metrics there
    result = cli("bookie", "metrics", bookie_id, "--metrics-port", str(port), "--interval", "0.1")
    assert result.exit_code == 6 and f"metrics of bookie {bookie_id}" in result.stderr


def test_bench_write_and_read_on_java_bookies(cli):
    write = cli("bench", "write", "--entries", "5000", "-o", "json")
    assert write.exit_code == 0, write.stderr
    assert json.loads(write.stdout)["entries"] == 5000
    read = cli("bench", "read", "--entries", "5000", "-o", "json")
    assert read.exit_code == 0, read.stderr
    assert json.loads(read.stdout)["entries"] == 5000


def test_export_and_verify_java_ledgers(java, cli, tmp_path):
    ledger_id = bk_write(java.zk, "--n", "2000", "--text", "entry", "--suffix-index")
    exported = cli(
        "ledger",
        "export",
        str(ledger_id),
        "--to",
        str(tmp_path / "out"),
        "--verify",
        "--master",
        "local[1]",
        "-o",
        "json",
    )
    assert exported.exit_code == 0, exported.stderr
    assert json.loads(exported.stdout)["entries"] == 2000


def test_cluster_check_is_clean_then_names_the_entries_a_java_bookie_lost(java, cli, store):
    ledger_id = bk_write(
        java.zk,
        "--n",
        "40",
        "--text",
        "x",
        "--suffix-index",
        "--ensemble",
        "3",
        "--write-quorum",
        "2",
        "--ack-quorum",
        "2",
    )
    clean = cli("cluster", "check")
    assert clean.exit_code == 0, clean.output
    md = LedgerManager(store).read(ledger_id)[0]
    index = 0
    n = java.bookie_ports.index(int(md.segments[0].bookies[index].rsplit(":", 1)[1])) + 1
    java.stop_bookie(n)
    try:  # a Java bookie's index file: current/<(id >> 8) & 0xff>/<id & 0xff>/<id>.idx, hex
        (
            java.root
            / f"b{n}"
            / "ledgers"
            / "current"
            / f"{(ledger_id >> 8) & 0xFF:x}"
            / f"{ledger_id & 0xFF:x}"
            / f"{ledger_id:x}.idx"
        ).unlink()
    finally:
        java.start_bookie(n)
    damaged = cli("cluster", "check", "--ledger", str(ledger_id), "-o", "json")
    assert damaged.exit_code == 3, damaged.output
    (violation,) = json.loads(damaged.stdout)["violations"]
    assert violation["ledgerId"] == ledger_id
    expected = list(entries_of_bookie(index, 0, 39, 3, 2))  # all it held: one range of its share
    assert violation["missingEntries"] == {java.bookie_id(n): [[expected[0], expected[-1]]]}
    assert violation["missingEntryCounts"] == {java.bookie_id(n): len(expected)}
    assert cli("ledger", "delete", str(ledger_id), "--yes").exit_code == 0  # not the next test's damage


def test_bkctl_recovers_a_dead_java_bookie(java, cli, store):
    dead, ledger_ids, on_dead = java.bookie_id(4), [], []
    while len(on_dead) < 2:  # E3 of 4 bookies: 3 in 4 ledgers are on it
        ledger_ids.append(
            bk_write(
                java.zk,
                "--n",
                "200",
                "--text",
                "entry",
                "--suffix-index",
                "--ensemble",
                "3",
                "--write-quorum",
                "2",
                "--ack-quorum",
                "2",
            )
        )
        if dead in LedgerManager(store).read(ledger_ids[-1])[0].segments[0].bookies:
            on_dead.append(ledger_ids[-1])
    java.stop_bookie(4)
    recovered = cli("bookie", "recover", dead, "--yes", "-o", "json")
    assert recovered.exit_code == 0, recovered.output
    for ledger_id in ledger_ids:
        md = LedgerManager(store).read(ledger_id)[0]
        assert all(dead not in segment.bookies for segment in md.segments)
        assert bk_read(java.zk, ledger_id, "--no-recovery") == [(i, e.encode()) for i, e in enumerate(entries(200))]

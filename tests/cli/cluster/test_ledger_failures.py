"""Failure paths of the writing commands, on real bookies and real processes: a failed or interrupted write keeps
what was acknowledged (the ledger is closed at its last acknowledged entry and named), bench deletes its ledgers."""

import os
import re
import signal
import subprocess
import sys

import pytest

from bookie.client import BookKeeper
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.ledger_metadata import LedgerState

from support.cluster import adds_ok, metric, reads_ok
from support.waiting import wait_for


def bkctl_process(uri, *args, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen(
        [sys.executable, "-m", "bkctl", "-u", uri, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )


@pytest.fixture
def big_input(tmp_path):
    path = tmp_path / "entries.txt"
    path.write_bytes(b"".join(b"entry-%07d\n" % i for i in range(1_500_000)))
    return path


def long_polls(bookie) -> float:
    return metric(bookie, "bookkeeper_server_READ_ENTRY_LONG_POLL_PRE_WAIT_count")


def lines(count: int) -> list[bytes]:
    return [b"entry-%07d" % i for i in range(count)]


def ledger_ids(store) -> list[int]:
    return list(LedgerManager(store).iter_ledger_ids())


def create_until_stored(harness, bookie, big_input, tmp_path, then):
    """Run `ledger create` (E1 W1 A1) of ``big_input``; once 20,000 entries are stored, call ``then(proc)``.
    Returns the exit code, stderr, the ledger's id and its metadata."""
    proc = bkctl_process(
        harness.service_uri,
        "ledger",
        "create",
        "-e",
        "1",
        "-w",
        "1",
        "-a",
        "1",
        "--input",
        str(big_input),
        tmp_path=tmp_path,
    )
    try:
        wait_for(lambda: adds_ok(bookie) >= 20_000, "20,000 entries stored", 60)
        then(proc)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    (lid,) = ledger_ids(harness.store)
    md, _ = LedgerManager(harness.store).read(lid)
    return proc.returncode, stderr.decode(), lid, md


def test_a_write_that_fails_keeps_the_acknowledged_entries(harness, big_input, tmp_path):
    (bookie,) = harness.start(1)
    returncode, stderr, lid, md = create_until_stored(
        harness, bookie, big_input, tmp_path, lambda proc: bookie.stop(kill=True)
    )
    held = md.last_entry_id + 1
    message = stderr.strip()
    assert returncode == 1 and "\n" not in message, message
    assert message.startswith("error: ") and f"ledger {lid} closed with its {held} acknowledged entries" in message
    assert md.state == LedgerState.CLOSED and held >= 20_000
    harness.restart(bookie)
    with BookKeeper(harness.service_uri) as bk:
        assert [e.payload for e in bk.open_ledger(lid).read(0, md.last_entry_id)] == lines(held)


@pytest.mark.parametrize(
    ("sig", "code", "word"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
)
def test_an_interrupted_create_closes_its_ledger_and_names_it(harness, big_input, tmp_path, sig, code, word):
    (bookie,) = harness.start(1)
    returncode, stderr, lid, md = create_until_stored(
        harness, bookie, big_input, tmp_path, lambda proc: proc.send_signal(sig)
    )
    held = md.last_entry_id + 1
    assert stderr == f"error: {word} (ledger {lid} closed with its {held} acknowledged entries)\n"
    assert returncode == code and md.state == LedgerState.CLOSED and held >= 20_000
    with BookKeeper(harness.service_uri) as bk:
        assert [e.payload for e in bk.open_ledger(lid).read(0, md.last_entry_id)] == lines(held)


@pytest.mark.parametrize(
    ("sig", "code", "word"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
)
def test_an_interrupted_bench_write_deletes_its_ledger(harness, tmp_path, sig, code, word):
    bookies = harness.start(3)
    proc = bkctl_process(harness.service_uri, "bench", "write", "--time", "120", tmp_path=tmp_path)
    try:
        wait_for(lambda: sum(adds_ok(b) for b in bookies) >= 10_000, "10,000 entries stored", 60)
        (lid,) = ledger_ids(harness.store)
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert stderr.decode() == f"error: {word} (bench ledger {lid} deleted)\n"
    assert proc.returncode == code and ledger_ids(harness.store) == []


def test_a_ledger_deleted_while_it_is_read_is_named(harness, bkctl, tmp_path):
    bookies = harness.start(3)
    count = 200_000
    with BookKeeper(harness.service_uri) as bk:
        ledger = bk.create_ledger(3, 2, 2)
        ledger.add_entries(b"e%06d" % i for i in range(count))
        ledger.close()
    lid = ledger.ledger_id
    proc = bkctl_process(harness.service_uri, "ledger", "read", str(lid), tmp_path=tmp_path)
    try:
        # Nobody reads its stdout yet: it stops once its read-ahead is full (a few windows, not the whole ledger).
        wait_for(lambda: sum(reads_ok(b) for b in bookies) >= 50_000, "the reader to be under way", 60)
        for args in (("ledger", "delete", str(lid), "--yes"), ("bookie", "gc", "--all", "--wait")):
            result = bkctl("-u", harness.service_uri, *args)
            assert result.exit_code == 0, result.stderr
        assert sum(reads_ok(b) for b in bookies) < count  # the rest of the ledger is read after it was deleted
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert stderr.decode() == f"error: ledger {lid} was deleted\n" and proc.returncode == 5
    assert 0 < stdout.count(b"\n") < count


def test_a_create_reading_a_quiet_pipe_is_still_interruptible(harness, tmp_path):
    """The input blocks (the producer is alive but writes nothing): SIGTERM still closes the ledger and exits."""
    (bookie,) = harness.start(1)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bkctl",
            "-u",
            harness.service_uri,
            "ledger",
            "create",
            "-e",
            "1",
            "-w",
            "1",
            "-a",
            "1",
            "--input",
            "-",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    try:
        proc.stdin.write(b"".join(b"entry-%07d\n" % i for i in range(5000)))
        proc.stdin.flush()
        wait_for(lambda: adds_ok(bookie) >= 5000, "5,000 entries stored", 60)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)  # stdin stays open: the read of the input blocks all along
        stderr = proc.stderr.read()
    finally:
        proc.kill()
        proc.stdin.close()
    (lid,) = ledger_ids(harness.store)
    assert stderr.decode() == f"error: terminated (ledger {lid} closed with its 5000 acknowledged entries)\n"
    assert proc.returncode == 143
    md, _ = LedgerManager(harness.store).read(lid)
    assert md.state == LedgerState.CLOSED and md.last_entry_id == 4999


@pytest.mark.parametrize(
    ("sig", "code", "word"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
)
def test_an_interrupted_follow_leaves_no_task_behind(harness, tmp_path, sig, code, word):
    """`ledger read --follow` waits on a long poll of every bookie of the ensemble: interrupted, it ends them
    before the client closes, so none dies later of the closed connection with a traceback."""
    bookies = harness.start(3)
    with BookKeeper(harness.service_uri) as bk:
        ledger = bk.create_ledger(3, 2, 2)
        ledger.add_entries(b"e%d" % i for i in range(10))
        ledger.add_entries([b"e10"])  # sent once the first 10 are acknowledged: it carries LAC 9 to the bookies
        proc = bkctl_process(
            harness.service_uri, "ledger", "read", str(ledger.ledger_id), "--follow", tmp_path=tmp_path
        )
        try:
            # Up to the LAC, then a long poll on every bookie of the ensemble.
            printed = [proc.stdout.readline() for _ in range(10)]
            wait_for(lambda: sum(long_polls(b) for b in bookies) >= 3, "the reader to wait on every bookie", 60)
            proc.send_signal(sig)
            stdout, stderr = proc.communicate(timeout=60)
        finally:
            proc.kill()
    assert b"".join(printed) + stdout == b"".join(b"e%d\n" % i for i in range(10))
    assert stderr.decode() == f"error: {word}\n"
    assert proc.returncode == code


def test_an_interrupted_recover_says_what_it_did_and_a_rerun_resumes_at_the_entry(harness, bkctl, tmp_path):
    """Interrupted, `bookie recover` keeps what the replacement acknowledged (the segment is split there: plain
    BookKeeper metadata), says so, and a rerun copies only the rest."""
    bookies = harness.start(3)
    count = 20_000
    payloads = [b"%05d" % i + b"x" * 507 for i in range(count)]
    with BookKeeper(harness.service_uri) as bk:
        ledger = bk.create_ledger(2, 2, 2)
        ledger.add_entries(payloads)
        ledger.close()
    lid = ledger.ledger_id
    md, _ = LedgerManager(harness.store).read(lid)
    victim = next(b for b in bookies if b.bookie_id == md.segments[0].bookies[0])
    (target,) = [b for b in bookies if b.bookie_id not in md.segments[0].bookies]
    victim.stop()
    # 1 MB/s: the 10 MB the victim held take about 10 s
    proc = bkctl_process(
        harness.service_uri, "bookie", "recover", victim.bookie_id, "--yes", "--rate", "1000000", tmp_path=tmp_path
    )
    try:
        wait_for(lambda: adds_ok(target) >= 2000, "2,000 entries copied", 60)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    match = re.fullmatch(
        r"error: interrupted \(0 of 1 ledgers re-replicated, 0 fragments, [\d,]+ entries copied, "
        rf"ledger {lid} copied up to entry (\d+); 1 ledgers left: run it again to go on from there\)\n",
        stderr.decode(),
    )
    assert match and proc.returncode == 130, stderr
    stop = int(match.group(1)) + 1
    assert 2000 <= stop < count
    split, _ = LedgerManager(harness.store).read(lid)
    kept = (target.bookie_id, md.segments[0].bookies[1])
    assert [(s.first_entry_id, s.bookies) for s in split.segments] == [(0, kept), (stop, md.segments[0].bookies)]

    before = adds_ok(target)
    rerun = bkctl("-u", harness.service_uri, "bookie", "recover", victim.bookie_id, "--yes")
    assert rerun.exit_code == 0, rerun.stderr
    assert adds_ok(target) - before == count - stop  # from the entry it stopped at, not from the ledger's first
    done, _ = LedgerManager(harness.store).read(lid)
    assert [(s.first_entry_id, s.bookies) for s in done.segments] == [(0, kept), (stop, kept)]
    with BookKeeper(harness.service_uri) as bk:
        assert [e.payload for e in bk.open_ledger(lid).read(0, count - 1)] == payloads

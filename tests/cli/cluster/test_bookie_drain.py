"""bookie drain against real bookies: a running bookie emptied while a writer writes and a reader tails, then its
copies collected by its GC; a drain killed with SIGKILL and run again; and what it refuses."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

from admin.bookie_admin import storage_usage
from bookie.client import BookKeeper
from bookie.client.move import MovementLock
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.registration import BookieRegistry

from support.checks import check, ledgers_naming, write_ledgers
from support.waiting import wait_for

QUORUM = (3, 3, 2)


def most_named(bkctl, uri, bookies):
    """The bookie that the most ledgers name."""
    return max(bookies, key=lambda b: len(ledgers_naming(bkctl, uri, b.bookie_id)))


def write_large(uri, count: int, entries: int, size: int) -> list[int]:
    """Closed ledgers of ``entries`` entries of ``size`` bytes each: entry i is ``entry-i`` padded with dots."""
    with BookKeeper(uri) as bk:
        ids = []
        for _ in range(count):
            ledger = bk.create_ledger(*QUORUM)
            ledger.add_entries(padded(i, size) for i in range(entries))
            ledger.close()
            ids.append(ledger.ledger_id)
        return ids


def padded(i: int, size: int) -> bytes:
    return (b"entry-%d" % i).ljust(size, b".")


def read_all(uri, ledger_ids) -> dict[int, list[bytes]]:
    with BookKeeper(uri) as bk:
        found = {}
        for ledger_id in ledger_ids:
            handle = bk.open_ledger(ledger_id)
            last = handle.last_add_confirmed
            found[ledger_id] = [e.payload for e in handle.read(0, last)] if last >= 0 else []
        return found


class Writer(threading.Thread):
    """Adds an entry every few milliseconds to an open ledger whose first ensemble names ``bookie_id``."""

    def __init__(self, uri: str, bookie_id: str):
        super().__init__(daemon=True)
        self.bk = BookKeeper(uri)
        self.ledger = self.bk.create_ledger(*QUORUM)
        while bookie_id not in self.ledger.ensemble:  # 3 of 4 bookies: a few tries at most
            self.ledger.close()
            self.ledger = self.bk.create_ledger(*QUORUM)
        self.acked: list[int] = []
        self.error: BaseException | None = None
        self.halt = threading.Event()

    def run(self):
        try:
            while not self.halt.is_set():
                entry_id = self.ledger.add_entry(b"w-%d" % len(self.acked))
                self.acked.append(entry_id)
                time.sleep(0.01)
        except BaseException as exc:  # noqa: BLE001 - judged by the test
            self.error = exc

    def finish(self) -> int:
        self.halt.set()
        self.join(30)
        self.ledger.close()
        self.bk.close()
        return self.ledger.ledger_id


class Tailer(threading.Thread):
    """Follows a ledger as a tailing reader does: its metadata anew each time, entries up to the LAC, checked."""

    def __init__(self, uri: str, ledger_id: int):
        super().__init__(daemon=True)
        self.uri, self.ledger_id = uri, ledger_id
        self.read: list[bytes] = []
        self.error: BaseException | None = None
        self.halt = threading.Event()

    def run(self):
        try:
            with BookKeeper(self.uri) as bk:
                while not self.halt.is_set():
                    handle = bk.open_ledger(self.ledger_id, recovery=False)
                    lac = handle.read_lac()
                    if lac >= len(self.read):
                        self.read += [e.payload for e in handle.read(len(self.read), lac)]
                    time.sleep(0.02)
        except BaseException as exc:  # noqa: BLE001 - judged by the test
            self.error = exc


def test_a_running_bookie_is_drained_while_a_writer_writes_and_a_reader_tails(harness, bkctl, cluster):
    uri = harness.service_uri
    bookies = harness.start(4, gcOverreplicatedLedgerWaitTime=1000)
    closed = write_ledgers(uri, 6, quorum=QUORUM, entries=40)
    victim = most_named(bkctl, uri, bookies)
    writer = Writer(uri, victim.bookie_id)
    writer.start()
    wait_for(lambda: len(writer.acked) >= 20, "the writer's first entries")
    tailer = Tailer(uri, writer.ledger.ledger_id)
    tailer.start()
    with BookKeeper(uri) as stale:  # a reader that opened a ledger before the drain and reads it after
        early = stale.open_ledger(closed[0])

        result = bkctl("-u", uri, "bookie", "drain", victim.bookie_id, "--yes", "--wait-writers", "30", "-o", "json")
        assert result.exit_code == 0, result.stdout + result.stderr
        doc = json.loads(result.stdout)
        assert doc["complete"] and doc["open"] == [] and doc["failed"] == {} and doc["busy"] == []
        assert doc["bookies"] == [{"bookieId": victim.bookie_id, "readOnly": True, "why": None}]
        moved = {m["ledgerId"] for m in doc["moved"]}
        assert set(closed) & set(ledgers_naming(bkctl, uri, victim.bookie_id)) == set()
        assert writer.ledger.ledger_id in moved  # its first segment, closed by the writer's ensemble change
        assert {m["to"] for m in doc["moved"]} <= {b.bookie_id for b in bookies} - {victim.bookie_id}
        assert doc["nextSteps"][0] == f"bkctl cluster check-impact --bookie {victim.bookie_id}"
        assert check(bkctl, uri)[0] == 0  # while the writer still writes
        assert [e.payload for e in early.read(0, 39)] == [b"entry-%d" % i for i in range(40)]

    wait_for(lambda: len(tailer.read) >= len(writer.acked) - 5, "the tailing reader to catch up")
    written = writer.finish()
    tailer.halt.set()
    tailer.join(30)
    assert writer.error is None and tailer.error is None, (writer.error, tailer.error)
    assert tailer.read == [b"w-%d" % i for i in range(len(tailer.read))]
    assert ledgers_naming(bkctl, uri, victim.bookie_id) == []
    impact = bkctl("-u", uri, "cluster", "check-impact", "--bookie", victim.bookie_id)
    assert impact.exit_code == 0, impact.stdout + impact.stderr
    assert check(bkctl, uri)[0] == 0

    # its copies are over-replicated now: its GC forgets them (gcOverreplicatedLedgerWaitTime)
    (registered,) = BookieRegistry(cluster).list(writable=False, readonly=True)  # it stays read-only
    assert registered.bookie_id == victim.bookie_id
    assert moved | {written} <= set(storage_usage(registered).local_ledgers)

    def collected() -> bool:  # a GC run looks for them when gcOverreplicatedLedgerWaitTime passed since its last look
        assert bkctl("-u", uri, "bookie", "gc", victim.bookie_id, "--wait").exit_code == 0
        return set(storage_usage(registered).local_ledgers) & (moved | {written}) == set()

    wait_for(collected, "its GC to forget the moved ledgers", 60)

    victim.stop()
    expected = {lid: [b"entry-%d" % i for i in range(40)] for lid in closed}
    expected[written] = [b"w-%d" % i for i in range(len(writer.acked))]
    assert read_all(uri, [*closed, written]) == expected
    nothing = bkctl("-u", uri, "bookie", "decommission", victim.bookie_id, "--yes", "-o", "json")
    assert nothing.exit_code == 0 and sum(r["entries"] for r in json.loads(nothing.stdout)["rounds"]) == 0


def test_an_idle_writer_is_listed_and_never_fenced(harness, bkctl):
    uri = harness.service_uri
    bookies = harness.start(4)
    with BookKeeper(uri) as bk:
        idle = bk.create_ledger(*QUORUM)
        idle.add_entries(b"idle-%d" % i for i in range(10))
        victim = next(b for b in bookies if b.bookie_id == idle.ensemble[0])
        result = bkctl("-u", uri, "bookie", "drain", victim.bookie_id, "--yes", "--wait-writers", "1")
        assert result.exit_code == 3, result.stdout + result.stderr
        assert f"ledger/{idle.ledger_id} open on {victim.bookie_id}: " in result.stdout
        assert f"`bkctl ledger recover {idle.ledger_id}` closes it now" in result.stdout
        assert f"bookie/{victim.bookie_id} left read-only: `bkctl bookie readonly {victim.bookie_id} --off`" in (
            result.stdout
        )
        idle.add_entry(b"idle-10")  # the writer is alive: not fenced; its add moves it off the read-only bookie
        assert victim.bookie_id not in bk.ledger_metadata(idle.ledger_id).segments[-1].bookies
        again = bkctl("-u", uri, "bookie", "drain", victim.bookie_id, "--yes", "-o", "json")
        assert again.exit_code == 0, again.stdout + again.stderr
        assert [m["ledgerId"] for m in json.loads(again.stdout)["moved"]] == [idle.ledger_id]
        idle.close()
    assert read_all(uri, [idle.ledger_id]) == {idle.ledger_id: [b"idle-%d" % i for i in range(11)]}


def drain_process(conf, *args) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "bkctl", "-c", str(conf), "bookie", "drain", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        cwd=conf.parent,
    )


def test_a_drain_interrupted_then_killed_midway_completes_when_run_again(harness, bkctl, cluster, tmp_path):
    uri = harness.service_uri
    bookies = harness.start(4)
    ledgers = write_large(uri, 8, entries=100, size=2048)  # about 1.2 MiB on the victim, moved at 0.3 MB/s
    victim = most_named(bkctl, uri, bookies)
    named = set(ledgers_naming(bkctl, uri, victim.bookie_id))
    conf = tmp_path / "bkctl.conf"  # a killed drain's session (and locks) expire 8 s after it: the check fits
    conf.write_text(f"metadataServiceUri={uri}\nzkTimeout=8000\n")

    def naming() -> set[int]:
        return set(ledgers_naming(bkctl, uri, victim.bookie_id))

    # Ctrl-C: it says what it did and what is left, and frees the cluster's movement lock at once
    drain = drain_process(conf, victim.bookie_id, "--yes", "--rate", "0.3")
    try:
        wait_for(lambda: len(naming()) < len(named), "a first move", 60)
        drain.send_signal(signal.SIGINT)
        _, stderr = drain.communicate(timeout=60)
    finally:
        drain.kill()
    assert drain.returncode == 130, stderr
    assert re.fullmatch(
        rf"error: interrupted \((\d+) replicas moved, [\d.]+ [KM]iB copied(, ledger \d+ copied up to entry \d+)*; "
        rf"about \d+ left: run it again to go on; {re.escape(victim.bookie_id)} left read-only\)\n",
        stderr.decode(),
    ), stderr
    assert MovementLock(cluster, "").holder() is None
    after_interrupt = naming()
    assert after_interrupt and after_interrupt < named

    # kill -9: every ledger stays fully replicated; a rerun waits for its session to expire, taking its locks
    drain = drain_process(conf, victim.bookie_id, "--yes", "--rate", "0.1")  # what is left takes ~8 s: killed midway
    try:
        wait_for(lambda: len(naming()) < len(after_interrupt), "another move", 60)
        os.kill(drain.pid, signal.SIGKILL)
    finally:
        drain.wait(30)
    left = naming()
    assert left and left < after_interrupt, "killed midway"
    assert check(bkctl, uri)[0] == 0
    result = bkctl("-u", uri, "bookie", "drain", victim.bookie_id, "--yes", "-o", "json")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert f"(pid {drain.pid}, no longer running): waiting for its ZooKeeper session to expire" in result.stderr
    assert {m["ledgerId"] for m in json.loads(result.stdout)["moved"]} == left
    assert naming() == set()
    victim.stop()
    assert read_all(uri, ledgers) == {lid: [padded(i, 2048) for i in range(100)] for lid in ledgers}
    assert check(bkctl, uri)[0] == 0


def test_a_dry_run_changes_nothing_and_what_a_drain_refuses(harness, bkctl, cluster):
    uri = harness.service_uri
    bookies = harness.start(4)
    ledgers = write_ledgers(uri, 4, quorum=QUORUM, entries=10)
    victim = most_named(bkctl, uri, bookies)
    named = ledgers_naming(bkctl, uri, victim.bookie_id)
    versions = {lid: LedgerManager(cluster).read(lid)[1] for lid in ledgers}

    dry = bkctl("-u", uri, "bookie", "drain", victim.bookie_id, "--dry-run", "-o", "json")
    assert dry.exit_code == 0, dry.stderr
    plan = json.loads(dry.stdout)
    assert sorted({m["ledgerId"] for m in plan["moves"]}) == sorted(named)
    assert all(m["from"] == victim.bookie_id and m["to"] not in (None, victim.bookie_id) for m in plan["moves"])
    assert plan["totals"]["bytes"] == sum(m["bytes"] for m in plan["moves"]) > 0
    assert {entry["from"] for entry in plan["load"]} == {"storage"}
    text = bkctl("-u", uri, "bookie", "drain", victim.bookie_id, "--dry-run")
    assert text.stdout.splitlines()[0].split() == ["LEDGER", "SEGMENT", "FROM", "BYTES", "TO"]
    assert text.stdout.splitlines()[-1].startswith(f"total: {len(plan['moves'])} replicas of {len(named)} ledgers")
    assert {lid: LedgerManager(cluster).read(lid)[1] for lid in ledgers} == versions
    assert victim.bookie_id in {b.bookie_id for b in BookieRegistry(cluster).list(writable=True)}  # not read-only

    # E=3 ledgers on 4 bookies: one that names both of two drained bookies has one replica with nowhere to go
    ensemble = LedgerManager(cluster).read(named[0])[0].segments[0].bookies
    pair = [victim.bookie_id, next(b for b in ensemble if b != victim.bookie_id)]
    crowded = bkctl("-u", uri, "bookie", "drain", *pair, "--yes")
    assert crowded.exit_code == 3 and "have a replica no writable bookie can take" in crowded.stderr, crowded.stderr
    assert {lid: LedgerManager(cluster).read(lid)[1] for lid in ledgers} == versions

    unknown = bkctl("-u", uri, "bookie", "drain", "127.0.0.1:1", "--yes")
    assert unknown.exit_code == 5 and "no bookie 127.0.0.1:1" in unknown.stderr
    with MovementLock(cluster, "a rebalance"):
        held = bkctl("-u", uri, "bookie", "drain", victim.bookie_id, "--yes")
    assert held.exit_code == 1 and "a rebalance (pid" in held.stderr, held.stderr
    assert victim.bookie_id in {b.bookie_id for b in BookieRegistry(cluster).list(writable=True)}
    stopped = next(b for b in bookies if b is not victim)
    stopped.stop()  # a clean stop unregisters at once; its cookie stays
    refused = bkctl("-u", uri, "bookie", "drain", stopped.bookie_id, "--yes")
    assert refused.exit_code == 2, refused.stderr
    assert f"retire a stopped one with `bkctl bookie decommission {stopped.bookie_id}`" in refused.stderr


def test_a_bookie_with_no_admin_service_has_its_closed_ledgers_moved_only(harness, bkctl):
    """As a Java bookie without its HTTP API: nothing can make it read-only, so its writers never move off."""
    uri = harness.service_uri
    harness.start(3)
    (bare,) = harness.start(1, bkctlAdminPort=-1)
    closed = write_ledgers(uri, 4, quorum=QUORUM, entries=10)
    plan = json.loads(
        bkctl("-u", uri, "bookie", "drain", harness.bookies[0].bookie_id, "--dry-run", "-o", "json").stdout
    )
    assert {e["bookieId"]: e["from"] for e in plan["load"]}[bare.bookie_id] == "metadata"  # it has no storage view
    with BookKeeper(uri) as bk:
        writing = bk.create_ledger(*QUORUM)
        while bare.bookie_id not in writing.ensemble:
            writing.close()
            writing = bk.create_ledger(*QUORUM)
        writing.add_entries(b"open-%d" % i for i in range(5))
        started = time.monotonic()
        result = bkctl("-u", uri, "bookie", "drain", bare.bookie_id, "--yes", "--wait-writers", "60", "-o", "json")
        assert time.monotonic() - started < 30  # no writer would move off a writable bookie: not waited for
        assert result.exit_code == 3, result.stdout + result.stderr
        assert f"warning: bookie/{bare.bookie_id} cannot be made read-only (" in result.stderr
        assert "its open ledgers' new entries (and new ledgers) may still go to it" in result.stderr
        doc = json.loads(result.stdout)
        assert doc["bookies"][0]["readOnly"] is False and bare.bookie_id in doc["bookies"][0]["why"]
        assert [(o["ledgerId"], o["bookies"]) for o in doc["open"]] == [(writing.ledger_id, [bare.bookie_id])]
        assert set(ledgers_naming(bkctl, uri, bare.bookie_id)) == {writing.ledger_id}
        writing.close()
    assert read_all(uri, closed) == {lid: [b"entry-%d" % i for i in range(10)] for lid in closed}

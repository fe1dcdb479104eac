"""bookie decommission and recover say where they are: ledgers and bytes, with their totals known before the first
copy; a decommission blocked by a ledger that cannot be re-replicated names it, and why, once nothing has moved
for --stall-after seconds, and --timeout ends it with that list, exit 3."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

from bkctl.terminal import Terminal
from bookie.client import BookKeeper
from bookie.meta.cookies import CookieStore

from support.checks import ledgers_naming, write_ledgers
from support.waiting import wait_for


class Decommission:
    """``bkctl bookie decommission`` in a process of its own, its stderr read as it comes."""

    def __init__(self, uri: str, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bkctl", "-u", uri, "bookie", "decommission", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        self.out = {"stdout": b"", "stderr": b""}
        self.readers = [threading.Thread(target=self._read, args=(name,), daemon=True) for name in self.out]
        for reader in self.readers:
            reader.start()

    def _read(self, name: str) -> None:
        for line in getattr(self.proc, name):
            self.out[name] += line

    def said(self, text: str) -> bool:
        return text.encode() in self.out["stderr"]

    def end(self, timeout: float = 60) -> tuple[int, str, str]:
        """Exit code, stdout and stderr once it exits."""
        try:
            self.proc.wait(timeout)
        finally:
            self.proc.kill()
        for reader in self.readers:
            reader.join(10)
        return self.proc.returncode, self.out["stdout"].decode(), self.out["stderr"].decode()


def record_progress(monkeypatch) -> list[dict]:
    """Every progress display a command opens: its totals and what it was advanced by."""
    bars: list[dict] = []
    opened = Terminal.progress

    def progress(self, description, total=None, unit="entries", total_bytes=None):
        bar = {"description": description, "total": total, "unit": unit, "totalBytes": total_bytes, "n": 0, "size": 0}
        bars.append(bar)

        class Recording:
            def __enter__(self_):
                self_.inner = opened(self, description, total, unit, total_bytes)
                advance = self_.inner.__enter__()

                def recorded(n=1, size=0):
                    bar["n"] += n
                    bar["size"] += size
                    advance(n, size)

                return recorded

            def __exit__(self_, *exc):
                return self_.inner.__exit__(*exc)

        return Recording()

    monkeypatch.setattr(Terminal, "progress", progress)
    return bars


def test_decommission_and_recover_count_bytes_against_totals_known_up_front(harness, bkctl, monkeypatch):
    bookies = harness.start(5)  # two gone, three left for ensembles of three
    write_ledgers(harness.service_uri, 3, quorum=(3, 3, 2), entries=40)
    victim, second = [b for b in bookies if ledgers_naming(bkctl, harness.service_uri, b.bookie_id)][:2]
    named = ledgers_naming(bkctl, harness.service_uri, victim.bookie_id)
    victim.stop()
    bars = record_progress(monkeypatch)
    result = bkctl("-u", harness.service_uri, "bookie", "decommission", victim.bookie_id, "--yes", "-o", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["decommissioned"], doc["timedOut"], doc["blockers"]) == (True, False, [])
    assert doc["ledgers"] == len(named) and doc["recovered"] == sorted(named)
    # E = WQ: each replica holds every entry, and the estimate (lengths, plus each entry's header and digest) is exact
    assert doc["entries"] == 40 * len(named) and 0 < doc["estimatedBytes"] == doc["bytes"]
    [bar] = bars
    assert (bar["total"], bar["unit"], bar["totalBytes"]) == (len(named), "ledgers", doc["estimatedBytes"])
    assert (bar["n"], bar["size"]) == (len(named), doc["bytes"])  # it moved with every entry copied

    second.stop()
    bars.clear()
    named = ledgers_naming(bkctl, harness.service_uri, second.bookie_id)
    result = bkctl("-u", harness.service_uri, "bookie", "recover", second.bookie_id, "--yes", "-o", "json")
    assert result.exit_code == 0, result.stdout
    doc = json.loads(result.stdout)
    assert doc["ledgers"] == len(named) and 0 < doc["estimatedBytes"] == doc["bytes"]
    [bar] = bars
    assert (bar["total"], bar["totalBytes"], bar["n"], bar["size"]) == (
        len(named),
        doc["estimatedBytes"],
        len(named),
        doc["bytes"],
    )


def test_a_blocked_decommission_names_its_blocker_then_times_out_with_it(harness, bkctl, cluster):
    bookies = harness.start(2)
    with BookKeeper(harness.service_uri) as bk:
        ledger = bk.create_ledger(1, 1, 1)  # its only replica on the bookie that goes
        ledger.add_entries(b"only-%d" % i for i in range(10))
        ledger.close()
    victim = next(b for b in bookies if ledger.ledger_id in ledgers_naming(bkctl, harness.service_uri, b.bookie_id))
    victim.stop()
    started = time.monotonic()
    result = bkctl(
        "-u", harness.service_uri, "bookie", "decommission", victim.bookie_id, "--yes",
        "--stall-after", "1", "--timeout", "4", "-o", "json",
    )  # fmt: skip
    took = time.monotonic() - started
    assert result.exit_code == 3, result.stderr
    # within its first stall period, before the timeout: the blocker, classified, and its fix
    warning = "warning: nothing moved for 1 s (0 of 1 ledgers re-replicated"
    assert warning in result.stderr
    assert f"ledger/{ledger.ledger_id} lost: " in result.stderr.split(warning, 1)[1]
    assert took < 30  # the timeout ends it: not the hour of the default
    doc = json.loads(result.stdout)
    assert (doc["decommissioned"], doc["timedOut"], doc["ledgers"], doc["recovered"]) == (False, True, 1, [])
    [blocker] = doc["blockers"]
    assert (blocker["ledgerId"], blocker["reason"]) == (ledger.ledger_id, "lost")
    assert blocker["fix"] and "no readable replica" in blocker["lastError"]
    assert victim.bookie_id in CookieStore(cluster).list()  # kept: something still names it

    text = bkctl(
        "-u", harness.service_uri, "bookie", "decommission", victim.bookie_id, "--yes",
        "--stall-after", "30", "--timeout", "2",
    )  # fmt: skip
    assert text.exit_code == 3 and "nothing moved" not in text.stderr  # the timeout came before the stall
    assert f"bookie/{victim.bookie_id} kept: not done within the timeout; blocked by:" in text.stdout
    assert f"  ledger/{ledger.ledger_id} lost: " in text.stdout


def test_an_interrupted_decommission_says_how_far_it_got(harness):
    """Ctrl-C while a copy waits for its target (paused) to acknowledge: the copy is cancelled, not waited for,
    and the one error line says what was done."""
    bookies = harness.start(3, zkTimeout=30000)  # the paused bookie keeps its registration
    with BookKeeper(harness.service_uri) as bk:
        ledger = bk.create_ledger(2, 2, 2)
        ledger.add_entries(b"entry-%d" % i for i in range(50))
        ledger.close()
        ensemble = bk.ledger_metadata(ledger.ledger_id).segments[0].bookies
    victim = next(b for b in bookies if b.bookie_id == ensemble[0])
    [target] = [b for b in bookies if b.bookie_id not in ensemble]
    victim.stop()
    os.kill(target.pid, signal.SIGSTOP)
    try:
        run = Decommission(harness.service_uri, victim.bookie_id, "--yes", "--stall-after", "1")
        # every entry sent, none acknowledged: the stall report says what waits
        wait_for(lambda: run.said(f"ledger/{ledger.ledger_id} in-progress: "), "the stall report", 30)
        run.proc.send_signal(signal.SIGINT)
        code, _, stderr = run.end(30)
    finally:
        os.kill(target.pid, signal.SIGCONT)
    assert code == 130, stderr
    assert stderr.splitlines()[-1] == (
        "error: interrupted (0 of 1 ledgers re-replicated, 2.3 KiB of about 2.3 KiB copied: run it again to go on)"
    )


def test_a_decommission_waits_out_its_blocker_and_finishes(harness, bkctl, cluster):
    """No bookie to copy to: the stall report says so (no-eligible-bookie); a bookie that joins is used by the
    next try, and the decommission ends as if nothing had blocked it."""
    bookies = harness.start(2)
    with BookKeeper(harness.service_uri) as bk:
        ledger = bk.create_ledger(2, 2, 2)
        ledger.add_entries(b"entry-%d" % i for i in range(20))
        ledger.close()
    victim = bookies[0]
    victim.stop()
    run = Decommission(harness.service_uri, victim.bookie_id, "--yes", "--stall-after", "1", "-o", "json")
    wait_for(lambda: run.said("nothing moved"), "the stall report", 30)
    [spare] = harness.start(1)
    code, stdout, stderr = run.end()
    assert code == 0, stderr
    assert f"ledger/{ledger.ledger_id} no-eligible-bookie: " in stderr
    doc = json.loads(stdout)
    assert (doc["decommissioned"], doc["recovered"], doc["blockers"]) == (True, [ledger.ledger_id], [])
    assert len(doc["rounds"]) >= 2 and doc["rounds"][0]["failed"]
    assert ledgers_naming(bkctl, harness.service_uri, spare.bookie_id) == [ledger.ledger_id]
    assert victim.bookie_id not in CookieStore(cluster).list()

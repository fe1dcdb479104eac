"""The nemesis: a schedule of faults generated from a seed, and the thread of actions that carries it out.

The schedule depends on the seed alone (``random.Random(seed)``), so a failing seed replays the same faults at
the same offsets; what the processes do in between is up to the machine, as in Jepsen.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from faults.workload import PASSWORD, child_env

BOOKIE_FAULTS = ("bookie-crash", "bookie-pause", "rereplicate", "double-start", "partition")
KINDS = (
    "bookie-crash",
    "bookie-pause",
    "writer-crash",
    "zk-crash",
    "compaction",
    "rereplicate",
    "double-start",
    "partition",
)
MAX_BOOKIES_DOWN = 2  # of 5: three stay up, enough for an E3 ensemble


@dataclass(frozen=True)
class Fault:
    at: float  # seconds after the schedule starts
    kind: str
    target: int | None  # a bookie index, or a writer index for writer-crash
    duration: float  # until the bookie, writer or ZooKeeper comes back

    def __str__(self) -> str:
        target = (
            "" if self.target is None else f" {'writer' if self.kind == 'writer-crash' else 'bookie'} {self.target}"
        )
        return f"t={self.at:5.1f}s {self.kind}{target} for {self.duration:.1f}s"


def generate(seed: int, duration: float, bookies: int, writers: int, kinds=KINDS) -> list[Fault]:
    """Every kind once (in a seeded order), then seeded extras, ``duration`` seconds in all; faults overlap, but
    never more than ``MAX_BOOKIES_DOWN`` bookies are out at once, one ZooKeeper outage at a time, and no
    re-replication while ZooKeeper is down."""
    rng = random.Random(seed)
    first = list(kinds)
    rng.shuffle(first)
    faults: list[Fault] = []
    t = 2.0  # the writers get going first

    def active(at: float, kind_set) -> list[Fault]:
        return [f for f in faults if f.kind in kind_set and f.at <= at < f.at + f.duration + 1.0]

    while t < duration - 4:
        kind = first.pop(0) if first else rng.choice(kinds)
        if kind in BOOKIE_FAULTS:
            busy = active(t, BOOKIE_FAULTS)
            if kind == "rereplicate":
                busy += active(t, ("zk-crash",))
            free = [b for b in range(bookies) if b not in {f.target for f in busy if f.kind in BOOKIE_FAULTS}]
            if (
                len([f for f in busy if f.kind in BOOKIE_FAULTS]) >= MAX_BOOKIES_DOWN
                or not free
                or any(f.kind == "zk-crash" for f in busy)
            ):
                t = min(f.at + f.duration for f in busy) + 1.5
                first.insert(0, kind)
                continue
            target = rng.choice(free)
            length = {
                "bookie-crash": rng.uniform(2, 7),
                "bookie-pause": rng.uniform(1, 5),
                "rereplicate": 8.0,
                "double-start": rng.uniform(6, 9),
                "partition": rng.uniform(2, 6),
            }[kind]
        elif kind == "zk-crash":
            busy = active(t, ("zk-crash", "rereplicate"))
            if busy:
                t = min(f.at + f.duration for f in busy) + 1.5
                first.insert(0, kind)
                continue
            target, length = None, rng.uniform(2, 6)
        elif kind == "writer-crash":
            busy = {f.target for f in active(t, ("writer-crash",))}
            free = [w for w in range(writers) if w not in busy]
            if not free:
                t += 1.0
                first.insert(0, kind)
                continue
            target, length = rng.choice(free), rng.uniform(1, 4)
        else:  # compaction: on a bookie, whatever its state (a down one answers "unreachable")
            target, length = rng.randrange(bookies), 0.0
        faults.append(Fault(round(t, 1), kind, target, round(length, 1)))
        t += rng.uniform(1.5, 4.0)
    return faults


def describe(seed: int, faults: list[Fault]) -> str:
    return f"schedule of seed {seed}:\n" + "\n".join(f"  {f}" for f in faults)


class Nemesis:
    """Carries out a schedule against a cluster and its writers, logging every action with its time."""

    def __init__(self, cluster, writers, history, partitioner=None):
        self.cluster, self.writers, self.history, self.partitioner = cluster, writers, history, partitioner
        self.log: list[str] = []
        self.injected: Counter[str] = Counter()
        self.skipped: Counter[str] = Counter()
        self._threads: list[threading.Thread] = []
        self._t0 = 0.0

    def note(self, message: str) -> None:
        self.log.append(f"t={time.monotonic() - self._t0:6.1f}s {message}")

    def bkctl(self, *args: str, timeout: float = 120) -> tuple[int, str]:
        """A bkctl command as an operator types it; (exit code, stdout), stderr's first line logged."""
        started = time.monotonic()
        try:
            done = subprocess.run(
                [sys.executable, "-m", "bkctl", "-u", self.cluster.service_uri, *args],
                capture_output=True,
                text=True,
                timeout=timeout,
                env=child_env(),
            )
        except subprocess.TimeoutExpired:
            self.note(f"bkctl {' '.join(args)}: no answer within {timeout:g} s")
            return -1, ""
        first = (done.stderr.strip().splitlines() or [""])[-1]
        self.note(f"bkctl {' '.join(args)} -> exit {done.returncode} after {time.monotonic() - started:.1f} s {first}")
        return done.returncode, done.stdout

    def run(self, faults: list[Fault]) -> None:
        actions: list[tuple[float, int, callable]] = []
        for n, fault in enumerate(faults):
            for at, action in self._actions(fault):
                actions.append((at, n, action))
        actions.sort(key=lambda a: (a[0], a[1]))
        self._t0 = time.monotonic()
        for at, _, action in actions:
            delay = self._t0 + at - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            action()
        for thread in self._threads:
            thread.join(300)

    def _background(self, work) -> None:
        thread = threading.Thread(target=work, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _actions(self, fault: Fault):
        c, kind, target = self.cluster, fault.kind, fault.target
        end = fault.at + fault.duration
        if kind == "bookie-crash":
            bookie = c.bookies[target]
            yield (
                fault.at,
                lambda: (
                    self.injected.update([kind]),
                    c.kill_bookie(target),
                    self.note(f"kill -9 bookie {target} ({bookie.bookie_id})"),
                ),
            )
            yield end, lambda: (c.start_bookie(target), self.note(f"restart bookie {target}"))
        elif kind == "bookie-pause":
            yield (
                fault.at,
                lambda: (
                    self.injected.update([kind]),
                    c.pause(target),
                    self.note(f"SIGSTOP bookie {target} ({c.bookies[target].bookie_id})"),
                ),
            )
            yield end, lambda: (c.resume(target), self.note(f"SIGCONT bookie {target}"))
        elif kind == "zk-crash":
            yield fault.at, lambda: (self.injected.update([kind]), c.kill_zookeeper(), self.note("kill -9 ZooKeeper"))
            yield end, lambda: (c.start_zookeeper(), self.note("restart ZooKeeper"))
        elif kind == "writer-crash":
            writer = self.writers[target]
            yield fault.at, lambda: self._crash_writer(writer)
            yield end, lambda: (writer.start(), self.note(f"restart writer {writer.name}"))
        elif kind == "compaction":
            bookie = c.bookies[target]
            yield (
                fault.at,
                lambda: (
                    self.injected.update([kind]),
                    self._background(
                        lambda: self.bkctl("bookie", "gc", bookie.bookie_id, "--major", "--wait", "--timeout", "60")
                    ),
                ),
            )
        elif kind == "rereplicate":
            yield fault.at, lambda: self._background(lambda: self._rereplicate(target, end))
        elif kind == "double-start":
            bookie = c.bookies[target]
            yield fault.at, lambda: self._background(lambda: self._double_start(target))
            yield (
                end,
                lambda: (
                    c.kill_bookie(target),
                    c.start_bookie(target),
                    self.note(
                        f"kill -9 and restart bookie {target} ({bookie.bookie_id}), "
                        "the one a second start was refused on"
                    ),
                ),
            )
        elif kind == "partition":
            if self.partitioner is None or not self.partitioner.available:
                yield (
                    fault.at,
                    lambda: (
                        self.skipped.update([kind]),
                        self.note(
                            f"partition of bookie {target} skipped: "
                            f"{self.partitioner.reason if self.partitioner else ''}"
                        ),
                    ),
                )
            else:
                bookie = c.bookies[target]
                yield (
                    fault.at,
                    lambda: (
                        self.injected.update([kind]),
                        self.partitioner.cut(bookie),
                        self.note(f"partition bookie {target} ({bookie.bookie_id})"),
                    ),
                )
                yield end, lambda: (self.partitioner.heal(bookie), self.note(f"heal partition of bookie {target}"))

    def _crash_writer(self, writer) -> None:
        self.injected.update(["writer-crash"])
        writer.kill()
        self.note(f"kill -9 writer {writer.name}")
        left = [r.ledger_id for r in self.history.open_ledgers() if r.writer == writer.name]
        with self.history.lock:
            left += [
                r.ledger_id
                for r in self.history.ledgers.values()
                if r.writer == writer.name and r.failed and r.failed.endswith("(left open)")
            ]

        def recover():
            for ledger_id in left:  # what an operator does for a dead writer's ledgers
                code, out = self.bkctl(
                    "ledger", "recover", str(ledger_id), "--password", PASSWORD.decode(), "-o", "json"
                )
                if code == 0:
                    doc = json.loads(out)
                    self.note(f"ledger {ledger_id} recovered: last entry {doc['lastEntryId']}")

        self._background(recover)

    def _double_start(self, target: int) -> None:
        """The operator starts a second bookie on a live bookie's configuration (same directories, same port): it
        must refuse before it reads or writes anything. The live bookie is killed later: if the second start
        touched its journal or its registration, acknowledged entries are lost then."""
        from bookie.local.process import tail

        self.injected.update(["double-start"])
        bookie = self.cluster.bookies[target]
        log = f"{bookie.directory}/second-start.log"
        self.note(f"second `bkctl bookie run` on bookie {target}'s configuration (live pid {bookie.pid})")
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "bkctl", "bookie", "run", "--conf", str(bookie.conf_path)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=child_env(),
            )
        try:
            code = proc.wait(20)
            self.note(f"second start on bookie {target} exited {code}: {tail(Path(log), 1)}")
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            self.note(f"second start on bookie {target} still running after 20 s: killed")

    def _rereplicate(self, target: int, end: float) -> None:
        """Lose a bookie and re-replicate what it held (``bookie recover``) while the writers go on."""
        c = self.cluster
        bookie = c.bookies[target]
        self.injected.update(["rereplicate"])
        c.kill_bookie(target)
        self.note(f"kill -9 bookie {target} ({bookie.bookie_id}) for re-replication")
        time.sleep(1.0)
        self.bkctl("bookie", "recover", bookie.bookie_id, "--yes", "-o", "json", timeout=240)
        time.sleep(max(0.0, self._t0 + end - time.monotonic()))
        c.start_bookie(target)
        self.note(f"restart bookie {target} after re-replication")

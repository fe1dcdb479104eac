"""The nemesis: a schedule of faults generated from a seed, and the thread of actions that carries it out.

The schedule depends on the seed alone (``random.Random(seed)``), so a failing seed replays the same faults at
the same offsets; what the processes do in between is up to the machine, as in Jepsen.
"""

from __future__ import annotations

import json
import os
import random
import re
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
# Power cuts (a FaultCluster with power=True): one machine, two, or the whole rack at once; then one machine cut at
# a chosen moment: the N-th sync after arming, inside a checkpoint, right after an entry-log rotation, during a
# major compaction; and one cut again while it starts after a cut (its journal replay, its first checkpoint). Each
# may tear the last unsynced write of every file on the disk.
TIMED_CUTS = ("power-cut-sync", "power-cut-checkpoint", "power-cut-rotation", "power-cut-compaction")
POWER_KINDS = ("power-cut", "power-cut-2", "power-cut-all", *TIMED_CUTS, "power-cut-restart")
POWER_PROFILE = (*POWER_KINDS, "writer-crash")


def checkpoint_sync(_earlier, sync) -> bool:
    """A sync of a checkpoint: an index file, RocksDB's indexes, lastMark."""
    return re.search(r"\.idx$|/current/(locations|ledgers)/|lastMark", sync.path) is not None


def log_removal_sync(earlier, sync) -> bool:
    """GC removing an entry log (a compacted one, or one left without live entries): a ledger directory synced
    right after no file of its own (lastMark and the cookie are written to a temporary file, synced, renamed)."""
    if sync.op != "fsyncdir" or re.search(r"/ledgers-\d+/current$", sync.path) is None:
        return False
    mine = [s for s in earlier if s.path.startswith(sync.path + "/") or s.path == sync.path]
    return not mine or mine[-1].op == "fsyncdir"


TIMED_WAIT = 5.0  # seconds a timed cut may wait for its moment (and a compaction's garbage) before it cuts


@dataclass(frozen=True)
class Fault:
    at: float  # seconds after the schedule starts
    kind: str
    target: int | None  # a bookie index, or a writer index for writer-crash
    duration: float  # until the bookie, writer or ZooKeeper comes back
    also: tuple[int, ...] = ()  # power-cut-2: the second bookie
    tear: int | None = None  # power cuts: tear the last unsynced write of each file at this boundary
    after: int = 0  # timed power cuts: this many syncs after the moment (or after arming)

    def __str__(self) -> str:
        if self.kind == "power-cut-all":
            target = " every bookie"
        elif self.target is None:
            target = ""
        elif self.kind == "writer-crash":
            target = f" writer {self.target}"
        else:
            target = f" bookie{'s' if self.also else ''} {', '.join(map(str, (self.target, *self.also)))}"
        extra = f" {self.after} syncs after" if self.kind in TIMED_CUTS else ""
        extra += f", again at its start's sync {self.after}" if self.kind == "power-cut-restart" else ""
        extra += f" tearing at {self.tear}" if self.tear else ""
        return f"t={self.at:5.1f}s {self.kind}{target}{extra} for {self.duration:.1f}s"

    def bookies(self, size: int) -> tuple[int, ...]:
        """The bookies a bookie fault takes out."""
        return tuple(range(size)) if self.kind == "power-cut-all" else (self.target, *self.also)

    @property
    def end(self) -> float:
        """When what it took out is back at the latest."""
        timed = self.kind in TIMED_CUTS or self.kind == "power-cut-restart"
        return self.at + self.duration + (TIMED_WAIT if timed else 0.0)


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
        return [f for f in faults if f.kind in kind_set and f.at <= at < f.end + 1.0]

    while t < duration - 4:
        kind = first.pop(0) if first else rng.choice(kinds)
        if kind in POWER_KINDS:
            busy = active(t, (*BOOKIE_FAULTS, *POWER_KINDS))
            out = {b for f in busy for b in f.bookies(bookies)}
            free = [b for b in range(bookies) if b not in out]
            width = {"power-cut-all": bookies, "power-cut-2": 2}.get(kind, 1)
            if len(out) + width > (bookies if kind == "power-cut-all" else MAX_BOOKIES_DOWN):
                t = min(f.end for f in busy) + 1.5
                first.insert(0, kind)
                continue
            chosen = rng.sample(free, width)
            length = rng.uniform(2, 4) if kind == "power-cut-all" else rng.uniform(2, 6)
            tear = rng.choice((None, 512, 4096))
            after = {"power-cut-sync": rng.randint(1, 40), "power-cut-restart": rng.randint(1, 12)}.get(
                kind, rng.randint(0, 3)
            )
            target, also = (None, ()) if kind == "power-cut-all" else (chosen[0], tuple(chosen[1:]))
            faults.append(Fault(round(t, 1), kind, target, round(length, 1), also, tear, after))
            t += rng.uniform(1.5, 4.0)
            continue
        if kind in BOOKIE_FAULTS:
            busy = active(t, (*BOOKIE_FAULTS, *POWER_KINDS))
            if kind == "rereplicate":
                busy += active(t, ("zk-crash",))
            out = {b for f in busy if f.kind != "zk-crash" for b in f.bookies(bookies)}
            free = [b for b in range(bookies) if b not in out]
            if len(out) >= MAX_BOOKIES_DOWN or not free or any(f.kind == "zk-crash" for f in busy):
                t = min(f.end for f in busy) + 1.5
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
                t = min(f.end for f in busy) + 1.5
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
        self.power_cuts = 0  # machines that lost power (power-cut-all counts each bookie)
        self.torn_cuts = 0  # of them, cuts that tore the last unsynced writes
        self.torn_writes = 0  # writes torn with part of them kept
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
        if kind in POWER_KINDS:
            yield fault.at, lambda: self._background(lambda: self._power_cut(fault))
        elif kind == "bookie-crash":
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

    # ---- power cuts ----
    def _power_cut(self, fault: Fault) -> None:
        """Cut the power of the fault's bookies (at its moment, for a timed cut), then after its duration bring
        each disk and bookie back."""
        try:
            self._cut_and_restore(fault)
        except Exception as exc:  # noqa: BLE001 - the harness failed: the schedule must not pass
            self.note(f"{fault.kind} failed: {type(exc).__name__}: {exc}")
            with self.history.lock:
                self.history.violations.append(f"nemesis: {fault} failed: {type(exc).__name__}: {exc}")

    def _cut_and_restore(self, fault: Fault) -> None:
        c = self.cluster
        targets = fault.bookies(c.size)
        seed = int(fault.at * 10)  # the tears: the same for a seed's schedule every time
        if fault.kind in TIMED_CUTS:
            self._arm_and_wait(fault)
        made = []
        for index in targets:
            tears = c.power_cut(index, fault.tear, seed + index)
            made += tears
        self.injected.update([fault.kind])
        self.power_cuts += len(targets)
        self.torn_cuts += len(targets) if fault.tear else 0
        torn = [t for t in made if t[2] > 0]
        self.torn_writes += len(torn)
        what = "every bookie" if fault.kind == "power-cut-all" else f"bookie {', '.join(map(str, targets))}"
        tearing = f", torn at {fault.tear}: {len(torn)} writes kept in part, {len(made) - len(torn)} lost whole" * (
            fault.tear is not None
        )
        self.note(f"{fault.kind}: power cut to {what}{tearing}")
        time.sleep(fault.duration)
        if fault.kind == "power-cut-restart":
            self._cut_while_starting(fault.target, fault.after)
        for index in targets:
            c.start_bookie(index)
        self.note(f"power back on {what}: disk mounted, bookie started")

    def _arm_and_wait(self, fault: Fault) -> None:
        """Wait for the fault's moment on its bookie's disk, arm the disk to lose power ``fault.after`` syncs later,
        and wait until it has (the bookie killed, the disk frozen). A moment that does not come within TIMED_WAIT,
        or a disk that did not freeze, gives a cut at once, noted."""
        c, index = self.cluster, fault.target
        disk = c.disks[index]
        deadline = time.monotonic() + TIMED_WAIT
        try:
            count = disk.sync_count()
            moment = count
            if fault.kind == "power-cut-checkpoint":
                moment = self._watch(disk, count, checkpoint_sync, deadline)
            elif fault.kind == "power-cut-rotation":
                moment = self._rotation(disk, c.bookies[index], deadline)
            elif fault.kind == "power-cut-compaction":
                moment = self._compaction(index, deadline)
            if moment is None:
                self.note(f"{fault.kind} on bookie {index}: its moment did not come within {TIMED_WAIT:g} s")
                return
            after = max(moment + fault.after, disk.sync_count() + 1)
            if not c.arm_power_cut(index, after):
                self.note(f"{fault.kind} on bookie {index}: not up, not armed")
                return
            self.note(f"{fault.kind}: bookie {index}'s disk armed to lose power at its sync {after} (moment {moment})")
            while time.monotonic() < deadline:
                if disk.frozen():
                    last = disk.syncs(after - 1)
                    self.note(f"bookie {index}'s disk lost power after {last[0] if last else 'sync ' + str(after)}")
                    return
                time.sleep(0.02)
            self.note(f"{fault.kind}: bookie {index}'s disk did not reach sync {after} within {TIMED_WAIT:g} s")
        except OSError as exc:  # the disk's control socket gone: it was cut by another fault
            self.note(f"{fault.kind} on bookie {index}: {exc}")

    def _cut_while_starting(self, index: int, after: int) -> None:
        """Power back on, and off again at the ``after``-th sync of the bookie's start: a cut in its recovery."""
        c, disk = self.cluster, self.cluster.disks[index]
        c.start_bookie(index, arm=after)
        self.note(f"power back on bookie {index}, its disk armed to lose power again at sync {after}")
        deadline = time.monotonic() + TIMED_WAIT
        while not disk.frozen() and time.monotonic() < deadline:
            time.sleep(0.02)
        syncs = disk.syncs()
        c.power_cut(index)
        self.power_cuts += 1
        where = f"after its start's sync {syncs[-1]}" if syncs else "before its start synced anything"
        self.note(f"power cut to bookie {index} again, {where}")
        time.sleep(1.0)

    def _watch(self, disk, since: int, moment, deadline: float) -> int | None:
        """The number of the first sync after ``since`` for which ``moment(the syncs before it, sync)`` holds."""
        earlier: list = []
        while time.monotonic() < deadline:
            for sync in disk.syncs(since):
                if moment(earlier, sync):
                    return sync.number
                earlier.append(sync)
                since = sync.number
            time.sleep(0.005)  # the moment passes in a few syncs
        return None

    def _rotation(self, disk, bookie, deadline: float) -> int | None:
        """The sync count when a new entry log appears in one of the bookie's ledger directories (a rotation: the
        old log sealed, the new one's name not yet durable)."""

        def logs() -> set[str]:
            found = set()
            for directory in bookie.ledger_dirs:
                try:
                    found |= {f"{directory}/{n}" for n in os.listdir(f"{directory}/current") if n.endswith(".log")}
                except FileNotFoundError:
                    pass
            return found

        before = logs()
        while time.monotonic() < deadline:
            if logs() - before:
                return disk.sync_count()
            time.sleep(0.02)
        return None

    def _compaction(self, index: int, deadline: float) -> int | None:
        """Give the bookie something to compact (a ledger written and deleted), start a major compaction on it and
        answer the number of the sync that removed the first entry log."""
        from bookie.client import BookKeeper

        c = self.cluster
        try:
            with BookKeeper(c.service_uri) as bk:
                for quorum in ((5, 5, 2), (3, 3, 2)):
                    try:
                        ledger = bk.create_ledger(*quorum, password=PASSWORD)
                        break
                    except Exception:  # noqa: BLE001 - too few bookies up: a smaller ensemble
                        ledger = None
                if ledger is not None:
                    junk = bytes(1024)
                    ledger.add_entries(junk for _ in range(400))
                    ledger.close()
                    bk.delete_ledger(ledger.ledger_id)
                    self.note(f"ledger {ledger.ledger_id} (400 KiB) written and deleted, garbage to compact")
        except Exception as exc:  # noqa: BLE001 - the compaction runs anyway
            self.note(f"no garbage written for the compaction: {type(exc).__name__}: {exc}")
        bookie = c.bookies[index]
        self._background(lambda: self.bkctl("bookie", "gc", bookie.bookie_id, "--major", "--wait", "--timeout", "60"))
        disk = c.disks[index]
        return self._watch(disk, disk.sync_count(), log_removal_sync, deadline)

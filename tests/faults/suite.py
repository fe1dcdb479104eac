"""Runs schedules against one cluster and adds up the figures; ``python -m faults.suite`` is the long profile
(see ``tests/faults/run``), and with ``--power-loss`` the power-loss profile: bookies on lossy disks, power cuts."""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from faults.checker import CheckResult, check, degraded_read
from faults.cluster import FaultCluster
from faults.nemesis import KINDS, POWER_PROFILE, Nemesis, describe, generate
from faults.partition import Partitioner
from faults.workload import History, Tailer, WriterProcess

WRITERS = (("w0-e3w2a2", (3, 2, 2)), ("w1-e2w2a1", (2, 2, 1)))
SHORT_SEEDS = (20261123, 7)  # fixed: CI repeats the same schedules every day
SHORT_SECONDS = 32.0
POWER_SEEDS = (20261131, 20261149)  # the power-loss profile's: between them every kind, the rack cut twice


@dataclass
class Totals:
    schedules: int = 0
    faults: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)
    ledgers: int = 0
    acknowledged: int = 0
    lost: int = 0
    entries_read: int = 0
    degraded_entries_read: int = 0
    tailer_reads: int = 0
    raced_recoveries: int = 0
    failed_seeds: list[int] = field(default_factory=list)
    power: bool = False  # the power-loss profile: count the cuts
    power_cuts: int = 0
    torn_cuts: int = 0
    torn_writes: int = 0
    bookie_errors: int = 0  # ERROR lines in the bookies' logs
    first_errors: list[str] = field(default_factory=list)

    def add(self, run: ScheduleRun) -> None:
        self.schedules += 1
        self.faults.update(run.nemesis.injected)
        self.power_cuts += run.nemesis.power_cuts
        self.torn_cuts += run.nemesis.torn_cuts
        self.torn_writes += run.nemesis.torn_writes
        self.bookie_errors += sum(len(lines) for lines in run.bookie_errors.values())
        self.first_errors += [f"seed {run.seed}, bookie {i}, first: {ls[0]}" for i, ls in run.bookie_errors.items()]
        self.skipped.update(run.nemesis.skipped)
        r = run.result
        self.ledgers += r.ledgers
        self.acknowledged += r.acknowledged
        self.lost += r.lost
        self.entries_read += r.entries_read
        self.degraded_entries_read += r.degraded_entries_read
        self.raced_recoveries += r.raced_recoveries
        self.tailer_reads += run.tailer_reads
        if not run.ok:
            self.failed_seeds.append(run.seed)

    def render(self) -> str:
        faults = ", ".join(f"{k} {v}" for k, v in sorted(self.faults.items())) or "none"
        lines = [
            f"schedules run:        {self.schedules}",
            f"faults injected:      {sum(self.faults.values())} ({faults})",
        ]
        if self.power:
            lines.append(
                f"power cuts:           {self.power_cuts} bookies ({self.torn_cuts} tearing the last unsynced "
                f"writes, {self.torn_writes} writes torn with a part kept)"
            )
            lines.append(f"bookie errors logged: {self.bookie_errors}")
            lines += [f"  {e[:200]}" for e in self.first_errors[:10]]
        lines += [
            f"ledgers checked:      {self.ledgers} ({self.raced_recoveries} closed by two racing recoveries)",
            f"entries acknowledged: {self.acknowledged}",
            f"entries read back:    {self.entries_read} (and {self.tailer_reads} by the tailing reader during faults)",
            f"read, a bookie down:  {self.degraded_entries_read} (ledgers with an ack quorum of 2)",
            f"entries lost:         {self.lost}",
        ]
        if self.skipped:
            lines.append(f"faults skipped:       {', '.join(f'{k} {v}' for k, v in sorted(self.skipped.items()))}")
        if self.failed_seeds:
            lines.append(f"failed seeds:         {' '.join(map(str, self.failed_seeds))}")
        return "\n".join(lines)


@dataclass
class ScheduleRun:
    seed: int
    schedule: list
    nemesis: Nemesis
    result: CheckResult
    history: History
    notes: list[str]
    tailer_reads: int
    directory: str = ""
    bookie_errors: dict[int, list[str]] = field(default_factory=dict)  # power: ERROR lines, by bookie index

    @property
    def violations(self) -> list[str]:
        return self.history.violations + self.result.violations

    @property
    def ok(self) -> bool:
        return not self.violations and self.result.lost == 0 and self.result.acknowledged > 0

    def report(self) -> str:
        """What a failing run prints: the seed first, then how to repeat it, what went wrong, the schedule."""
        power = self.nemesis.cluster.power
        lines = [
            f"FAULT SCHEDULE FAILED: seed {self.seed} (repeat: BKCTL_FAULT_SEED={self.seed} pytest "
            f"tests/faults{'/test_power_loss.py' if power else ''}, or bash tests/faults/run "
            f"{'--power-loss ' if power else ''}--seed {self.seed} --schedules 1)",
            f"entries acknowledged {self.result.acknowledged}, lost {self.result.lost}",
        ]
        if self.result.acknowledged == 0:
            lines.append("the writers got no entry acknowledged: the workload never ran")
        lines += [f"violation: {v}" for v in self.violations[:40]]
        lines.append(describe(self.seed, self.schedule))
        lines.append("what the nemesis did:")
        lines += [f"  {line}" for line in self.nemesis.log]
        lines += [f"note: {n}" for n in self.notes]
        lines.append(f"the cluster's files and logs: {self.directory}")
        return "\n".join(lines)


def kinds(profile: tuple[str, ...] = KINDS) -> tuple[str, ...]:
    """Every kind of fault of the profile, less those named in BKCTL_FAULT_WITHOUT (comma-separated): a way to get
    on with the others while a product bug behind one kind is being fixed; it changes the schedules of every seed."""
    without = {k.strip() for k in os.environ.get("BKCTL_FAULT_WITHOUT", "").split(",") if k.strip()}
    unknown = without - set(profile)
    if unknown:
        raise SystemExit(f"error: BKCTL_FAULT_WITHOUT names unknown fault kinds {sorted(unknown)}; known: {profile}")
    return tuple(k for k in profile if k not in without)


def run_schedule(
    cluster: FaultCluster, seed: int, seconds: float, checked: set[int], partitioner: Partitioner | None = None
) -> ScheduleRun:
    """One schedule: writers and a tailing reader under the nemesis, then heal, kill -9 the writers (their open
    ledgers are left to the checker's racing recoveries) and check every ledger not checked before. A cluster with
    ``power`` gets the power-loss profile's faults."""
    schedule = generate(seed, seconds, cluster.size, len(WRITERS), kinds(POWER_PROFILE if cluster.power else KINDS))
    history = History()
    notes: list[str] = []
    writers = [WriterProcess(name, cluster.service_uri, seed, quorum, history) for name, quorum in WRITERS]
    for writer in writers:
        writer.start()
    tailer = Tailer(cluster.service_uri, history, seed)
    tailer.start()
    nemesis = Nemesis(cluster, writers, history, partitioner)
    try:
        nemesis.run(schedule)
        if partitioner is not None:
            partitioner.heal_all()
        notes, stuck = cluster.heal()
        history.violations += stuck
        time.sleep(1.0)  # the writers write a little on the healed cluster before they die
    finally:
        for writer in writers:
            writer.kill()
        tailer.stop()
    result, ledgers = check(cluster.service_uri, history, checked)
    checked |= ledgers
    # Then the same ledgers again with one bookie dead: the reads must go around it.
    victim = random.Random(f"{seed}/degraded").randrange(cluster.size)
    cluster.kill_bookie(victim)
    read, violations = degraded_read(cluster.service_uri, history, ledgers, cluster.bookies[victim].bookie_id)
    result.degraded_entries_read += read
    result.violations += violations
    cluster.start_bookie(victim)
    more_notes, stuck = cluster.heal()
    notes += more_notes
    history.violations += stuck
    (cluster.directory / f"nemesis-{seed}.log").write_text(
        "\n".join([describe(seed, schedule), "what the nemesis did:", *(f"  {line}" for line in nemesis.log), ""])
    )
    errors = cluster.logged_errors() if cluster.power else {}
    return ScheduleRun(seed, schedule, nemesis, result, history, notes, tailer.reads, str(cluster.directory), errors)


def _interrupt(_signum, _frame) -> None:
    raise KeyboardInterrupt()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="tests/faults/run", description=__doc__)
    parser.add_argument("--long", action="store_true", help="run schedules back to back for --minutes")
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--seed", type=int, help="first seed (default: BKCTL_FAULT_SEED, else from the clock)")
    parser.add_argument("--schedules", type=int, help="stop after this many schedules")
    parser.add_argument("--seconds", type=float, default=45.0, help="length of one schedule")
    parser.add_argument("--dir", help="where the cluster lives (default: a temporary directory)")
    parser.add_argument(
        "--power-loss", action="store_true", help="the power-loss profile: bookies on lossy disks, power cuts"
    )
    args = parser.parse_args(argv)
    short_seeds = POWER_SEEDS if args.power_loss else SHORT_SEEDS
    seed = args.seed if args.seed is not None else int(os.environ.get("BKCTL_FAULT_SEED") or time.time())
    schedules = args.schedules if args.schedules is not None else (10**9 if args.long else len(short_seeds))
    seeds = (
        iter(short_seeds)
        if not args.long and args.seed is None and "BKCTL_FAULT_SEED" not in os.environ
        else iter(range(seed, seed + 10**9))
    )
    deadline = time.monotonic() + args.minutes * 60 if args.long else float("inf")
    directory = Path(args.dir or tempfile.mkdtemp(prefix="bkctl-faults-"))
    totals = Totals(power=args.power_loss)
    if args.power_loss:
        from faults.lossyfs.mount import fuse_missing

        if reason := fuse_missing():
            print(f"error: the power-loss profile needs FUSE: {reason}", file=sys.stderr)
            return 2
    partitioner = Partitioner()
    if not partitioner.available and not args.power_loss:
        print(f"partition faults skipped: {partitioner.reason}", flush=True)
    cluster = FaultCluster(directory, power=args.power_loss)
    # SIGTERM (a CI timeout, an operator's kill) ends the run like Ctrl-C: the cluster and partitions are cleaned up
    signal.signal(signal.SIGTERM, _interrupt)
    print(f"cluster in {directory}: ZooKeeper {cluster.zk.address}, {cluster.size} bookies", flush=True)
    try:
        cluster.start()
        if args.power_loss:
            print(f"bookies on lossy disks: {'; '.join(cluster.storages())}", flush=True)
        checked: set[int] = set()
        while totals.schedules < schedules and time.monotonic() < deadline:
            seed = next(seeds)
            started = time.monotonic()
            run = run_schedule(cluster, seed, args.seconds if args.long else SHORT_SECONDS, checked, partitioner)
            totals.add(run)
            status = "ok" if run.ok else "FAILED"
            print(
                f"seed {seed}: {status}: {sum(run.nemesis.injected.values())} faults, "
                f"{run.result.acknowledged} entries acknowledged, {run.result.lost} lost, "
                f"{time.monotonic() - started:.0f} s"
                + "".join(f"; bookie {i} logged {len(e)} errors" for i, e in run.bookie_errors.items()),
                flush=True,
            )
            if not run.ok:
                print(run.report(), flush=True)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
    finally:
        partitioner.heal_all()
        cluster.close()
    print(totals.render(), flush=True)
    failed = bool(totals.failed_seeds or totals.lost)
    if args.power_loss and not args.long and args.seed is None:  # the short profile: then every crash point
        from faults.crashpoints import STORAGES, WORKLOADS, sweep

        print("\nthe crash-point sweep of the scripted workloads:", flush=True)
        swept = sweep(WORKLOADS, STORAGES, progress=lambda line: print(line, file=sys.stderr, flush=True))
        print(swept.render(), flush=True)
        failed = failed or not swept.ok
        print(f"entries lost:         {totals.lost + swept.lost} (random cuts and crash points)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

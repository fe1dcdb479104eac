"""The soak (issue 28 §4): a steady load on a fault cluster for a long time, faults coming all along, with every
long-lived process's RSS, open descriptors and threads and the client's add latency sampled over time; at the end
every acknowledged entry is read back, the curves are drawn (soak.png) and judged flat or not (summary.txt).

    bash tests/faults/run --soak --minutes 120 [--rate 200] [--seed S] [--dir D]

The faults (seeded): the fifth bookie killed -9 and restarted, or paused; ZooKeeper killed and restarted. Bookies 1-4
and the client live the whole run: theirs are the curves judged. Flat: after the warm-up (the first tenth), the
median of the last quarter of a process's RSS within 10% of the first quarter's, its descriptors and threads within
``max(8, 10%)`` of each other, and the client's p99 add latency of the last quarter within 1.5x of the first's.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

PASSWORD = b"soak"
LEDGER_ENTRIES = 5000  # a writer rolls to a new ledger after this many entries


def payload(ledger_id: int, entry_id: int) -> bytes:
    return (b"%d/%d;" % (ledger_id, entry_id) * 16)[:100]


@dataclass
class Sample:
    at: float  # minutes since the start
    name: str  # bookie-N or client
    pid: int
    rss_mb: float
    fds: int
    threads: int


def process_sample(at: float, name: str, pid: int) -> Sample | None:
    """RSS, open descriptors and threads of a live process from /proc; None when it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        rss_kb = int(fields["VmRSS"].split()[0])
        return Sample(at, name, pid, rss_kb / 1024, len(os.listdir(f"/proc/{pid}/fd")), int(fields["Threads"]))
    except (FileNotFoundError, ProcessLookupError, KeyError):
        return None


@dataclass
class Load:
    """A steady writer (E3 W2 A2) at ``rate`` adds/s, in this process; what it had acknowledged, and when."""

    uri: str
    rate: float
    acked: dict[int, int] = field(default_factory=dict)  # ledger -> highest entry acknowledged (all before too)
    # (monotonic ack time, seconds) of the last adds: bounded, or the client's RSS would grow with the run
    latencies: deque[tuple[float, float]] = field(default_factory=lambda: deque(maxlen=20000))
    failures: int = 0
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        from bookie.client import BookKeeper, ClientConfig

        with BookKeeper(self.uri, ClientConfig(add_entry_timeout=10.0)) as bk:
            handle, next_entry, due = None, 0, time.monotonic()
            while not self.stop.is_set():
                try:
                    if handle is None or next_entry >= LEDGER_ENTRIES:
                        if handle is not None:
                            handle.close()
                        handle, next_entry = bk.create_ledger(3, 2, 2, password=PASSWORD), 0
                    started = time.monotonic()
                    entry_id = handle.add_entry(payload(handle.ledger_id, next_entry))
                    now = time.monotonic()
                    self.latencies.append((now, now - started))
                    self.acked[handle.ledger_id] = entry_id
                    next_entry += 1
                except Exception:  # noqa: BLE001 - a fault: the ledger is left to recovery, a new one begins
                    self.failures += 1
                    handle = None
                    time.sleep(0.5)
                due = max(due + 1 / self.rate, time.monotonic() - 1)
                time.sleep(max(0.0, due - time.monotonic()))

    def p99_since(self, since: float) -> float | None:
        window = [lat for at, lat in list(self.latencies) if at >= since]
        return statistics.quantiles(window, n=100)[98] * 1000 if len(window) >= 20 else None


def judge(samples: list[Sample], latency: list[tuple[float, float]]) -> list[str]:
    """What is not flat (empty: everything is), per the module's rules."""
    problems = []
    for name in sorted({s.name for s in samples}):
        series = [s for s in samples if s.name == name]
        if len({s.pid for s in series}) > 1:
            continue  # restarted by the faults: its curve starts over
        series = series[len(series) // 10 :]
        if len(series) < 8:
            problems.append(f"{name}: too few samples after the warm-up ({len(series)})")
            continue
        quarter = len(series) // 4
        first, last = series[:quarter], series[-quarter:]
        rss0, rss1 = statistics.median(s.rss_mb for s in first), statistics.median(s.rss_mb for s in last)
        if abs(rss1 - rss0) > 0.10 * rss0:
            problems.append(f"{name}: RSS {rss0:.1f} MB -> {rss1:.1f} MB ({100 * (rss1 / rss0 - 1):+.0f}%)")
        for what in ("fds", "threads"):
            values = [getattr(s, what) for s in series]
            if max(values) - min(values) > max(8, 0.10 * statistics.median(values)):
                problems.append(f"{name}: {what} between {min(values)} and {max(values)}")
    points = [p for _, p in latency[len(latency) // 10 :]]
    if len(points) >= 8:
        quarter = len(points) // 4
        p0, p1 = statistics.median(points[:quarter]), statistics.median(points[-quarter:])
        if p1 > 1.5 * p0:
            problems.append(f"client: p99 add latency {p0:.1f} ms -> {p1:.1f} ms")
    return problems


def plot(samples: list[Sample], latency: list[tuple[float, float]], faults: list[tuple[float, str]], path: Path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(4, 1, figsize=(11, 12), sharex=True)
    for axis, (what, label) in zip(
        axes, (("rss_mb", "RSS (MB)"), ("fds", "open descriptors"), ("threads", "threads")), strict=False
    ):
        for name in sorted({s.name for s in samples}):
            series = [s for s in samples if s.name == name]
            axis.plot([s.at for s in series], [getattr(s, what) for s in series], label=name, linewidth=1)
        axis.set_ylabel(label)
    axes[0].legend(loc="upper left", fontsize="small", ncol=3)
    axes[3].plot([t for t, _ in latency], [p for _, p in latency], color="black", linewidth=1)
    axes[3].set_ylabel("client p99 add (ms)")
    axes[3].set_xlabel("minutes")
    for axis in axes:
        for at, _ in faults:
            axis.axvline(at, color="red", alpha=0.15, linewidth=0.8)
    figure.suptitle("soak: long-lived processes and the client's add latency (red: faults)")
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)


# The bookies' caches bounded small, so that each is full within the warm-up and what grows after it is a leak: a
# 2-hour soak at the defaults grew each bookie's RSS by 8 MB (53.5 to 61.3), its index pages filling the ledger
# cache towards pageLimit's 512 MB (8 bytes an entry: ~890,000 entries a bookie), and its descriptors reached
# openFileLimit=16 only after 17 minutes, past the warm-up.
SOAK_SETTINGS = {"pageLimit": "64", "openFileLimit": "4"}


def soak(minutes: float, rate: float, seed: int, directory: Path, every: float = 10.0) -> tuple[bool, str]:
    from faults.cluster import FaultCluster

    from bookie.client import BookKeeper

    cluster = FaultCluster(directory / "cluster", settings=SOAK_SETTINGS)
    rng = random.Random(seed)
    samples: list[Sample] = []
    latency: list[tuple[float, float]] = []
    faults: list[tuple[float, str]] = []
    cluster.start()
    load = Load(cluster.service_uri, rate)
    writer = threading.Thread(target=load.run, name="soak-load", daemon=True)
    began = time.monotonic()
    writer.start()
    next_fault = began + rng.uniform(20, 60)
    try:
        while (now := time.monotonic()) < began + minutes * 60:
            at = (now - began) / 60
            for index, bookie in enumerate(cluster.bookies):
                sample = process_sample(at, f"bookie-{index + 1}", bookie.pid) if bookie.pid else None
                if sample:
                    samples.append(sample)
            if client := process_sample(at, "client", os.getpid()):
                samples.append(client)
            if (p99 := load.p99_since(now - every)) is not None:
                latency.append((at, p99))
            if now >= next_fault:
                kind = rng.choice(["bookie-crash", "bookie-pause", "zk-crash"])
                faults.append((at, kind))
                if kind == "bookie-crash":
                    cluster.kill_bookie(4)
                    time.sleep(5)
                    cluster.start_bookie(4)
                elif kind == "bookie-pause":
                    cluster.pause(4)
                    time.sleep(5)
                    cluster.resume(4)
                else:
                    cluster.kill_zookeeper()
                    time.sleep(5)
                    cluster.start_zookeeper()
                next_fault = time.monotonic() + rng.uniform(20, 60)
            time.sleep(max(0.0, every - (time.monotonic() - now)))
        load.stop.set()
        writer.join(60)
        cluster.heal()
        acknowledged = sum(last + 1 for last in load.acked.values())
        read_back = 0
        with BookKeeper(cluster.service_uri) as bk:
            for ledger_id, last in load.acked.items():
                with bk.open_ledger(ledger_id, PASSWORD, recovery=True) as reader:
                    got = [e.payload for e in reader.read(0, last)] if reader.last_add_confirmed >= last else []
                    read_back += sum(g == payload(ledger_id, n) for n, g in enumerate(got))
    finally:
        load.stop.set()
        cluster.close()
    problems = judge(samples, latency)
    with open(directory / "samples.csv", "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["minutes", "process", "pid", "rss_mb", "fds", "threads"])
        out.writerows([f"{s.at:.2f}", s.name, s.pid, f"{s.rss_mb:.1f}", s.fds, s.threads] for s in samples)
    plot(samples, latency, faults, directory / "soak.png")
    lines = [
        f"soak: {minutes:g} minutes at {rate:g} adds/s (E3 W2 A2), seed {seed}",
        f"faults injected:      {len(faults)} ({', '.join(sorted({k for _, k in faults})) or 'none'})",
        f"add failures:         {load.failures} (each a ledger left to recovery)",
        f"curves:               {directory / 'soak.png'} ({'flat' if not problems else 'NOT flat'})",
        *[f"  not flat: {p}" for p in problems],
        f"entries acknowledged: {acknowledged}",
        f"entries read back:    {read_back}",
        f"entries lost:         {acknowledged - read_back}",
    ]
    summary = "\n".join(lines)
    (directory / "summary.txt").write_text(summary + "\n")
    return not problems and acknowledged == read_back and acknowledged > 0, summary


def main() -> None:
    parser = argparse.ArgumentParser(prog="tests/faults/run --soak", description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=120)
    parser.add_argument("--rate", type=float, default=200)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--dir", help="where the samples, the PNG and the cluster's files go (default: a new temp dir)")
    args = parser.parse_args()
    directory = Path(args.dir or tempfile.mkdtemp(prefix="bkctl-soak-"))
    directory.mkdir(parents=True, exist_ok=True)
    ok, summary = soak(args.minutes, args.rate, args.seed, directory)
    print(summary)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

"""The client x bookie matrix: {Java client, our client} x {Java bookies, our bookies}, all in BookKeeper's
protocol v3.

Three bookies a side, 1 KiB entries, E3 W2 A2, CRC32C, fsync on, the same journal settings on both sides
(journalFlushWhenQueueEmpty=true, flushEntrylogBytes=524288, journalMaxGroupWaitMSec=2), each side with its own
ZooKeeper on 127.0.0.1. Cells run alternately, ``--runs`` times; medians are printed. Per cell: entries/s at max rate
(5,000 adds in flight at most, no rate limit), p50/p99 add latency at a fixed 10k entries/s, sequential read
entries/s of a ledger written beforehand, and CPU-seconds per 100k entries of the 3 bookies and of the client, over
the timed phase only. The Java client is benchmarks/java/JavaClientBench.java (compiled here against the oracle's
jars), warmed up with 20,000 adds before it is timed; ours is ``bkctl bench write/read``. Every process runs in this
script's session, as BookKeeper's scripts start theirs (bookie/local/process.py says why that matters).

``--background-load``: one more process spins on a core for the whole run, so every cell shares the machine with it.
``--drop-caches`` (root): the page cache is written back and dropped before each cell (and each --wire run), so that
each starts on the same memory (benchmarks/README.md says why; the read cells then read from the disk).

``--sweep``: instead of the matrix, the Java client's add latency against both kinds of bookies at 1k, 5k, 10k and
15k adds/s and at its maximum rate (5,000 in flight), alternating sides at each rate; p50/p99 against the rate reached,
plotted to ``--plot`` (PNG). ``--wire`` (root, tcpdump): instead of the matrix, the Java client's paced adds on each
side, ``--runs`` times alternating after an untimed warm-up of both, each run captured on the loopback: each add's
time inside the bookies, from the packet that completes its request to the packet that begins its answer, and each
entry's until its ack quorum answered, from its first request packet (wire_capture.py), beside the client's own p50/p99:
what the client's p50 has above the quorum's is the client's own.

    benchmarks/vs_bookkeeper.sh [--runs 3] [--entries 100000] [--quick] [--background-load] [--drop-caches]
                                [--json FILE]
    benchmarks/vs_bookkeeper.sh --sweep [--plot docs/images/vs-bookkeeper-sweep.png] [--background-load]
    benchmarks/vs_bookkeeper.sh --wire [--runs 3] [--background-load] [--drop-caches] [--json FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from admin.bench.stats import latency_ms
from bookie.local.sandbox import LEDGERS_ROOT

import wire_capture
from common import cpu_seconds, temporary_sandbox

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from interop.oracle import ENV as ORACLE_ENV  # noqa: E402
from interop.oracle import ORACLE, JavaCluster, compile_java, java_command  # noqa: E402

SETTINGS = {"journalFlushWhenQueueEmpty": "true", "flushEntrylogBytes": "524288", "journalMaxGroupWaitMSec": "2"}
BKCTL = [sys.executable, "-m", "bkctl"]
PACED_RATE = 10_000
ACK_QUORUM = 2  # E3 W2 A2, as JavaClientBench writes
SWEEP_RATES = (1_000, 5_000, 10_000, 15_000)
SWEEP_SECONDS = 5  # of adds at each fixed rate
PLOT = ROOT / "docs" / "images" / "vs-bookkeeper-sweep.png"  # benchmarks/README.md shows it
DROP_CACHES = "/proc/sys/vm/drop_caches"
# adds paced at PACED_RATE on each side before --wire measures: over the first 200k paced adds of a new Java cluster,
# its bookies' own p50 fell from 3.9 to 0.9 ms (JIT), ours stayed at 0.7-0.9; 200k at full rate left them at 4.4
WIRE_WARMUP = 300_000


def measured(
    bookie_pids: list[int], command: list[str], env: dict | None = None, timed: Callable[[], object] = lambda: None
) -> tuple[dict, float]:
    """Run a benchmark client: ``(its JSON result, the bookies' CPU-seconds)``. The bookies' CPU counts from the
    line "timed" (the Java tool's timed phase; the start for commands that do not print it) to the result;
    ``timed`` is called at that line."""
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    start, result = cpu_seconds(bookie_pids), None
    for line in process.stdout:
        if line.strip() == "timed":
            start = cpu_seconds(bookie_pids)
            timed()
        elif line.startswith("{"):
            bookies = cpu_seconds(bookie_pids) - start
            result = json.loads(line + process.stdout.read())
    _, stderr = process.communicate(timeout=900)
    if process.returncode != 0 or result is None:
        raise RuntimeError(f"{' '.join(command[:6])}... failed ({process.returncode}): {stderr[-1500:]}")
    return result, bookies


class Side:
    """One kind of bookies: its ZooKeeper and ledgers root, its bookies' pids and ports, and a ledger to read."""

    def __init__(self, zk: str, root: str, service_uri: str, pids: list[int], ports: list[int]):
        self.zk, self.root, self.service_uri, self.pids, self.ports = zk, root, service_uri, pids, ports
        self.ledger: int | None = None


class JavaClient:
    def __init__(self, classes: Path):
        self.classes = classes

    def _run(self, side: Side, *args, timed: Callable[[], object] = lambda: None) -> tuple[dict, float]:
        command = java_command(self.classes, "JavaClientBench", *map(str, args))
        return measured(side.pids, command, ORACLE_ENV, timed)

    def prepare(self, side: Side, entries: int) -> int:
        return self._run(side, "prepare", side.zk, side.root, entries)[0]["ledgerId"]

    def latency(self, side: Side, rate: int | None, entries: int, timed: Callable[[], object] = lambda: None) -> dict:
        """``entries`` adds at ``rate`` per second (None: as fast as they go): the rate reached and the latency
        quantiles (a sweep point); ``timed`` is called as the timed phase starts."""
        mode = ("paced", side.zk, side.root, entries, rate) if rate else ("write", side.zk, side.root, entries)
        result = self._run(side, *mode, timed=timed)[0]
        return {"rate": result["entriesPerSec"], **result["latencyMs"]}

    def cell(self, side: Side, entries: int) -> dict:
        write, bookies = self._run(side, "write", side.zk, side.root, entries)
        paced, _ = self._run(side, "paced", side.zk, side.root, min(entries, 50_000), PACED_RATE)
        read, read_bookies = self._run(side, "read", side.zk, side.root, entries, side.ledger)
        return cell(write, bookies, paced, read, read_bookies)


class OurClient:
    def cell(self, side: Side, entries: int) -> dict:
        base = [*BKCTL, "-u", side.service_uri, "bench"]
        write, bookies = measured(side.pids, [*base, "write", "--entries", str(entries), "-o", "json"])
        paced, _ = measured(
            side.pids,
            [*base, "write", "--rate", str(PACED_RATE), "--entries", str(min(entries, 50_000)), "-o", "json"],
        )
        read, read_bookies = measured(side.pids, [*base, "read", "--ledger", str(side.ledger), "-o", "json"])
        return cell(write, bookies, paced, read, read_bookies)


def cell(write: dict, bookies: float, paced: dict, read: dict, read_bookies: float) -> dict:
    """One sample of a cell; CPU-seconds per 100k entries."""
    per_100k = 100_000 / write["entries"], 100_000 / read["entries"]
    return {
        "write": write["entriesPerSec"],
        "p50": paced["latencyMs"]["p50"],
        "p99": paced["latencyMs"]["p99"],
        "read": read["entriesPerSec"],
        "cpuWriteBookies": bookies * per_100k[0],
        "cpuWriteClient": write["cpuSeconds"] * per_100k[0],
        "cpuReadBookies": read_bookies * per_100k[1],
        "cpuReadClient": read["cpuSeconds"] * per_100k[1],
    }


def median_cells(samples: dict[str, list[dict]]) -> dict[str, dict]:
    table = {}
    for cell, runs in samples.items():
        keys = set().union(*runs)
        table[cell] = {k: statistics.median(r[k] for r in runs if k in r) for k in keys}
    return table


COLUMNS = [
    ("write", "write/s", ",.0f"),
    ("p50", "p50 ms", ".1f"),
    ("p99", "p99 ms", ".1f"),
    ("read", "read/s", ",.0f"),
    ("cpuWriteBookies", "w cpu bk", ".2f"),
    ("cpuWriteClient", "w cpu cl", ".2f"),
    ("cpuReadBookies", "r cpu bk", ".2f"),
    ("cpuReadClient", "r cpu cl", ".2f"),
]


def render_runs(samples: dict[str, list[dict]]) -> str:
    """Each run's add latency per cell: whether one side is ahead in every run, not only in the medians."""
    runs = len(next(iter(samples.values())))
    lines = [f"{'p50 / p99 ms per run':34}" + "".join(f" {'run ' + str(r + 1):>15}" for r in range(runs))]
    for name, cells in samples.items():
        lines.append(f"{name:34}" + "".join(f" {c['p50']:>6.1f} / {c['p99']:>6.1f}" for c in cells))
    return "\n".join(lines)


# Spins until it is killed, or until this script is gone (its parent changes), so that it never outlives the run.
SPINNER = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    pass"


@contextlib.contextmanager
def background_load(on: bool):
    """A process spinning on one core while the body runs."""
    if not on:
        yield
        return
    spinner = subprocess.Popen([sys.executable, "-c", SPINNER])
    try:
        yield
    finally:
        spinner.kill()
        spinner.wait()


def sweep(java_client: JavaClient, sides: dict[str, Side]) -> dict[str, list[dict]]:
    """The Java client's latency at each of SWEEP_RATES and at its maximum, sides alternating at each rate."""
    points: dict[str, list[dict]] = {name: [] for name in sides}
    for rate in (*SWEEP_RATES, None):
        entries = (rate or 20_000) * SWEEP_SECONDS
        for name, side in sides.items():
            print(f"sweep {rate or 'max'}/s: {name}", file=sys.stderr)
            points[name].append({"offered": rate, **java_client.latency(side, rate, entries)})
    return points


def render_sweep(points: dict[str, list[dict]]) -> str:
    lines = [f"{'offered adds/s':16}" + "".join(f" {name:>36}" for name in points)]
    for i, offered in enumerate(p["offered"] for p in next(iter(points.values()))):
        row = f"{offered or 'max':>16}"
        for series in points.values():
            p = series[i]
            row += f" {p['rate']:>12,}/s {p['p50']:>8.1f} / {p['p99']:>8.1f} ms"
        lines.append(row)
    return "\n".join(lines)


def wire(
    java_client: JavaClient, sides: dict[str, Side], runs: int, pcap: Path, drop: bool = False
) -> dict[str, list[dict]]:
    """The Java client's paced adds on each side, alternating, captured: per run, the client's p50/p99 and the
    bookies' own (all the adds of the 3 bookies; each add of the client waits for two of them), in ms."""
    for name, side in sides.items():
        print(f"wire: warming up {name}", file=sys.stderr)
        java_client.latency(side, PACED_RATE, WIRE_WARMUP)
    samples: dict[str, list[dict]] = {name: [] for name in sides}
    started: list[float] = []  # when each run's timed phase began
    for run in range(runs):
        for name, side in sides.items():
            print(f"wire run {run + 1}/{runs}: {name}", file=sys.stderr)
            if drop:
                drop_caches()
            with wire_capture.capture(pcap, side.ports):
                client = java_client.latency(side, PACED_RATE, 50_000, lambda: started.append(time.time()))
            times = wire_capture.add_times(pcap.read_bytes(), set(side.ports), ACK_QUORUM, started[-1])
            inside = [seconds for per_bookie in times.bookies.values() for seconds in per_bookie]
            if not inside or not times.quorum:
                raise RuntimeError(f"the capture of {name} holds no add of the timed phase")
            bookies, quorum = latency_ms(inside), latency_ms(times.quorum)  # as bkctl bench counts its own
            samples[name].append(
                {
                    "p50": client["p50"],
                    "p99": client["p99"],
                    "quorumP50": quorum["p50"],
                    "quorumP99": quorum["p99"],
                    "bookieP50": bookies["p50"],
                    "bookieP99": bookies["p99"],
                    "adds": len(inside),
                }
            )
    return samples


def render_wire(samples: dict[str, list[dict]]) -> str:
    lines = [f"{'p50 / p99 ms':34} {'run':>4} {'the client sees':>17} {'ack quorum':>17} {'inside a bookie':>17}"]
    for name, runs in samples.items():
        for run, s in enumerate(runs, 1):
            lines.append(
                f"{name:34} {run:>4} {s['p50']:>7.2f} / {s['p99']:>6.2f} {s['quorumP50']:>7.2f} / "
                f"{s['quorumP99']:>6.2f} {s['bookieP50']:>7.2f} / {s['bookieP99']:>6.2f}"
            )
    lines.append(
        f"the Java client paced at {PACED_RATE:,} adds/s, on the wire: ack quorum, from an entry's first request "
        f"packet to the first packet of the answer that completes its quorum (A{ACK_QUORUM}); inside a bookie, from "
        "the packet that completes an add's request to the packet that begins its answer, every add of the 3 bookies"
    )
    return "\n".join(lines)


def draw(points: dict[str, list[dict]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 5))
    for (name, series), color in zip(points.items(), ("tab:orange", "tab:blue"), strict=False):
        rates = [p["rate"] for p in series]
        axis.plot(rates, [p["p99"] for p in series], "o-", color=color, label=f"{name}: p99")
        axis.plot(rates, [p["p50"] for p in series], "o--", color=color, label=f"{name}: p50")
    axis.set_yscale("log")
    axis.set_xlabel("adds/s reached (1 KiB, E3 W2 A2; the last point: as fast as it goes, 5,000 in flight)")
    axis.set_ylabel("add latency (ms)")
    axis.set_title("Java BookKeeper client: add latency against the rate")
    axis.grid(True, which="both", alpha=0.3)
    axis.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def render(table: dict[str, dict]) -> str:
    head = f"{'client -> bookies':34}" + "".join(f" {title:>9}" for _, title, _ in COLUMNS)
    lines = [head, "-" * len(head)]
    for name, values in table.items():
        lines.append(f"{name:34}" + "".join(f" {format(values[key], spec):>9}" for key, _, spec in COLUMNS))
    lines.append(
        f"p50/p99: add latency at a fixed {PACED_RATE:,} entries/s; cpu: CPU-seconds per 100k entries "
        "(w: writing at max rate, r: reading) of the 3 bookies (bk) and of the client (cl)"
    )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="20,000 entries, one run: a smoke test")
    parser.add_argument("--json", metavar="FILE", help="also write the medians and every sample as JSON")
    parser.add_argument("--background-load", action="store_true", help="one core kept busy by another process")
    parser.add_argument("--drop-caches", action="store_true", help="drop the page cache before each cell (root)")
    parser.add_argument("--sweep", action="store_true", help="the Java client's latency against the rate, both sides")
    parser.add_argument("--plot", metavar="PNG", type=Path, default=PLOT, help="where --sweep draws")
    parser.add_argument("--wire", action="store_true", help="the bookies' own add latency, captured (root, tcpdump)")
    args = parser.parse_args()
    runs, entries = (1, 20_000) if args.quick else (args.runs, args.entries)
    if shutil.which("bash") is None or not (ORACLE / "bin" / "bk-cluster").exists():
        print(f"needs bash and the BookKeeper oracle at {ORACLE}", file=sys.stderr)
        return 2
    if args.drop_caches and not os.access(DROP_CACHES, os.W_OK):
        print(f"--drop-caches needs to write {DROP_CACHES} (root)", file=sys.stderr)
        return 2
    if args.sweep:
        import matplotlib  # noqa: F401 - missing, it fails now rather than after minutes of measuring
    if args.wire and (why := wire_capture.missing()):
        print(why, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bkctl-vs-bk-") as tmp, temporary_sandbox(3, SETTINGS) as (_, state, _env):
        compile_java(ROOT / "benchmarks" / "java" / "JavaClientBench.java", Path(tmp) / "classes")
        java = JavaCluster.start(Path(tmp) / "java", 3, *(f"{k}={v}" for k, v in SETTINGS.items()))
        try:
            java_pids = [int((java.root / f"b{n}" / "bookie.pid").read_text()) for n in (1, 2, 3)]
            java_bookies = Side(java.zk, "/ledgers", java.service_uri, java_pids, java.bookie_ports)
            our_bookies = Side(
                f"127.0.0.1:{state.zk_port}",
                LEDGERS_ROOT,
                state.service_uri,
                [b["pid"] for b in state.bookies],
                [b["port"] for b in state.bookies],
            )
            java_client = JavaClient(Path(tmp) / "classes")
            with background_load(args.background_load):
                sides = {"Java client -> Java bookies": java_bookies, "Java client -> our bookies": our_bookies}
                if args.sweep:
                    result = {"sweep": sweep(java_client, sides)}
                elif args.wire:
                    result = {"wire": wire(java_client, sides, runs, Path(tmp) / "adds.pcap", args.drop_caches)}
                else:
                    result = matrix(java_client, java_bookies, our_bookies, runs, entries, args.drop_caches)
        finally:
            java.stop()
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    if args.sweep:
        print(render_sweep(result["sweep"]))
        draw(result["sweep"], args.plot)
        print(f"plot: {args.plot}")
    elif args.wire:
        print(render_wire(result["wire"]))
    else:
        print(render(result["medians"]))
        print(render_runs(result["samples"]))
    if args.background_load:
        print("with one core kept busy by another process throughout")
    if args.drop_caches:
        print("with the page cache dropped before each cell")
    return 0


def drop_caches() -> None:
    os.sync()
    Path(DROP_CACHES).write_text("3\n")


def matrix(
    java_client: JavaClient, java_bookies: Side, our_bookies: Side, runs: int, entries: int, drop: bool = False
) -> dict:
    """Every cell ``runs`` times, alternating: ``{"medians": ..., "samples": ...}``."""
    for side in (java_bookies, our_bookies):  # the ledger each client reads, written once, untimed
        side.ledger = java_client.prepare(side, entries)
    cells = {
        "Java client -> Java bookies": lambda: java_client.cell(java_bookies, entries),
        "Java client -> our bookies": lambda: java_client.cell(our_bookies, entries),
        "our client -> Java bookies": lambda: OurClient().cell(java_bookies, entries),
        "our client -> our bookies": lambda: OurClient().cell(our_bookies, entries),
    }
    samples: dict[str, list[dict]] = {name: [] for name in cells}
    for run in range(runs):
        for name, measure in cells.items():
            print(f"run {run + 1}/{runs}: {name}", file=sys.stderr)
            if drop:
                drop_caches()
            samples[name].append(measure())
    return {"medians": median_cells(samples), "samples": samples}


if __name__ == "__main__":
    sys.exit(main())

"""The client x bookie matrix: {Java client, our client} x {Java bookies, our bookies}, all in BookKeeper's
protocol v3.

Three bookies a side, 1 KiB entries, E3 W2 A2, CRC32C, fsync on, the same journal settings on both sides
(journalFlushWhenQueueEmpty=true, flushEntrylogBytes=524288, journalMaxGroupWaitMSec=2), each side with its own
ZooKeeper on 127.0.0.1. Cells run alternately, ``--runs`` times; medians are printed. Per cell: entries/s at max rate
(5,000 adds in flight at most, no rate limit), p50/p99 add latency at a fixed 10k entries/s, sequential read
entries/s of a ledger written beforehand, and CPU-seconds per 100k entries of the 3 bookies and of the client, over
the timed phase only. The Java client is benchmarks/java/JavaClientBench.java (compiled here against the oracle's
jars), warmed up with 20,000 adds before it is timed; ours is ``bkctl bench write/read``.

    benchmarks/vs_bookkeeper.sh [--runs 3] [--entries 100000] [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bookie.local.sandbox import LEDGERS_ROOT

from common import cpu_seconds, temporary_sandbox

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from interop.oracle import ENV as ORACLE_ENV  # noqa: E402
from interop.oracle import ORACLE, JavaCluster, compile_java, java_command  # noqa: E402

SETTINGS = {"journalFlushWhenQueueEmpty": "true", "flushEntrylogBytes": "524288", "journalMaxGroupWaitMSec": "2"}
BKCTL = [sys.executable, "-m", "bkctl"]
PACED_RATE = 10_000


def measured(bookie_pids: list[int], command: list[str], env: dict | None = None) -> tuple[dict, float]:
    """Run a benchmark client: ``(its JSON result, the bookies' CPU-seconds)``. The bookies' CPU counts from the
    line "timed" (the Java tool's timed phase; the start for commands that do not print it) to the result."""
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    start, result = cpu_seconds(bookie_pids), None
    for line in process.stdout:
        if line.strip() == "timed":
            start = cpu_seconds(bookie_pids)
        elif line.startswith("{"):
            bookies = cpu_seconds(bookie_pids) - start
            result = json.loads(line + process.stdout.read())
    _, stderr = process.communicate(timeout=900)
    if process.returncode != 0 or result is None:
        raise RuntimeError(f"{' '.join(command[:6])}... failed ({process.returncode}): {stderr[-1500:]}")
    return result, bookies


class Side:
    """One kind of bookies: its ZooKeeper and ledgers root, its bookie pids, and a ledger to read."""

    def __init__(self, zk: str, root: str, service_uri: str, pids: list[int]):
        self.zk, self.root, self.service_uri, self.pids = zk, root, service_uri, pids
        self.ledger: int | None = None


class JavaClient:
    def __init__(self, classes: Path):
        self.classes = classes

    def _run(self, side: Side, *args) -> tuple[dict, float]:
        return measured(side.pids, java_command(self.classes, "JavaClientBench", *map(str, args)), ORACLE_ENV)

    def prepare(self, side: Side, entries: int) -> int:
        return self._run(side, "prepare", side.zk, side.root, entries)[0]["ledgerId"]

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
    args = parser.parse_args()
    runs, entries = (1, 20_000) if args.quick else (args.runs, args.entries)
    if shutil.which("bash") is None or not (ORACLE / "bin" / "bk-cluster").exists():
        print(f"needs bash and the BookKeeper oracle at {ORACLE}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bkctl-vs-bk-") as tmp, temporary_sandbox(3, SETTINGS) as (_, state, _env):
        compile_java(ROOT / "benchmarks" / "java" / "JavaClientBench.java", Path(tmp) / "classes")
        java = JavaCluster.start(Path(tmp) / "java", 3, *(f"{k}={v}" for k, v in SETTINGS.items()))
        try:
            java_pids = [int((java.root / f"b{n}" / "bookie.pid").read_text()) for n in (1, 2, 3)]
            java_bookies = Side(java.zk, "/ledgers", java.service_uri, java_pids)
            our_bookies = Side(
                f"127.0.0.1:{state.zk_port}", LEDGERS_ROOT, state.service_uri, [b["pid"] for b in state.bookies]
            )
            java_client = JavaClient(Path(tmp) / "classes")
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
                    samples[name].append(measure())
        finally:
            java.stop()
    table = median_cells(samples)
    print(render(table))
    if args.json:
        Path(args.json).write_text(json.dumps({"medians": table, "samples": samples}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

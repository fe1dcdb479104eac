"""The client x bookie matrix of issue 13: {Java client, our client} x {Java bookies, our bookies}, plus our client
over its batched gRPC data path (the default toward our bookies) beside BookKeeper's protocol.

Three bookies a side, 1 KiB entries, E3 W2 A2, fsync on, the same journal settings on both sides
(journalFlushWhenQueueEmpty=true, flushEntrylogBytes=524288, journalMaxGroupWaitMSec=2), each side with its own
ZooKeeper on 127.0.0.1. Cells run alternately, ``--runs`` times; medians are printed. Per cell: entries/s at max rate,
p50/p99 add latency at a fixed 10k entries/s (our client only: BookKeeper's BenchThroughputLatency has no rate mode),
sequential read entries/s, and CPU-seconds per 100k entries of the bookies and of the client process.

    benchmarks/vs_bookkeeper.sh [--runs 3] [--entries 100000] [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import temporary_sandbox

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from interop.oracle import ENV as ORACLE_ENV  # noqa: E402
from interop.oracle import ORACLE, JavaCluster  # noqa: E402

SETTINGS = {"journalFlushWhenQueueEmpty": "true", "flushEntrylogBytes": "524288", "journalMaxGroupWaitMSec": "2"}
BKCTL = [sys.executable, "-m", "bkctl"]
JAVA_BENCH = "org.apache.bookkeeper.benchmark"


def ticks(pids: list[int]) -> float:
    """CPU-seconds (user + system) the processes used so far."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measured(bookie_pids: list[int], command: list[str], env: dict) -> tuple[str, float, float, float]:
    """Run a client command: ``(stdout + stderr, seconds, client CPU-s, bookies' CPU-s)``."""
    bookies0, client0, started = ticks(bookie_pids), children_cpu(), time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:6])}... failed: {done.stderr[-1500:]}")
    return done.stdout + done.stderr, seconds, children_cpu() - client0, ticks(bookie_pids) - bookies0


def java_tool(main: str, *args: str) -> list[str]:
    """A class of the oracle's jar with its classpath, as bin/bk-common-tool.sh runs its tools."""
    script = (f'. "{ORACLE}/bin/bk-common.sh"; bk_find_java; bk_find_spark_jars; bk_classpath 0; '
              f'exec "$JAVA" -Xmx1g -Dlog4j.configurationFile="$BK_ORACLE_HOME/conf/log4j2-tools.xml" '
              f'-Dbk.oracle.log.level=INFO -cp "$BK_CP" {main} "$@"')
    return ["bash", "-c", script, "java-tool", *args]


class Side:
    """One kind of bookies: its ZooKeeper, its bookie pids, and how each client reaches it."""

    def __init__(self, name: str, zk: str, service_uri: str, pids: list[int]):
        self.name, self.zk, self.service_uri, self.pids = name, zk, service_uri, pids


def java_write(side: Side, entries: int) -> dict:
    out, seconds, client, bookies = measured(side.pids, java_tool(
        f"{JAVA_BENCH}.BenchThroughputLatency", "-zookeeper", side.zk, "-entrysize", "1024", "-ensemble", "3",
        "-quorum", "2", "-ackQuorum", "2", "-throttle", "5000", "-sendlimit", str(entries), "-skipwarmup",
        "-time", "600"), ORACLE_ENV)
    rate = float(re.search(r"tp = ([\d.]+)", out).group(1))
    return {"write": rate, "cpuClient": client, "cpuBookies": bookies, "n": entries}


def java_read(side: Side, entries: int) -> dict:
    ledger = subprocess.run([str(ORACLE / "bin" / "bk-write"), "--zk", side.zk, "--n", str(entries), "--text", "x" * 1024,
                             "--window", "1000"], env=ORACLE_ENV, capture_output=True, text=True, timeout=900)
    ledger_id = ledger.stdout.strip()
    out, seconds, client, bookies = measured(side.pids, java_tool(
        f"{JAVA_BENCH}.BenchReadThroughputLatency", "-zookeeper", side.zk, "-ledger", ledger_id, "-password", "pw"),
        ORACLE_ENV)
    read, millis = re.search(r"Read (\d+) in (\d+)ms", out).groups()
    return {"read": int(read) / (int(millis) / 1000), "cpuReadClient": client, "cpuReadBookies": bookies}


def ours(side: Side, entries: int, transport: str, v2: bool = False) -> dict:
    env = {**os.environ, "BKCTL_DATA_TRANSPORT": transport, "BKCTL_USE_V2_WIRE_PROTOCOL": "true" if v2 else ""}
    base = [*BKCTL, "-u", side.service_uri, "bench"]
    out, _, client, bookies = measured(side.pids, [*base, "write", "--entries", str(entries), "-o", "json"], env)
    write = json.loads(out[out.index("{"):])
    out, _, _, _ = measured(side.pids, [*base, "write", "--rate", "10000", "--entries", str(min(entries, 50_000)),
                                        "-o", "json"], env)
    paced = json.loads(out[out.index("{"):])["latencyMs"]
    out, _, read_client, read_bookies = measured(side.pids, [*base, "read", "--entries", str(entries), "-o", "json"],
                                                 env)
    read = json.loads(out[out.index("{"):])
    return {"write": write["entriesPerSec"], "p50": paced["p50"], "p99": paced["p99"], "read": read["entriesPerSec"],
            "cpuClient": client, "cpuBookies": bookies, "cpuReadClient": read_client, "cpuReadBookies": read_bookies,
            "n": entries}


def median_cells(samples: dict[str, list[dict]]) -> dict[str, dict]:
    table = {}
    for cell, runs in samples.items():
        keys = set().union(*runs)
        table[cell] = {k: statistics.median(r[k] for r in runs if k in r) for k in keys}
    return table


def per_100k(cell: dict, key: str, read: bool = False) -> str:
    value = cell.get(key)
    return "-" if value is None else f"{value / cell['n'] * 100_000:.2f}"


def render(table: dict[str, dict]) -> str:
    head = f"{'client -> bookies':34} {'write/s':>9} {'p50ms':>7} {'p99ms':>7} {'read/s':>9} " \
           f"{'cpu w bk':>9} {'cpu w cl':>9} {'cpu r bk':>9} {'cpu r cl':>9}"
    lines = [head, "-" * len(head)]
    for cell, v in table.items():
        def fmt(key, spec=",.0f"):
            return format(v[key], spec) if key in v else "-"
        lines.append(f"{cell:34} {fmt('write'):>9} {fmt('p50', '.1f'):>7} {fmt('p99', '.1f'):>7} {fmt('read'):>9} "
                     f"{per_100k(v, 'cpuBookies'):>9} {per_100k(v, 'cpuClient'):>9} "
                     f"{per_100k(v, 'cpuReadBookies'):>9} {per_100k(v, 'cpuReadClient'):>9}")
    lines.append("cpu: CPU-seconds per 100k entries (w: the max-rate write, r: the read) of the 3 bookies (bk) "
                 "and of the client process (cl)")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="20,000 entries, one run: a smoke test")
    parser.add_argument("--json", metavar="FILE", help="also write the medians as JSON")
    args = parser.parse_args()
    runs, entries = (1, 20_000) if args.quick else (args.runs, args.entries)
    if shutil.which("bash") is None or not (ORACLE / "bin" / "bk-cluster").exists():
        print(f"needs bash and the BookKeeper oracle at {ORACLE}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bkctl-vs-bk-") as tmp, \
            temporary_sandbox(3, SETTINGS) as (_, state, _env):
        java = JavaCluster.start(Path(tmp) / "java", 3, *(f"{k}={v}" for k, v in SETTINGS.items()))
        try:
            java_pids = [int((java.root / f"b{n}" / "bookie.pid").read_text()) for n in (1, 2, 3)]
            java_side = Side("Java bookies", java.zk, java.service_uri, java_pids)
            ours_side = Side("our bookies", state["zookeeper"]["address"], state["serviceUri"],
                             [b["pid"] for b in state["bookies"]])
            cells = {
                "Java client -> Java bookies": lambda: {**java_write(java_side, entries), **java_read(java_side, entries)},
                "Java client -> our bookies": lambda: {**java_write(ours_side, entries), **java_read(ours_side, entries)},
                "our client -> Java bookies": lambda: ours(java_side, entries, "bookkeeper"),
                "our client -> our bookies (BK v3)": lambda: ours(ours_side, entries, "bookkeeper"),
                "our client -> our bookies (gRPC)": lambda: ours(ours_side, entries, "auto"),
            }
            samples: dict[str, list[dict]] = {cell: [] for cell in cells}
            for run in range(runs):
                for cell, measure in cells.items():
                    print(f"run {run + 1}/{runs}: {cell}", file=sys.stderr)
                    samples[cell].append(measure())
        finally:
            java.stop()
    table = median_cells(samples)
    print(render(table))
    if args.json:
        Path(args.json).write_text(json.dumps(table, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Compaction copy rate, unthrottled, and foreground add throughput while compactions run, against idle.

    python benchmarks/compaction.py [--entries 100000] [--seconds 4] [-o json]

A throw-away 3-bookie sandbox (compactionRate 0 = unthrottled, 16 MB entry logs). Two rounds, each writing ledgers
A and B interleaved (E=3 WQ=3 AQ=2, 1 KiB entries: every bookie holds both, half of every log) and deleting A:
1. copy rate: `bookie gc --major --wait` on one bookie at a time, so each compaction has the machine to itself;
   MB/s = B's bytes copied / the run's duration, from each bookie's own run report;
2. foreground: `bench write` for --seconds on the idle cluster, then `bookie gc --major --all` and at once the same
   `bench write`; reported as a ratio to the idle figure, with how long the compactions took (they should outlast
   the bench: raise --entries if not).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from bookie.client import BookKeeper

from common import bkctl_json, temporary_sandbox


def bench(env, seconds: float):
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bkctl",
            "bench",
            "write",
            "--time",
            str(seconds),
            "-e",
            "3",
            "-w",
            "2",
            "-a",
            "2",
            "-o",
            "json",
        ],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )


def write_half_garbage(uri: str, entries: int) -> None:
    with BookKeeper(uri) as bk:
        a, b = bk.create_ledger(3, 3, 2), bk.create_ledger(3, 3, 2)
        payload = b"x" * 1024
        for start in range(0, entries, 1000):
            futures = [
                f
                for _ in range(min(1000, entries - start))
                for f in (a.add_entry_async(payload), b.add_entry_async(payload))
            ]
            for future in futures:
                future.result(60)
        a.close(), b.close()
        bk.delete_ledger(a.ledger_id)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000, help="per ledger (A and B), per round")
    parser.add_argument("--seconds", type=float, default=4)
    parser.add_argument("-o", "--output", choices=["text", "json"], default="text")
    args = parser.parse_args()
    settings = {"compactionRate": "0", "logSizeLimit": str(16 << 20)}
    with temporary_sandbox(3, settings) as (_, state, env):
        write_half_garbage(state.service_uri, args.entries)
        alone = [bkctl_json(env, "bookie", "gc", "--major", b.bookie_id, "--wait")[0] for b in state.local_bookies()]
        write_half_garbage(state.service_uri, args.entries)
        idle = json.loads(bench(env, args.seconds).communicate()[0])
        bkctl_json(env, "bookie", "gc", "--major", "--all")
        busy = json.loads(bench(env, args.seconds).communicate()[0])
        during = bkctl_json(env, "bookie", "gc", "--major", "--all", "--wait")  # reports the runs already going

    def rate(run):
        return round(run["bytesCopied"] / max(run["durationMs"], 1) / 1e3, 1)

    result = {
        "copyMbPerSec": [rate(r) for r in alone],
        "bytesCopied": [r["bytesCopied"] for r in alone],
        "idleEntriesPerSec": round(idle["entriesPerSec"]),
        "duringCompactionEntriesPerSec": round(busy["entriesPerSec"]),
        "ratio": round(busy["entriesPerSec"] / idle["entriesPerSec"], 2),
        "compactionSecondsDuringBench": [r["durationMs"] / 1000 for r in during],
        "copyMbPerSecDuringBench": [rate(r) for r in during],
    }
    if args.output == "json":
        print(json.dumps(result, indent=2))
    else:
        print(
            f"compaction alone, per bookie: {result['copyMbPerSec']} MB/s "
            f"({sum(result['bytesCopied']) / 1e6:.0f} MB copied)"
        )
        print(
            f"foreground adds: {result['idleEntriesPerSec']}/s idle, {result['duringCompactionEntriesPerSec']}/s "
            f"while all 3 bookies compact (ratio {result['ratio']}); the compactions took "
            f"{result['compactionSecondsDuringBench']} s at {result['copyMbPerSecDuringBench']} MB/s"
        )


if __name__ == "__main__":
    main()

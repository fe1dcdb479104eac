"""p99 add latency at a fixed rate, A/B: two sets of bookie settings (--base, default none; --variant), runs
alternating between them.

    .venv/bin/python benchmarks/add_latency.py --rate 10000 --time 20 --runs 3 --variant journalFlushWhenQueueEmpty=true

Both sandboxes run at once (an idle one costs little), and the runs alternate, so machine noise hits both alike.
"""

from __future__ import annotations

import argparse
import json

from common import bkctl_json, temporary_sandbox


def bench(env: dict, rate: int, seconds: int) -> dict:
    return bkctl_json(env, "bench", "write", "--time", str(seconds), "--rate", str(rate))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=10000)
    parser.add_argument("--time", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--base", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--variant", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    settings = [dict(s.split("=", 1) for s in items) for items in (args.base, args.variant)]
    names = [",".join(items) or "defaults" for items in (args.base, args.variant)]
    with temporary_sandbox(3, settings[0]) as (*_, base), temporary_sandbox(3, settings[1]) as (*_, changed):
        for run in range(args.runs):
            for name, env in ((names[0], base), (names[1], changed)):
                result = bench(env, args.rate, args.time)
                print(
                    f"run {run + 1} {name:60} {json.dumps(result['latencyMs'])} {result['entriesPerSec']:.0f}/s",
                    flush=True,
                )


if __name__ == "__main__":
    main()

"""`cluster check` over many closed ledgers, against BookKeeper's costly "ledger check" (`--verify-entries 100`)
on the same ledgers in the same run.

    python benchmarks/check.py [--ledgers 10000] [--entries 10] [-o json]

Starts a throw-away 3-bookie sandbox, writes the ledgers through the client (E=3 WQ=2 AQ=2), then times both
commands as a user runs them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time

from bookie.client import BookKeeper
from bookie.codec.digest import DigestType

from common import temporary_sandbox


async def populate(core, ledgers: int, entries: int, parallel: int = 64) -> None:
    window = asyncio.Semaphore(parallel)

    async def one():
        async with window:
            writer = await core.create(3, 2, 2, DigestType.CRC32C, b"", {})
            for i in range(entries):
                writer.append(b"entry %d" % i)
            await writer.close()

    await asyncio.gather(*(one() for _ in range(ledgers)))


def timed(args: list[str], env: dict) -> tuple[float, dict]:
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "bkctl", *args, "-o", "json"], capture_output=True, env=env).stdout
    return time.perf_counter() - started, json.loads(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ledgers", type=int, default=10_000)
    parser.add_argument("--entries", type=int, default=10)
    parser.add_argument("-o", "--output", choices=["text", "json"], default="text")
    args = parser.parse_args()
    with temporary_sandbox(bookies=3) as (_, state, env):
        started = time.perf_counter()
        with BookKeeper(state.service_uri) as bk:
            bk.run(populate(bk.core, args.ledgers, args.entries))
        populate_s = time.perf_counter() - started
        check_s, check = timed(["cluster", "check"], env)
        verify_s, verify = timed(["cluster", "check", "--verify-entries", "100"], env)
    assert check["checkedLedgers"] == verify["checkedLedgers"] == args.ledgers, (check, verify)
    result = {
        "ledgers": args.ledgers,
        "entriesPerLedger": args.entries,
        "populateSeconds": round(populate_s, 1),
        "checkSeconds": round(check_s, 2),
        "verifyEntriesSeconds": round(verify_s, 2),
        "ratio": round(verify_s / check_s, 1),
        "violations": [len(check["violations"]), len(verify["violations"])],
    }
    if args.output == "json":
        print(json.dumps(result, indent=2))
    else:
        print(f"cluster check                     {args.ledgers} ledgers in {check_s:.2f} s")
        print(f"cluster check --verify-entries 100 {args.ledgers} ledgers in {verify_s:.2f} s")
        print(f"ratio {verify_s / check_s:.1f}x (violations: {result['violations']})")


if __name__ == "__main__":
    main()

"""`bookie recover` re-replication rate: a stopped bookie's share of N MB of ledgers, copied to the others.

    python benchmarks/recover.py [--ledgers 100] [--entries 1000] [--entry-size 1024] [-o json]

Starts a throw-away 4-bookie sandbox, writes the ledgers (E=3 WQ=2 AQ=2), stops one bookie cleanly, and times
`bkctl bookie recover` as a user runs it; MB/s counts the bytes copied.
"""

from __future__ import annotations

import argparse
import json
import os
import time

from bookie.client import BookKeeper

from common import bkctl_json, temporary_sandbox


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ledgers", type=int, default=100)
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--entry-size", type=int, default=1024)
    parser.add_argument("-o", "--output", choices=["text", "json"], default="text")
    args = parser.parse_args()
    with temporary_sandbox(bookies=4) as (sandbox, state, env):
        payload = os.urandom(args.entry_size)
        with BookKeeper(state.service_uri) as bk:
            for _ in range(args.ledgers):
                ledger = bk.create_ledger(3, 2, 2, digest_type="crc32c")
                ledger.add_entries(payload for _ in range(args.entries))
                ledger.close()
        victim = sandbox.stop_bookie("1")
        started = time.perf_counter()
        report = bkctl_json(env, "bookie", "recover", victim.bookie_id, "--yes")
        seconds = time.perf_counter() - started
    result = {
        "ledgers": report["ledgers"],
        "entries": report["entries"],
        "bytes": report["bytes"],
        "copySeconds": report["seconds"],
        "copyMbPerSec": report["mbPerSec"],
        "commandSeconds": round(seconds, 2),
        "commandMbPerSec": round(report["bytes"] / seconds / 1e6, 1),
        "failed": report["failed"],
    }
    if args.output == "json":
        print(json.dumps(result, indent=2))
    else:
        print(
            f"re-replicated {report['entries']} entries ({report['bytes'] / 1e6:.1f} MB) of {report['ledgers']} "
            f"ledgers: {report['mbPerSec']} MB/s copying, {result['commandMbPerSec']} MB/s for the whole command"
        )


if __name__ == "__main__":
    main()

"""Metadata benchmarks: `bkctl ledger list` over many ledgers, and `bkctl --help` start-up time.

    python benchmarks/metadata.py [--ledgers 100000] [-o json]

Starts a throw-away sandbox, writes N ledgers' metadata (format v3) with pipelined creates, then times the real
`bkctl` command as a user runs it (a subprocess, output to a pipe that is drained and counted).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from bookie.codec.digest import DigestType
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState, Segment, serialize
from bookie.meta.store import MetadataStore
from bookie.meta.uri import parse_service_uri

from common import temporary_sandbox

BKCTL = [sys.executable, "-m", "bkctl"]


def populate(uri: str, count: int) -> float:
    md = LedgerMetadata(
        3,
        2,
        2,
        (Segment(0, ("127.0.0.1:3181", "127.0.0.1:3182", "127.0.0.1:3183")),),
        state=LedgerState.CLOSED,
        last_entry_id=99,
        length=102400,
        digest_type=DigestType.CRC32C,
        password=b"",
        ctime=int(time.time() * 1000),
    )
    data = serialize(md)
    started = time.perf_counter()
    with MetadataStore(parse_service_uri(uri)) as store:
        ledgers = LedgerManager(store)
        parents = {ledgers.path(i).rsplit("/", 1)[0] for i in range(count)}
        for parent in sorted(parents):
            store.zk.ensure_path(parent)
        window = []
        for i in range(count):
            window.append(store.zk.create_async(ledgers.path(i), data))
            if len(window) >= 2000:
                for w in window:
                    w.get()
                window.clear()
        for w in window:
            w.get()
    return time.perf_counter() - started


def timed(args: list[str], env: dict) -> tuple[float, int]:
    started = time.perf_counter()
    out = subprocess.run(args, capture_output=True, env=env, check=True).stdout
    return time.perf_counter() - started, len(out.splitlines())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ledgers", type=int, default=100_000)
    parser.add_argument("-o", "--output", choices=["text", "json"], default="text")
    args = parser.parse_args()
    with temporary_sandbox(bookies=0) as (_, state, env):
        populate_s = populate(state.service_uri, args.ledgers)
        list_s, lines = timed([*BKCTL, "ledger", "list"], env)
        json_s, _ = timed([*BKCTL, "ledger", "list", "-o", "json"], env)
        meta_s, meta_lines = timed([*BKCTL, "ledger", "list", "--meta"], env)
        assert lines == args.ledgers + 1 and meta_lines == args.ledgers + 1, (lines, meta_lines)
        help_runs = [timed([*BKCTL, "--help"], env)[0] for _ in range(10)]
    result = {
        "ledgers": args.ledgers,
        "populateSeconds": round(populate_s, 2),
        "ledgerList": {"seconds": round(list_s, 3), "idsPerSec": round(args.ledgers / list_s)},
        "ledgerListJson": {"seconds": round(json_s, 3), "idsPerSec": round(args.ledgers / json_s)},
        "ledgerListMeta": {"seconds": round(meta_s, 3), "ledgersPerSec": round(args.ledgers / meta_s)},
        "helpSeconds": {"median": round(statistics.median(help_runs), 3), "max": round(max(help_runs), 3)},
    }
    if args.output == "json":
        print(json.dumps(result, indent=2))
    else:
        print(f"ledger list          {args.ledgers} ids in {list_s:.2f} s = {args.ledgers / list_s:,.0f} ids/s")
        print(f"ledger list -o json  {args.ledgers} ids in {json_s:.2f} s = {args.ledgers / json_s:,.0f} ids/s")
        print(f"ledger list --meta   {args.ledgers} ledgers in {meta_s:.2f} s = {args.ledgers / meta_s:,.0f} /s")
        print(f"bkctl --help         median {statistics.median(help_runs):.3f} s, max {max(help_runs):.3f} s")


if __name__ == "__main__":
    main()

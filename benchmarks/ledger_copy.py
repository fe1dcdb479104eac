"""`ledger copy` throughput between two throw-away sandboxes, and `ledger export` of the same ledgers in the same run.

    python benchmarks/ledger_copy.py [--ledgers 8] [--entries 16384] [--entry-size 1024] [--master local[2]] [-o json]

Starts two 3-bookie sandboxes on this machine, writes the ledgers into the first (E=3 WQ=2 AQ=2, distinct random
payloads), then runs, as a user would: `bkctl ledger export` of them to a temporary directory, and `bkctl ledger
copy` of them into the second sandbox (its writes go to every replica and are read back before each close).
Both rates are payload bytes over the seconds of their Spark job, as the commands report them (Spark's start not
counted). All eight processes share the machine's cores: the figures are a floor, not a cluster's rate.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile

from bookie.client import BookKeeper

from common import bkctl_json, temporary_sandbox


def write(uri: str, ledgers: int, entries: int, size: int) -> list[int]:
    ids = []
    with BookKeeper(uri) as bk:
        for _ in range(ledgers):
            ledger = bk.create_ledger(3, 2, 2, digest_type="crc32c", password=b"bench")
            ledger.add_entries(os.urandom(size) for _ in range(entries))
            ledger.close()
            ids.append(ledger.ledger_id)
    return ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ledgers", type=int, default=8)
    parser.add_argument("--entries", type=int, default=16384)
    parser.add_argument("--entry-size", type=int, default=1024)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("-o", "--output", choices=["text", "json"], default="text")
    args = parser.parse_args()
    with (
        temporary_sandbox(bookies=3) as (_, source, env),
        temporary_sandbox(bookies=3) as (_, target, _env),
        tempfile.TemporaryDirectory(prefix="bkctl-bench-") as out,
    ):
        ids = write(source.service_uri, args.ledgers, args.entries, args.entry_size)
        selected = f"{min(ids)}-{max(ids)}"
        spark = ["--master", args.master]
        export = bkctl_json(env, "ledger", "export", selected, "--to", f"{out}/export", *spark)
        copy = bkctl_json(env, "ledger", "copy", selected, "--to-cluster", target.service_uri, "--yes", *spark)
    result = {
        "ledgers": len(ids),
        "entries": copy["entries"],
        "bytes": copy["bytes"],
        "master": args.master,
        "exportSeconds": export["seconds"],
        "exportMbPerSec": export["mbPerSec"],
        "copySeconds": copy["seconds"],
        "copyMbPerSec": copy["mbPerSec"],
        "ratio": round(copy["mbPerSec"] / export["mbPerSec"], 2) if export["mbPerSec"] else None,
    }
    if args.output == "json":
        print(json.dumps(result, indent=2))
    else:
        print(
            f"{len(ids)} ledgers, {result['entries']} entries of {args.entry_size} bytes "
            f"({result['bytes'] / 1e6:.0f} MB) on {args.master}"
        )
        print(f"  export {result['exportSeconds']:>7.2f} s {result['exportMbPerSec']:>7.1f} MB/s")
        print(f"  copy   {result['copySeconds']:>7.2f} s {result['copyMbPerSec']:>7.1f} MB/s")
        print(f"  copy / export: {result['ratio']}")


if __name__ == "__main__":
    main()

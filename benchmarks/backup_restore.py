"""Backup, restore and copy through Spark, against `ledger export` of the same ledgers, in the same run.

    python benchmarks/backup_restore.py [--ledgers 8] [--entries 16384] [--entry-size 1024] [--master local[2]]
                                        [--rounds 2] [--no-copy] [-o json]

Starts two 3-bookie sandboxes on this machine and writes the ledgers into the first (E=3 WQ=2 AQ=2, CRC32C, distinct
random payloads). Then, each round, as a user would: `ledger export` of them; `cluster backup --data` (the export
with each file's SHA-256 and per-ledger checksums, its files read back); `cluster restore` of that backup into the
second sandbox (every entry written to both replicas, read back from both and checked, each ledger CAS-closed);
`ledger copy` of them into the second sandbox. The restored and copied ledgers are deleted between steps, so each
writes into the same ids. Rates are payload bytes over the seconds of each command's Spark job, as the commands
report them (Spark's start and the driver's checks not counted). Every process shares the machine's cores: the
figures are this machine's, not a cluster's, whose bookies would not share the client's CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile

from bookie.client import BookKeeper

from common import bkctl_json, temporary_sandbox

STEPS = ("export", "backup", "restore", "copy")


def write(uri: str, ledgers: int, entries: int, size: int) -> list[int]:
    ids = []
    with BookKeeper(uri) as bk:
        for _ in range(ledgers):
            ledger = bk.create_ledger(3, 2, 2, digest_type="crc32c", password=b"bench")
            ledger.add_entries(os.urandom(size) for _ in range(entries))
            ledger.close()
            ids.append(ledger.ledger_id)
    return ids


def delete(uri: str, ids: list[int]) -> None:
    with BookKeeper(uri) as bk:
        for ledger_id in ids:
            bk.delete_ledger(ledger_id)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ledgers", type=int, default=8)
    parser.add_argument("--entries", type=int, default=16384)
    parser.add_argument("--entry-size", type=int, default=1024)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--no-copy", action="store_true", help="export, backup and restore only")
    parser.add_argument("-o", "--output", choices=["text", "json"], default="text")
    args = parser.parse_args()
    steps = STEPS[:3] if args.no_copy else STEPS
    rates: dict[str, list[float]] = {step: [] for step in steps}
    with (
        temporary_sandbox(bookies=3) as (_, source, env),
        temporary_sandbox(bookies=3) as (_, target, _env),
        tempfile.TemporaryDirectory(prefix="bkctl-bench-") as out,
    ):
        ids = write(source.service_uri, args.ledgers, args.entries, args.entry_size)
        selected = f"{min(ids)}-{max(ids)}"
        spark = ["--master", args.master]
        for round_ in range(args.rounds):
            runs = {
                "export": bkctl_json(env, "ledger", "export", selected, "--to", f"{out}/export-{round_}", *spark),
                "backup": bkctl_json(env, "cluster", "backup", selected, "--data", "--to", f"{out}/b{round_}", *spark),
            }
            runs["restore"] = bkctl_json(
                env, "-u", target.service_uri, "cluster", "restore", "--from", f"{out}/b{round_}", "--yes",
                "--password-file", password_file(out), *spark,
            )  # fmt: skip
            delete(target.service_uri, ids)
            if not args.no_copy:
                runs["copy"] = bkctl_json(
                    env, "ledger", "copy", selected, "--to-cluster", target.service_uri, "--yes", *spark
                )
                delete(target.service_uri, ids)
            for step, run in runs.items():
                rates[step].append(run["mbPerSec"])
    result = {
        "ledgers": len(ids),
        "bytes": args.ledgers * args.entries * args.entry_size,
        "master": args.master,
        "mbPerSec": rates,
        "ratioToExport": {
            step: round(statistics.median(rates[step]) / statistics.median(rates["export"]), 2) for step in steps[1:]
        },
    }
    if args.output == "json":
        print(json.dumps(result, indent=2))
        return
    print(f"{len(ids)} ledgers of {args.entries} entries of {args.entry_size} bytes ({result['bytes'] / 1e6:.0f} MB)")
    for step in steps:
        ratio = f"  {result['ratioToExport'][step]}x export" if step != "export" else ""
        print(f"  {step:<8} " + " ".join(f"{rate:>6.1f}" for rate in rates[step]) + f" MB/s{ratio}")


def password_file(directory: str) -> str:
    """The ledgers' password in a private file: a backup made without --with-passwords holds none."""
    path = os.path.join(directory, "password")
    if not os.path.exists(path):
        with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write("bench\n")
    return path


if __name__ == "__main__":
    main()

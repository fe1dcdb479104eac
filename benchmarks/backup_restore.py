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
figures are this machine's, not a cluster's, whose bookies would not share the client's CPU. So each step also
gives the CPU seconds it took: its bookies' (the source's for export and backup, the target's for restore, both for
copy) and the command's own (the bkctl process, Spark's JVM and its Python workers, Spark's start included).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import tempfile

from bookie.client import BookKeeper

from common import bkctl_json, cpu_seconds, temporary_sandbox

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


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measured(env: dict[str, str], bookies: list[int], *args: str) -> dict:
    """``bkctl ARGS -o json`` run as a user would: its report, with the CPU seconds of ``bookies`` and of the
    command (its process and every one it waited for) while it ran."""
    cpu, own = cpu_seconds(bookies), children_cpu()
    doc = bkctl_json(env, *args)
    return {**doc, "cpuBookies": cpu_seconds(bookies) - cpu, "cpuCommand": children_cpu() - own}


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
    runs: dict[str, list[dict]] = {step: [] for step in steps}
    with (
        temporary_sandbox(bookies=3) as (_, source, env),
        temporary_sandbox(bookies=3) as (_, target, _env),
        tempfile.TemporaryDirectory(prefix="bkctl-bench-") as out,
    ):
        ids = write(source.service_uri, args.ledgers, args.entries, args.entry_size)
        selected = f"{min(ids)}-{max(ids)}"
        spark = ["--master", args.master]
        sources, targets = [b.pid for b in source.local_bookies()], [b.pid for b in target.local_bookies()]
        for round_ in range(args.rounds):
            export = ["ledger", "export", selected, "--to", f"{out}/export-{round_}", *spark]
            runs["export"].append(measured(env, sources, *export))
            backup = ["cluster", "backup", selected, "--data", "--to", f"{out}/b{round_}", *spark]
            runs["backup"].append(measured(env, sources, *backup))
            restore = ["-u", target.service_uri, "cluster", "restore", "--from", f"{out}/b{round_}", "--yes"]
            runs["restore"].append(measured(env, targets, *restore, "--password-file", password_file(out), *spark))
            delete(target.service_uri, ids)
            if not args.no_copy:
                copy = ["ledger", "copy", selected, "--to-cluster", target.service_uri, "--yes", *spark]
                runs["copy"].append(measured(env, sources + targets, *copy))
                delete(target.service_uri, ids)
    rates = {step: [run["mbPerSec"] for run in runs[step]] for step in steps}
    result = {
        "ledgers": len(ids),
        "bytes": args.ledgers * args.entries * args.entry_size,
        "master": args.master,
        "mbPerSec": rates,
        "ratioToExport": {
            step: round(statistics.median(rates[step]) / statistics.median(rates["export"]), 2) for step in steps[1:]
        },
        "cpuBookies": {step: [round(run["cpuBookies"], 2) for run in runs[step]] for step in steps},
        "cpuCommand": {step: [round(run["cpuCommand"], 2) for run in runs[step]] for step in steps},
    }
    if args.output == "json":
        print(json.dumps(result, indent=2))
        return
    print(f"{len(ids)} ledgers of {args.entries} entries of {args.entry_size} bytes ({result['bytes'] / 1e6:.0f} MB)")
    for step in steps:
        ratio = f"  {result['ratioToExport'][step]}x export" if step != "export" else ""
        cpu = ", ".join(f"{b}/{c}" for b, c in zip(result["cpuBookies"][step], result["cpuCommand"][step], strict=True))
        print(
            f"  {step:<8} " + " ".join(f"{rate:>6.1f}" for rate in rates[step]) + f" MB/s{ratio}"
            f"  (CPU s bookies/command: {cpu})"
        )


def password_file(directory: str) -> str:
    """The ledgers' password in a private file: a backup made without --with-passwords holds none."""
    path = os.path.join(directory, "password")
    if not os.path.exists(path):
        with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write("bench\n")
    return path


if __name__ == "__main__":
    main()

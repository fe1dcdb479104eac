"""`ledger export` throughput against a raw sequential read of the same ledgers, measured in the same run.

    python benchmarks/export.py [--ledgers 16] [--entries 16384] [--entry-size 1024] [--master local[2]]
                                [--conf spark.KEY=VALUE ...] [-o json]

Starts a throw-away 3-bookie sandbox and writes the ledgers (E=3 WQ=2 AQ=2, distinct random payloads). Then:

- raw read: the client in this process reads every ledger from its first to its last entry, one after the other
  (``ReadHandle.iter_entries``, as a script would);
- export: the same ledgers exported to Parquet with Spark (``--master``), timed from the plan to the written files,
  after a warm-up export of one ledger (Spark's start and its first Python workers are not counted);
- noop: the same read through the data source (``spark.read.format("bookkeeper")``, as from PySpark) into Spark's
  ``noop`` sink, after a warm-up read of one ledger: the data source's own rate, rows going through Spark's JVM.

MB/s count payload bytes. The ratio is export / raw read. CPU seconds of each phase are shown by process (Linux):
the bookies, this process (the client, or Spark's Python driver), Spark's JVM, and Spark's Python workers.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from admin.export.job import run_export
from admin.export.plan import Selection, plan_export
from admin.export.session import spark_session
from admin.export.source import BookKeeperDataSource
from bookie.client import BookKeeper

from common import temporary_sandbox

PASSWORD = b"bench"


def write(uri: str, ledgers: int, entries: int, size: int) -> list[int]:
    ids = []
    with BookKeeper(uri) as bk:
        for _ in range(ledgers):
            ledger = bk.create_ledger(3, 2, 2, digest_type="crc32c", password=PASSWORD)
            ledger.add_entries(os.urandom(size) for _ in range(entries))
            ledger.close()
            ids.append(ledger.ledger_id)
    return ids


def raw_read(uri: str, ids: list[int]) -> tuple[int, float]:
    with BookKeeper(uri) as bk:
        started, size = time.perf_counter(), 0
        for lid in ids:
            handle = bk.open_ledger(lid, PASSWORD, recovery=False)
            size += sum(len(e.payload) for e in handle.iter_entries(0, handle.last_add_confirmed))
        return size, time.perf_counter() - started


def _cpu_table() -> dict[int, tuple[int, float, float]]:
    """``{pid: (ppid, own CPU s, reaped children's CPU s)}`` from /proc."""
    tick, table = os.sysconf("SC_CLK_TCK"), {}
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        table[int(name)] = (
            int(fields[1]),
            (int(fields[11]) + int(fields[12])) / tick,
            (int(fields[13]) + int(fields[14])) / tick,
        )
    return table


def cpu_seconds(bookie_pids: list[int], jvm_pid: int | None) -> dict[str, float]:
    """CPU seconds used so far, by kind of process."""
    table = _cpu_table()

    def tree(root: int) -> set[int]:
        found, grew = {root}, True
        while grew:
            more = {pid for pid, (ppid, _, _) in table.items() if ppid in found} - found
            found, grew = found | more, bool(more)
        return found & table.keys()

    def total(pids) -> float:
        return sum(table[pid][1] + table[pid][2] for pid in pids)

    workers = tree(jvm_pid) - {jvm_pid} if jvm_pid else set()
    return {
        "bookies": total(set().union(*(tree(pid) for pid in bookie_pids))),
        "thisProcess": sum(os.times()[:2]),
        "sparkJvm": table[jvm_pid][1] if jvm_pid in table else 0.0,
        "sparkPythonWorkers": total(workers),
    }


def _used(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {kind: round(after[kind] - before[kind], 2) for kind in before}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ledgers", type=int, default=16)
    parser.add_argument("--entries", type=int, default=16384)
    parser.add_argument("--entry-size", type=int, default=1024)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="spark.KEY=VALUE",
        help="a Spark setting, e.g. spark.sql.parquet.compression.codec=none",
    )
    parser.add_argument("-o", "--output", choices=["text", "json"], default="text")
    args = parser.parse_args()
    with temporary_sandbox(bookies=3) as (_, state, _env), tempfile.TemporaryDirectory(prefix="bkctl-bench-") as tmp:
        uri, work = state.service_uri, Path(tmp)
        ids = write(uri, args.ledgers, args.entries, args.entry_size)
        bookies = [b.pid for b in state.local_bookies()]
        cpu = {"rawRead": cpu_seconds(bookies, None)}
        raw_bytes, raw_seconds = raw_read(uri, ids)
        cpu["rawRead"] = _used(cpu["rawRead"], cpu_seconds(bookies, None))
        conf = dict(item.split("=", 1) for item in args.conf)
        with spark_session(args.master, conf, work / "spark.log") as spark, BookKeeper(uri) as bk:
            from pyspark import SparkContext

            jvm = SparkContext._gateway.proc.pid
            warm = plan_export(bk, Selection(ids=(ids[0],)))
            run_export(spark, uri, warm, str(work / "warm-up"))
            before, started = cpu_seconds(bookies, jvm), time.perf_counter()
            plan = plan_export(bk, Selection(ids=tuple(ids)))
            report = run_export(spark, uri, plan, str(work / "export"))
            export_seconds = time.perf_counter() - started
            cpu["export"] = _used(before, cpu_seconds(bookies, jvm))
            spark.dataSource.register(BookKeeperDataSource)

            def noop(ledgers):
                frame = spark.read.format("bookkeeper").option("serviceUri", uri)
                frame.option("ledgers", ",".join(map(str, ledgers))).load().write.format("noop").mode(
                    "overwrite"
                ).save()

            noop(ids[:1])  # its own warm-up: the data source runs in Python workers of another kind
            before, started = cpu_seconds(bookies, jvm), time.perf_counter()
            noop(ids)
            noop_seconds = time.perf_counter() - started
            cpu["noop"] = _used(before, cpu_seconds(bookies, jvm))
    mb = raw_bytes / 1e6
    result = {
        "ledgers": len(ids),
        "entries": report.entries,
        "bytes": report.bytes,
        "files": report.files,
        "partitions": len(plan.partitions),
        "master": args.master,
        "rawReadSeconds": round(raw_seconds, 2),
        "rawReadMbPerSec": round(mb / raw_seconds, 1),
        "exportSeconds": round(export_seconds, 2),
        "exportMbPerSec": round(mb / export_seconds, 1),
        "noopSeconds": round(noop_seconds, 2),
        "noopMbPerSec": round(mb / noop_seconds, 1),
        "ratio": round(raw_seconds / export_seconds, 2),
        "cpuSeconds": cpu,
    }
    if args.output == "json":
        print(json.dumps(result, indent=2))
    else:
        print(
            f"{len(ids)} ledgers, {report.entries} entries of {args.entry_size} bytes ({mb:.0f} MB), "
            f"{len(plan.partitions)} partitions on {args.master}"
        )
        print(
            f"  {'':<8} {'seconds':>9}  {'MB/s':>7}   CPU seconds: bookies / this process / Spark JVM / Python workers"
        )
        for name in ("rawRead", "export", "noop"):
            used = " / ".join(f"{v:.1f}" for v in cpu[name].values())
            print(f"  {name:<8} {result[name + 'Seconds']:>9.2f}  {result[name + 'MbPerSec']:>7.1f}   {used}")
        print(f"  export / raw read: {result['ratio']:.2f}")


if __name__ == "__main__":
    main()

"""Add latency with one slow disk: three bookies, each on a lossy disk (tests/faults/lossyfs, FUSE), one of which
fsyncs in ``--delay`` seconds; runs alternate between no slow disk and one, on the same cluster, for a writer with
ack quorum < write quorum (E3 W3 A2: it should not notice) and one with A = W (E3 W3 A3: it waits for the slow one).

    .venv/bin/python benchmarks/slow_disk.py --delay 0.3 --rate 2000 --time 15 --runs 2     # needs root and fuse3
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
from pathlib import Path

from common import bkctl_json

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from faults.lossyfs.mount import LossyMount, fuse_missing

from bookie.local.bookies import LocalBookie, wait_registered
from bookie.local.process import free_port, stop_process_group
from bookie.local.zookeeper import EmbeddedZooKeeper
from bookie.meta.layout import init_cluster
from bookie.meta.store import MetadataStore
from bookie.meta.uri import parse_service_uri


@contextlib.contextmanager
def cluster(directory: Path):
    """Three bookies, each with its journal and ledgers on a lossy disk of its own; yields (uri, disks)."""
    zk = EmbeddedZooKeeper(directory / "zk", free_port())
    zk_pid = zk.start()
    uri = f"zk+hierarchical://{zk.address}/slow/ledgers"
    disks, bookies = [], []
    try:
        with MetadataStore(parse_service_uri(uri)) as store:
            init_cluster(store)
            for index in range(1, 4):
                disk = LossyMount(directory / f"store-{index}", directory / f"disk-{index}")
                disk.mount()
                disks.append(disk)
                settings = {
                    "journalDirectories": str(disk.mountpoint / "journal"),
                    "ledgerDirectories": str(disk.mountpoint / "ledgers"),
                }
                bookie = LocalBookie.create(index, directory / f"bookie-{index}", uri, settings)
                bookie.start()
                bookies.append(bookie)
            wait_registered(store, bookies)
        yield uri, disks
    finally:
        for bookie in bookies:
            bookie.stop(kill=True)
        for disk in disks:
            disk.unmount()
        stop_process_group(zk_pid, kill=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.3, help="seconds each fsync of the slow disk takes")
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--time", type=float, default=15)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    if reason := fuse_missing():
        sys.exit(f"slow_disk.py needs a lossy disk: {reason}")
    results: dict[tuple[str, str], list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="bkctl-slow-disk-") as tmp, cluster(Path(tmp)) as (uri, disks):
        for run in range(args.runs):
            for slow in (False, True):
                if slow:
                    disks[0].inject("sync", "*", None, delay=args.delay)
                for quorum in ("3,3,2", "3,3,3"):
                    e, w, a = quorum.split(",")
                    bench = ["bench", "write", "--time", str(args.time), "--rate", str(args.rate)]
                    result = bkctl_json(None, "-u", uri, *bench, "-e", e, "-w", w, "-a", a)
                    key = ("one slow disk" if slow else "none slow", f"E{e} W{w} A{a}")
                    results.setdefault(key, []).append(result)
                    lat = result["latencyMs"]
                    print(
                        f"run {run + 1} {key[0]:14} {key[1]}: p50 {lat['p50']:.1f} p99 {lat['p99']:.1f} ms", flush=True
                    )
                if slow:
                    disks[0].clear()
    print(f"\nmedians of {args.runs} runs, {args.rate} adds/s offered, slow disk: fsync {args.delay * 1000:.0f} ms")
    print(f"{'writer':12} {'disks':14} {'p50 ms':>8} {'p99 ms':>8} {'adds/s':>8}")
    summary = {}
    for (disks_state, quorum), runs in sorted(results.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        p50 = statistics.median(r["latencyMs"]["p50"] for r in runs)
        p99 = statistics.median(r["latencyMs"]["p99"] for r in runs)
        rate = statistics.median(r["entriesPerSec"] for r in runs)
        summary[f"{quorum}, {disks_state}"] = {"p50": p50, "p99": p99, "entriesPerSec": rate}
        print(f"{quorum:12} {disks_state:14} {p50:8.1f} {p99:8.1f} {rate:8.0f}")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()

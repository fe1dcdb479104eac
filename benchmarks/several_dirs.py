"""`bkctl bench bookie` on bookies with 1 or 3 ledger directories and 1 or 2 journal directories, same run.

    .venv/bin/python benchmarks/several_dirs.py --entries 100000 --runs 3

One ZooKeeper and four bookies, one per layout, all on this machine's disk (several directories on one disk: what
is measured is the cost of spreading, not extra disks); the runs alternate between the layouts, so machine noise
hits each alike. Each run drives one bookie with pipelined adds over 8 ledgers (both journals get some).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookie.local.bookies import LocalBookie, wait_registered
from bookie.local.process import free_port, stop_process_group
from bookie.local.zookeeper import EmbeddedZooKeeper
from bookie.meta.layout import init_cluster
from bookie.meta.store import MetadataStore
from bookie.meta.uri import parse_service_uri

from common import bkctl_json

LAYOUTS = {"1 journal, 1 ledger dir": (1, 1), "1 journal, 3 ledger dirs": (1, 3), "2 journals, 1 ledger dir": (2, 1)}
LAYOUTS["2 journals, 3 ledger dirs"] = (2, 3)


def bench(uri: str, bookie: LocalBookie, entries: int) -> dict:
    return bkctl_json(
        None, "-u", uri, "bench", "bookie", "--bookie", bookie.bookie_id, "--entries", str(entries), "--ledgers", "8"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bkctl-dirs-") as root:
        zk = EmbeddedZooKeeper(Path(root) / "zk", free_port())
        zk_pid = zk.start()
        bookies: dict[str, LocalBookie] = {}
        try:
            uri = f"zk+hierarchical://{zk.address}/ledgers"
            with MetadataStore(parse_service_uri(uri)) as store:
                init_cluster(store)
                for index, (name, (journals, ledgers)) in enumerate(LAYOUTS.items(), 1):
                    home = Path(root) / f"bookie-{index}"
                    settings = {
                        "journalDirectories": ",".join(str(home / f"journal{i}") for i in range(journals)),
                        "ledgerDirectories": ",".join(str(home / f"ledgers{i}") for i in range(ledgers)),
                        "logSizeLimit": str(64 << 20),
                    }
                    bookie = LocalBookie.create(index, home, uri, settings)
                    bookie.start()
                    bookies[name] = bookie
                wait_registered(store, list(bookies.values()))
            results: dict[str, list[dict]] = {name: [] for name in LAYOUTS}
            for run in range(args.runs):
                for name, bookie in bookies.items():
                    result = bench(uri, bookie, args.entries)
                    results[name].append(result)
                    lat = result["latencyMs"]
                    print(
                        f"run {run + 1}  {name:28} {result['entriesPerSec']:>8,.0f} entries/s  "
                        f"{result['mbPerSec']:6.1f} MB/s  p50 {lat['p50']} p99 {lat['p99']} ms",
                        flush=True,
                    )
            print()
            for name, runs in results.items():
                rates = sorted(r["entriesPerSec"] for r in runs)
                median = statistics.median(rates)
                print(f"{name:28} median {median:>8,.0f}  best {rates[-1]:>8,.0f} entries/s")
        finally:
            for bookie in bookies.values():
                bookie.stop()
            stop_process_group(zk_pid)
            os.sync()


if __name__ == "__main__":
    main()

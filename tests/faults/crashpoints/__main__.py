"""``python -m faults.crashpoints [--storage interleaved|db] [--workload NAME] [--keep DIR] [--jobs N]``: the
crash-point sweep of every scripted workload (or those named) on both storages (or the one named); exits 1 when an
acknowledged entry was lost or a start refused with entries acknowledged. With tests/ on PYTHONPATH,
as root, where FUSE works."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from faults.crashpoints import STORAGES, WORKLOADS, sweep
from faults.lossyfs.mount import fuse_missing


def main() -> int:
    names = [w.name for w in WORKLOADS]
    parser = argparse.ArgumentParser(prog="python -m faults.crashpoints", description=__doc__.split("\n\n")[0])
    parser.add_argument("--storage", choices=STORAGES, action="append", help="repeatable (default: both)")
    parser.add_argument("--workload", choices=names, action="append", help="repeatable (default: all)")
    parser.add_argument("--keep", type=Path, help="keep each case's disk, snapshots and bookie log under DIR")
    parser.add_argument("--jobs", type=int, default=3, help="cases checked at once (default 3)")
    parser.add_argument("--list", action="store_true", help="list the workloads and exit")
    args = parser.parse_args()
    if args.list:
        for w in WORKLOADS:
            print(f"{w.name:<14} {','.join(w.storages):<15} {w.about}")
        return 0
    if reason := fuse_missing():
        print(f"the crash-point sweep needs a lossy disk, and FUSE is missing here: {reason}", file=sys.stderr)
        return 2
    chosen = [w for w in WORKLOADS if args.workload is None or w.name in args.workload]
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
    result = sweep(
        chosen,
        tuple(args.storage or STORAGES),
        args.keep,
        progress=lambda line: print(line, file=sys.stderr, flush=True),
        jobs=args.jobs,
    )
    print(result.render())
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""``python -m faults.lossyfs --store DIR --control SOCK [--snapshots DIR] MOUNTPOINT``: serve a lossy disk in the
foreground until unmounted or cut (see ``faults.lossyfs.disk.LossyMount``)."""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import mfusepy
from faults.lossyfs.fuse_ops import Control, LossyOperations
from faults.lossyfs.model import Disk


def main() -> None:
    parser = argparse.ArgumentParser(prog="lossyfs")
    parser.add_argument("mountpoint")
    parser.add_argument("--store", required=True)
    parser.add_argument("--control", required=True)
    parser.add_argument("--snapshots")
    args = parser.parse_args()
    ops = LossyOperations(Disk(args.store))
    Control(ops, Path(args.control), Path(args.snapshots) if args.snapshots else None).serve()
    warnings.simplefilter("ignore", DeprecationWarning)  # mfusepy's about float times: seconds are what we keep
    # not hard_remove: with it, libfuse has no path for a file unlinked while open, and its fstat fails with ESTALE
    # (a bookie's gc status, reading an entry log compaction had just removed, did); Disk.hidden keeps the name aside
    mfusepy.FUSE(ops, args.mountpoint, foreground=True, nothreads=False, fsname="lossyfs")


if __name__ == "__main__":
    main()

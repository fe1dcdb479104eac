"""DbLedgerStorage against InterleavedLedgerStorage, in one run, alternating (interleaved, db, interleaved, db):

1. ``bkctl bench bookie --storage S``: one bookie of that storage of its own, its adds and its sequential reads
   after a restart (no client);
2. a sandbox of 3 bookies of that storage: ``bkctl bench write`` (E3 W2 A2), then a kept 1 KiB-entry ledger written
   through the client, every bookie restarted (the write cache flushed, caches cold), and ``bkctl bench read
   --ledger`` of it: the client's sequential reads.

    .venv/bin/python benchmarks/db_storage.py [--entries 200000] [--rounds 2]

Prints one JSON line per measurement and a summary table. Each round has a new sandbox in a temporary directory,
stopped at its end (and removed with the others at the end of the run).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bookie.storage.db import DB_LEDGER_STORAGE, INTERLEAVED_LEDGER_STORAGE

CLASSES = {"interleaved": INTERLEAVED_LEDGER_STORAGE, "db": DB_LEDGER_STORAGE}


def bkctl(*args: str, env: dict[str, str]) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "bkctl", *args], env=env, capture_output=True, text=True, check=False, timeout=1800
    )
    if done.returncode != 0:
        raise SystemExit(f"bkctl {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout) if done.stdout.strip().startswith(("{", "[")) else {}


def kept_ledger(entries: int, env: dict[str, str]) -> int:
    """A closed bench ledger of ``entries`` 1 KiB entries (E3 W2 A2), written through the client and kept."""
    code = (
        "import asyncio, sys\n"
        "from admin.bench import client\n"
        "from bookie.client import BookKeeper\n"
        "from bookie.local.sandbox import Sandbox\n"
        "from bookie.meta.store import MetadataStore\n"
        "from bookie.meta.uri import parse_service_uri\n"
        "store = MetadataStore(parse_service_uri(Sandbox().running().service_uri))\n"
        "bk = BookKeeper(store=store)\n"
        f"_, (ledger,) = bk.run(client.write(bk.core, 3, 2, 2, 1024, 1, 5000, {entries}, None, None, keep=True,"
        " created=[]))\n"
        "print(ledger)\n"
        "bk.close(); store.close()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return int(done.stdout.strip().splitlines()[-1])


def round_of(storage: str, entries: int, base: Path) -> dict:
    env = {**os.environ, "BKCTL_SANDBOX_DIR": tempfile.mkdtemp(prefix=f"sandbox-{storage}-", dir=base)}
    result: dict = {"storage": storage}
    bkctl("sandbox", "start", "--set", f"ledgerStorageClass={CLASSES[storage]}", env=env)
    try:
        bookie = bkctl("bench", "bookie", "--storage", storage, "--entries", str(entries), "-o", "json", env=env)
        result["bookieAdds"] = bookie["entriesPerSec"]
        result["bookieSequentialReads"] = bookie["sequentialRead"]["entriesPerSec"]
        write = bkctl("bench", "write", "--entries", str(entries), "-o", "json", env=env)
        result["clientWrites"] = write["entriesPerSec"]
        ledger = kept_ledger(entries, env)
        for n in (1, 2, 3):
            bkctl("sandbox", "stop-bookie", str(n), env=env)
            bkctl("sandbox", "start-bookie", str(n), env=env)
        read = bkctl("bench", "read", "--ledger", str(ledger), "-o", "json", env=env)
        result["clientSequentialReads"] = read["entriesPerSec"]
    finally:
        bkctl("sandbox", "stop", env=env)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-db-storage-") as base:
        for _ in range(args.rounds):
            for storage in ("interleaved", "db"):
                results.append(round_of(storage, args.entries, Path(base)))
                print(json.dumps(results[-1]), flush=True)
    keys = ["bookieAdds", "bookieSequentialReads", "clientWrites", "clientSequentialReads"]
    print(f"{'storage':<12}" + "".join(f"{k:>24}" for k in keys))
    for r in results:
        print(f"{r['storage']:<12}" + "".join(f"{r[k]:>24,}" for k in keys))


if __name__ == "__main__":
    main()

"""Issue 33's acceptance at scale on the sandbox: a backup restored into a new empty sandbox, and a copy between two
live sandboxes while a writer writes to the source, each compared ledger by ledger and entry by entry.

    python benchmarks/round_trip.py [--ledgers 1000] [--master local[2]] [-o json]

1. Sandbox A (3 bookies) gets ``--ledgers`` ledgers: every quorum of E <= 3 and both CRC digests (and MAC and DUMMY),
   passwords on two in three, Pulsar's managed-ledger custom metadata on one in four, 0 to 12 entries of 0 to
   3,000 bytes; one more of two segments (a bookie of its ensemble stopped between its entries: the writer changes
   the ensemble); and one left open with 10 entries (its LAC is 8).
2. `bkctl cluster backup --data --include-open --with-passwords`, then `bkctl cluster restore --yes` of it into a new
   sandbox B: every closed ledger's metadata must be equal field by field but its ensembles (and cToken), every
   entry equal byte for byte with its stored LAC and length; the open one closed at its LAC.
3. B stopped, a new sandbox C started; a writer creates a ledger of 20 entries every 50 ms in A (and closes it) while
   `bkctl ledger copy --all --to-cluster C --yes` runs; every ledger the copy copied must be equal in C, and every add
   of the writer must succeed (its add latency during the copy is given against before it).

Exits 1 at the first difference, naming it. Any other figure is this machine's: the sandboxes share its 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from bookie.client import BookKeeper
from bookie.meta.ledger_metadata import LedgerState

from common import bkctl_json, temporary_sandbox

QUORUMS = [(3, 2, 2), (3, 3, 2), (2, 2, 1), (1, 1, 1), (3, 2, 1)]
DIGESTS = ["crc32c", "crc32", "crc32c", "crc32", "mac", "dummy"]


def pulsar_metadata(i: int) -> dict[str, bytes]:
    return {
        "application": b"pulsar",
        "component": b"managed-ledger",
        "pulsar/managed-ledger": b"public/default/persistent/topic-%d" % i,
    }


def populate(sandbox, state, count: int) -> tuple[list[int], int]:
    """``count`` closed ledgers of every kind, one of two segments; and one open ledger: (closed ids, open id)."""
    rng = random.Random(33)
    closed = []
    with BookKeeper(state.service_uri) as bk:
        for i in range(count):
            password = b"" if i % 3 == 0 else b"pw%d" % (i % 7)
            meta = pulsar_metadata(i) if i % 4 == 0 else {}
            ledger = bk.create_ledger(*QUORUMS[i % len(QUORUMS)], DIGESTS[i % len(DIGESTS)], password, meta)
            payloads = [os.urandom(rng.choice([0, 1, 64, 700, 3000])) for _ in range(rng.randrange(13))]
            if payloads:
                ledger.add_entries(payloads)
            ledger.close()
            closed.append(ledger.ledger_id)
        segments = bk.create_ledger(2, 2, 2, "crc32c", b"seg", pulsar_metadata(-1))
        segments.add_entries(b"before %d" % i for i in range(10))
        stopped = next(b for b in state.local_bookies() if b.bookie_id == segments.ensemble[0])
        sandbox.stop_bookie(str(stopped.index))
        segments.add_entries(b"after %d" % i for i in range(10))  # the writer replaces the stopped bookie
        segments.close()
        sandbox.start_bookie(str(stopped.index))
        if len(bk.ledger_metadata(segments.ledger_id).segments) != 2:
            fail(f"ledger {segments.ledger_id} was to have two segments")
        closed.append(segments.ledger_id)
        writer = bk.create_ledger(3, 2, 2, "crc32c", b"open-pw")
        for i in range(10):  # one at a time: entry i carries LAC i - 1, so a backup holds entries 0..8
            writer.add_entry(b"open %d" % i)
        return closed, writer.ledger_id


def entries(bk: BookKeeper, ledger_id: int, last: int) -> list:
    """Every entry with its stored fields (ledger id, entry id, LAC, length, payload)."""
    if last < 0:
        return []
    with bk.open_ledger(ledger_id, bk.ledger_metadata(ledger_id).password, recovery=False) as reader:
        return reader.read(0, last)


def compare(source: BookKeeper, copy: BookKeeper, ledger_ids: list[int]) -> int:
    """Each ledger's metadata equal but its ensembles and cToken, and its entries byte for byte: the entries
    compared."""
    total = 0
    for ledger_id in ledger_ids:
        was, now = source.ledger_metadata(ledger_id), copy.ledger_metadata(ledger_id)
        if now.with_changes(segments=was.segments, c_token=was.c_token) != was:
            fail(f"ledger {ledger_id}: metadata differs:\n  source {was}\n  copy   {now}")
        theirs = entries(copy, ledger_id, now.last_entry_id)
        if theirs != entries(source, ledger_id, was.last_entry_id):
            fail(f"ledger {ledger_id}: entries differ")
        total += len(theirs)
    return total


def fail(message: str) -> None:
    print(f"round trip: {message}", file=sys.stderr)
    raise SystemExit(1)


class Writer(threading.Thread):
    """Creates, fills (20 entries of 1 KiB, one at a time) and closes a ledger every 50 ms: each add's latency."""

    def __init__(self, uri: str) -> None:
        super().__init__(daemon=True)
        self.uri, self.stop, self.latencies, self.error = uri, threading.Event(), [], None
        self.ledgers: list[tuple[float, int]] = []  # (when it was closed, its id)

    def run(self) -> None:
        try:
            with BookKeeper(self.uri) as bk:
                while not self.stop.wait(0.05):
                    ledger = bk.create_ledger(3, 2, 2, "crc32c", b"writer")
                    for _ in range(20):
                        started = time.perf_counter()
                        ledger.add_entry(os.urandom(1024))
                        self.latencies.append((time.monotonic(), time.perf_counter() - started))
                    ledger.close()
                    self.ledgers.append((time.monotonic(), ledger.ledger_id))
        except Exception as exc:  # noqa: BLE001 - reported as the writer's failure
            self.error = exc


def percentiles(values: list[float]) -> dict[str, float]:
    if len(values) < 2:
        return {"adds": len(values)}
    cuts = statistics.quantiles(values, n=100)
    return {"adds": len(values), "p50Ms": round(cuts[49] * 1000, 2), "p99Ms": round(cuts[98] * 1000, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ledgers", type=int, default=1000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("-o", "--output", choices=["text", "json"], default="text")
    args = parser.parse_args()
    spark = ["--master", args.master]
    result: dict = {"ledgers": args.ledgers + 2}
    with temporary_sandbox(bookies=3) as (sandbox_a, a, env_a), tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        closed, opened = populate(sandbox_a, a, args.ledgers)
        result["writeSeconds"] = round(time.perf_counter() - started, 1)

        backup = f"{out}/backup"
        flags = ["--data", "--include-open", "--with-passwords", *spark]
        started = time.perf_counter()
        made = bkctl_json(env_a, "cluster", "backup", "--to", backup, *flags)
        result["backup"] = {"seconds": round(time.perf_counter() - started, 1), "jobSeconds": made.get("seconds")}
        with temporary_sandbox(bookies=3) as (_, b, env_b):
            started = time.perf_counter()
            restored = bkctl_json(env_b, "cluster", "restore", "--from", backup, "--yes", *spark)
            seconds = round(time.perf_counter() - started, 1)
            result["restore"] = {"seconds": seconds, "jobSeconds": restored["seconds"], "ledgers": restored["ledgers"]}
            if restored["ledgers"] != len(closed) + 1 or restored["idMap"]:
                fail(f"the restore wrote {restored['ledgers']} ledgers, not {len(closed) + 1}, or changed ids")
            with BookKeeper(a.service_uri) as source, BookKeeper(b.service_uri) as copy:
                result["restore"]["entriesCompared"] = compare(source, copy, closed)
                now = copy.ledger_metadata(opened)
                if (now.state, now.last_entry_id) != (LedgerState.CLOSED, 8):
                    fail(f"the open ledger {opened} was restored {now.state.name} at entry {now.last_entry_id}")
                if entries(copy, opened, 8) != entries(source, opened, 8):
                    fail(f"the open ledger {opened}: entries differ")

        with temporary_sandbox(bookies=3) as (_, c, _env_c):
            writer = Writer(a.service_uri)
            writer.start()
            time.sleep(3)  # the writer's latency before the copy
            began = time.monotonic()
            started = time.perf_counter()
            copied = bkctl_json(env_a, "ledger", "copy", "--all", "--to-cluster", c.service_uri, "--yes", *spark)
            ended = time.monotonic()
            result["copy"] = {"seconds": round(time.perf_counter() - started, 1), "jobSeconds": copied["seconds"]}
            writer.stop.set()
            writer.join()
            if writer.error is not None:
                fail(f"the writer failed during the copy: {writer.error}")
            with BookKeeper(a.service_uri) as source, BookKeeper(c.service_uri) as copy:
                before = [w for t, w in writer.ledgers if t < began]  # closed before the copy's plan: all copied
                during = [w for t, w in writer.ledgers if t >= began and copy.core.ledgers.exists(w)]
                ids = sorted({*closed, *before, *during})
                if copied["copied"] != len(ids):
                    fail(f"the copy says it copied {copied['copied']} ledgers; the target has {len(ids)} of them")
                result["copy"]["ledgers"] = len(ids)
                result["copy"]["writerLedgersCopied"] = len(before) + len(during)
                result["copy"]["entriesCompared"] = compare(source, copy, ids)
            result["writer"] = {
                "before": percentiles([s for t, s in writer.latencies if t < began]),
                "duringCopy": percentiles([s for t, s in writer.latencies if began <= t <= ended]),
            }
    if args.output == "json":
        print(json.dumps(result, indent=2))
        return
    print(f"{result['ledgers']} ledgers written in {result['writeSeconds']} s")
    for step in ("backup", "restore", "copy"):
        print(f"  {step:<8} {json.dumps(result[step])}")
    print(f"  writer   {json.dumps(result['writer'])}")


if __name__ == "__main__":
    try:
        main()
    except subprocess.CalledProcessError as exc:
        fail(f"{' '.join(exc.cmd[2:5])} exited {exc.returncode}: {exc.stderr.strip()[-500:]}")

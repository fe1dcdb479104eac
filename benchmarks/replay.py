"""Replaying ledgers under new ids (bookie/client/replay.py, what a restore runs per ledger) against a raw sequential
read of the same ledgers, measured in the same run.

    python benchmarks/replay.py [--ledgers 8] [--entries 16384] [--entry-size 1024] [--at-once 1] [-o json]

Starts a throw-away 3-bookie sandbox and writes the ledgers (E=3 WQ=2 AQ=2, CRC32C, distinct random payloads), then
reads each one's entries into memory (the replay's source, not timed). Then, alternating per round:

- raw read: the client in this process reads every ledger from its first to its last entry (as export.py's);
- replay: each ledger claimed under a new id, written (every WQ replica acknowledged), read back from every replica
  and checked against the payload checksum, and closed; ``--at-once`` ledgers at a time on the client's loop. With
  one at a time, the write and verify phases' rates are also given;
- replayOneReplica: the same, verified from one replica per entry and the other bookies' lists of entries
  (``verify(every_replica=False)``).

MB/s count payload bytes. CPU seconds of each phase: the bookies, this process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time

from bookie.client import BookKeeper
from bookie.client.replay import LedgerReplay, ReplayEntry, payload_xor

from common import cpu_seconds, temporary_sandbox

PASSWORD = b"bench"
MARKER = ("bkctl.bench", b"replay")


def write(bk: BookKeeper, ledgers: int, entries: int, size: int) -> list[int]:
    ids = []
    for _ in range(ledgers):
        ledger = bk.create_ledger(3, 2, 2, digest_type="crc32c", password=PASSWORD)
        ledger.add_entries(os.urandom(size) for _ in range(entries))
        ledger.close()
        ids.append(ledger.ledger_id)
    return ids


def own_cpu() -> float:
    times = os.times()
    return times.user + times.system


def raw_read(bk: BookKeeper, ids: list[int]) -> int:
    size = 0
    for lid in ids:
        handle = bk.open_ledger(lid, PASSWORD, recovery=False)
        size += sum(len(e.payload) for e in handle.iter_entries(0, handle.last_add_confirmed))
    return size


async def replay_all(
    bk: BookKeeper, sources: dict[int, tuple], next_id: int, at_once: int, every_replica: bool
) -> dict[str, float]:
    """Replay every source ledger under ids from ``next_id``; the seconds spent writing and verifying, summed
    over the ledgers (wall time of the phases only when one ledger is replayed at a time)."""
    phases = {"write": 0.0, "verify": 0.0}
    window = asyncio.Semaphore(at_once)

    async def one(new_id: int, md, entries: list[ReplayEntry], xor: int, source_id: int) -> None:
        async with window:
            replay = await LedgerReplay.claim(bk.core, new_id, md, PASSWORD, MARKER)
            started = time.perf_counter()
            await replay.write(entries)
            wrote = time.perf_counter()
            await replay.verify(xor, source_id, every_replica=every_replica)
            phases["write"] += wrote - started
            phases["verify"] += time.perf_counter() - wrote
            await replay.close(md.last_entry_id, md.length)

    await asyncio.gather(*(one(next_id + i, *source, lid) for i, (lid, source) in enumerate(sources.items())))
    return phases


def measured(payload: int, seconds: float, bookies: float, client: float) -> dict:
    return {
        "mbPerSec": round(payload / seconds / 1e6, 1),
        "cpuBookies": round(bookies, 1),
        "cpuClient": round(client, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ledgers", type=int, default=8)
    parser.add_argument("--entries", type=int, default=16384)
    parser.add_argument("--entry-size", type=int, default=1024)
    parser.add_argument("--at-once", type=int, default=1, help="ledgers replayed at a time")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("-o", "--output", choices=["text", "json"], default="text")
    args = parser.parse_args()
    rounds = []
    with temporary_sandbox(bookies=3) as (_, state, _env), BookKeeper(state.service_uri) as bk:
        ids = write(bk, args.ledgers, args.entries, args.entry_size)
        bookies = [b.pid for b in state.local_bookies()]
        sources = {}
        for lid in ids:
            md = bk.ledger_metadata(lid)
            with bk.open_ledger(lid, PASSWORD) as reader:
                entries = [
                    ReplayEntry(e.entry_id, e.last_add_confirmed, e.length, e.payload)
                    for e in reader.read(0, md.last_entry_id)
                ]
            sources[lid] = (md, entries, payload_xor(lid, ((e.entry_id, e.payload) for e in entries)))
        payload = sum(md.length for md, _, _ in sources.values())
        next_id = max(ids) + 1_000_000
        for _ in range(args.rounds):
            measures: dict[str, dict] = {}
            for name in ("rawRead", "replay", "replayOneReplica"):
                cpu, mine, started = cpu_seconds(bookies), own_cpu(), time.perf_counter()
                if name == "rawRead":
                    raw_read(bk, ids)
                else:
                    every = name == "replay"
                    phases = bk.run(replay_all(bk, sources, next_id, args.at_once, every))
                    next_id += len(ids)
                seconds = time.perf_counter() - started
                measures[name] = measured(payload, seconds, cpu_seconds(bookies) - cpu, own_cpu() - mine)
                if name != "rawRead" and args.at_once == 1:
                    measures[name]["writeMbPerSec"] = round(payload / phases["write"] / 1e6, 1)
                    measures[name]["verifyMbPerSec"] = round(payload / phases["verify"] / 1e6, 1)
            rounds.append(measures)
    result = {
        "ledgers": len(ids),
        "entries": args.entries,
        "entrySize": args.entry_size,
        "bytes": payload,
        "atOnce": args.at_once,
        "rounds": rounds,
    }
    if args.output == "json":
        print(json.dumps(result, indent=2))
        return
    print(
        f"{len(ids)} ledgers x {args.entries} entries of {args.entry_size} bytes ({payload / 1e6:.0f} MB), "
        f"{args.at_once} at once"
    )
    for n, r in enumerate(rounds, 1):
        for name, m in r.items():
            phases = f" (write {m['writeMbPerSec']}, verify {m['verifyMbPerSec']})" if "writeMbPerSec" in m else ""
            print(
                f"  round {n} {name:<17} {m['mbPerSec']:>6.1f} MB/s{phases}; "
                f"CPU s bookies {m['cpuBookies']}, client {m['cpuClient']}"
            )


if __name__ == "__main__":
    main()

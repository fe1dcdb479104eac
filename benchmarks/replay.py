"""Replaying ledgers under new ids (bookie/client/replay.py, what a restore runs per ledger) against a raw sequential
read of the same ledgers, measured in the same run.

    python benchmarks/replay.py [--ledgers 8] [--entries 16384] [--entry-size 1024] [--at-once 1] [-o json]

Starts a throw-away 3-bookie sandbox and writes the ledgers (E=3 WQ=2 AQ=2, CRC32C, distinct random payloads), then
reads each one's entries into memory (the replay's source, not timed). Then, alternating per round:

- raw read: the client in this process reads every ledger from its first to its last entry (as export.py's);
- replay: each ledger claimed under a new id, written (every WQ replica acknowledged), read back from every replica
  and checked against the payload checksum, and closed; ``--at-once`` ledgers at a time on the client's loop.
  Write and verify seconds are also given apart.

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

from common import temporary_sandbox

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


def cpu_seconds(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def own_cpu() -> float:
    times = os.times()
    return times.user + times.system


def raw_read(bk: BookKeeper, ids: list[int]) -> int:
    size = 0
    for lid in ids:
        handle = bk.open_ledger(lid, PASSWORD, recovery=False)
        size += sum(len(e.payload) for e in handle.iter_entries(0, handle.last_add_confirmed))
    return size


async def replay_all(bk: BookKeeper, sources: dict[int, tuple], next_id: int, at_once: int) -> dict[str, float]:
    phases = {"write": 0.0, "verify": 0.0}
    window = asyncio.Semaphore(at_once)

    async def one(new_id: int, md, entries: list[ReplayEntry], xor: int, source_id: int) -> None:
        async with window:
            replay = await LedgerReplay.claim(bk.core, new_id, md, PASSWORD, MARKER)
            started = time.perf_counter()
            await replay.write(entries)
            wrote = time.perf_counter()
            await replay.verify(xor, source_id)
            phases["write"] += wrote - started
            phases["verify"] += time.perf_counter() - wrote
            await replay.close(md.last_entry_id, md.length)

    await asyncio.gather(*(one(next_id + i, *source, lid) for i, (lid, source) in enumerate(sources.items())))
    return phases


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
            cpu, mine, started = cpu_seconds(bookies), own_cpu(), time.perf_counter()
            raw_read(bk, ids)
            raw = (time.perf_counter() - started, cpu_seconds(bookies) - cpu, own_cpu() - mine)
            cpu, mine, started = cpu_seconds(bookies), own_cpu(), time.perf_counter()
            phases = bk.run(replay_all(bk, sources, next_id, args.at_once))
            replayed = (time.perf_counter() - started, cpu_seconds(bookies) - cpu, own_cpu() - mine)
            next_id += len(ids)
            rounds.append(
                {
                    "rawReadMbPerSec": round(payload / raw[0] / 1e6, 1),
                    "replayMbPerSec": round(payload / replayed[0] / 1e6, 1),
                    "writeMbPerSec": round(payload / phases["write"] / 1e6, 1),
                    "verifyMbPerSec": round(payload / phases["verify"] / 1e6, 1),
                    "replaySeconds": round(replayed[0], 2),
                    "cpuSeconds": {
                        "rawRead": {"bookies": round(raw[1], 1), "client": round(raw[2], 1)},
                        "replay": {"bookies": round(replayed[1], 1), "client": round(replayed[2], 1)},
                    },
                }
            )
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
        cpu = r["cpuSeconds"]
        print(
            f"  round {n}: raw read {r['rawReadMbPerSec']:.1f} MB/s, replay {r['replayMbPerSec']:.1f} MB/s "
            f"(write {r['writeMbPerSec']:.1f}, verify {r['verifyMbPerSec']:.1f}); CPU s bookies/client: "
            f"read {cpu['rawRead']['bookies']}/{cpu['rawRead']['client']}, "
            f"replay {cpu['replay']['bookies']}/{cpu['replay']['client']}"
        )


if __name__ == "__main__":
    main()

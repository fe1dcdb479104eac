"""Moving a live bookie's replicas (bookie/client/move.py) against `bookie recover` of it stopped, same data, same run.

    python benchmarks/move.py [--ledgers 100] [--entries 1000] [--entry-size 1024] [-o json]

Starts a throw-away 4-bookie sandbox and writes the closed ledgers (E=3 WQ=2 AQ=2). Then, on bookie S (the
sandbox's first):
1. drain: ReplicaMover.drain({S}) moves every replica S holds to the other bookies while S runs (copy, read back
   from the target, metadata swap, one re-replication lock per ledger), timed in-process;
2. move back: the same moves reversed (ReplicaMover.run), so that S holds the same replicas again;
3. recover: S is stopped cleanly and `bkctl bookie recover S --yes` runs as a user runs it.
MB/s counts the bytes copied (each report's ``bytes`` over its ``seconds``); a ledger's move latency runs from
asking for its re-replication lock to its last swap, with LEDGERS_AT_ONCE ledgers in flight.
"""

from __future__ import annotations

import argparse
import json
import os
import time

from admin.bench.stats import latency_ms
from bookie.client import BookKeeper
from bookie.client.move import Move, ReplicaMover

from common import bkctl_json, temporary_sandbox


class TimedMover(ReplicaMover):
    """A ReplicaMover that records each ledger's wall time, lock to last swap."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.latencies: list[float] = []

    async def _locked(self, ledger_id, work) -> None:
        started = time.perf_counter()
        await super()._locked(ledger_id, work)
        self.latencies.append(time.perf_counter() - started)


def rate(doc: dict) -> dict:
    """A move report's or `bookie recover`'s JSON, cut to what is compared."""
    return {
        **({"replicas": len(doc["moved"])} if "moved" in doc else {"ledgers": doc["ledgers"]}),
        "entries": doc["entries"],
        "bytes": doc["bytes"],
        "seconds": doc["seconds"],
        "mbPerSec": doc["mbPerSec"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ledgers", type=int, default=100)
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--entry-size", type=int, default=1024)
    parser.add_argument("-o", "--output", choices=["text", "json"], default="text")
    args = parser.parse_args()
    with temporary_sandbox(bookies=4) as (sandbox, state, env):
        source = state.bookies[0]
        source_id = f"127.0.0.1:{source['port']}"
        payload = os.urandom(args.entry_size)
        with BookKeeper(state.service_uri) as bk:
            for _ in range(args.ledgers):
                ledger = bk.create_ledger(3, 2, 2, digest_type="crc32c")
                ledger.add_entries(payload for _ in range(args.entries))
                ledger.close()
            mover = TimedMover(bk.core)
            drained = bk.run(mover.drain({source_id}))
            assert drained.complete, drained.doc()
            back = bk.run(
                ReplicaMover(bk.core).run(
                    [Move(m.ledger_id, m.first_entry_id, m.target, source_id) for m in drained.moved]
                )
            )
            assert back.complete and len(back.moved) == len(drained.moved), back.doc()
        sandbox.stop_bookie(str(source["index"]))
        started = time.perf_counter()
        recovered = bkctl_json(env, "bookie", "recover", source_id, "--yes")
        command_seconds = time.perf_counter() - started
    move, move_back, recover = rate(drained.doc()), rate(back.doc()), rate(recovered)
    result = {
        "ledgersWritten": args.ledgers,
        "bytesWritten": args.ledgers * args.entries * args.entry_size,
        "move": {**move, "ledgerLatencyMs": latency_ms(mover.latencies)},
        "moveBack": move_back,
        "recover": {**recover, "commandSeconds": round(command_seconds, 2), "failed": recovered["failed"]},
        "moveToRecoverRatio": round(move["mbPerSec"] / recover["mbPerSec"], 2) if recover["mbPerSec"] else None,
    }
    if args.output == "json":
        print(json.dumps(result, indent=2))
        return
    latency = result["move"]["ledgerLatencyMs"]
    print(
        f"move:    {move['replicas']} replicas, {move['bytes'] / 1e6:.1f} MB in {move['seconds']} s: "
        f"{move['mbPerSec']} MB/s; per ledger p50 {latency['p50']:.0f} ms, p99 {latency['p99']:.0f} ms\n"
        f"back:    {move_back['replicas']} replicas, {move_back['bytes'] / 1e6:.1f} MB: {move_back['mbPerSec']} MB/s\n"
        f"recover: {recover['ledgers']} ledgers, {recover['bytes'] / 1e6:.1f} MB in {recover['seconds']} s: "
        f"{recover['mbPerSec']} MB/s ({command_seconds:.1f} s for the whole command)\n"
        f"move / recover: {result['moveToRecoverRatio']}"
    )


if __name__ == "__main__":
    main()

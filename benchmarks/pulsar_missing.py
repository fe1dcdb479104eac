"""`bkctl pulsar missing` over a large Pulsar cluster: 100,000 ledgers and 10,000 topics on three real bookies.

    python benchmarks/pulsar_missing.py [--topics 10000] [--ledgers-per-topic 10] [-o json]

Starts a throw-away sandbox with three bookies and writes what 10,000 topics' brokers would have written, as
benchmarks/pulsar_orphans.py does — per topic a ManagedLedgerInfo listing its data ledgers and two cursors with
their cursor ledgers (left open, as a broker leaves them) — with pipelined creates; each closed data ledger has one
entry, added to the two bookies of its write set straight through the client's bookie connections. Every 100th
topic references a data ledger whose metadata was never written (no-metadata) and, 50 topics further, one whose
entry no bookie got (no-data): those are what it must find. Then times the real `bkctl pulsar missing -o json` as a
user runs it (a subprocess), which asks the bookies about every closed ledger.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time

from pulsar_orphans import CURSORS, ledger_data

from bookie._proto.pulsar_ml_data_formats_pb2 import ManagedCursorInfo, ManagedLedgerInfo
from bookie.client import BookKeeper
from bookie.client.bookie_client import EOK, EntryToken
from bookie.codec.digest import Digester, DigestType, master_key
from bookie.codec.entry import frame_entry
from bookie.codec.records import pack_record
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.registration import BookieRegistry
from bookie.meta.store import MetadataStore
from bookie.meta.uri import parse_service_uri

from common import temporary_sandbox

BKCTL = [sys.executable, "-m", "bkctl"]
WINDOW = 2000  # creates, and adds, in flight
PAYLOAD = b"m" * 100


class Acks:
    """Counts the adds' outcomes (the client's AddTarget)."""

    def __init__(self) -> None:
        self.outstanding, self.failed = 0, 0
        self.idle = asyncio.Event()

    def sent(self) -> None:
        self.outstanding += 1
        self.idle.clear()

    def added(self, token: EntryToken, index: int, status: int, bookie: object) -> None:
        self.outstanding -= 1
        self.failed += status != EOK
        if self.outstanding == 0:
            self.idle.set()


async def add_entries(bk: BookKeeper, ledgers: list[tuple[int, tuple[str, ...]]]) -> int:
    """Entry 0 of each ledger on the first two bookies of its ensemble (its write set, E 3 WQ 2); failures."""
    digester, key, acks = Digester(DigestType.CRC32C, b""), master_key(b""), Acks()
    for ledger_id, ensemble in ledgers:
        record = pack_record(frame_entry(digester, ledger_id, 0, -1, len(PAYLOAD), PAYLOAD))
        for index in (0, 1):
            acks.sent()
            bk.core.bookie(ensemble[index]).add(ledger_id, key, False, record, acks, EntryToken(0), index)
        while acks.outstanding > WINDOW:
            await asyncio.sleep(0.001)
    if acks.outstanding:
        await acks.idle.wait()
    return acks.failed


def populate(uri: str, topics: int, per_topic: int) -> tuple[float, int, int, int]:
    """Write the metadata and the entries; return (seconds, referenced ledgers, no-metadata, no-data)."""
    started = time.perf_counter()
    ctime = int((time.time() - 7200) * 1000)
    data_per_topic = per_topic - len(CURSORS)
    with MetadataStore(parse_service_uri(uri)) as store, BookKeeper(uri) as bk:
        zk, ledgers = store.zk, LedgerManager(store)
        bookies = sorted(b.bookie_id for b in BookieRegistry(store).list())
        ensembles = [tuple(bookies[(i + k) % 3] for k in range(3)) for i in range(3)]
        pulsar_root = store.root.rsplit("/", 1)[0]
        pending: list = []

        def create(path: str, data: bytes) -> None:
            pending.append(zk.create_async(path, data))
            if len(pending) >= WINDOW:
                for p in pending:
                    p.get()
                pending.clear()

        total = topics * per_topic
        for parent in sorted({ledgers.path(i).rsplit("/", 1)[0] for i in range(total)}):
            zk.ensure_path(parent)
        for namespace in sorted({f"tenant-{t % 10}/ns-{t // 10 % 10}" for t in range(topics)}):
            zk.ensure_path(f"{pulsar_root}/managed-ledgers/{namespace}/persistent")
        lid, no_metadata, no_data = 0, 0, 0
        with_entries: list[tuple[int, tuple[str, ...]]] = []
        for t in range(topics):
            name = f"tenant-{t % 10}/ns-{t // 10 % 10}/persistent/topic-{t}"
            info = ManagedLedgerInfo()
            for k in range(data_per_topic):
                ensemble = ensembles[lid % 3]
                if t % 100 == 0 and k == 0:
                    no_metadata += 1  # referenced, never created
                else:
                    create(ledgers.path(lid), ledger_data(name, None, ctime, ensemble, 1, len(PAYLOAD)))
                    if t % 100 == 50 and k == 0:
                        no_data += 1  # its entry never reached a bookie
                    else:
                        with_entries.append((lid, ensemble))
                info.ledgerInfo.add(ledgerId=lid, entries=1, size=len(PAYLOAD), timestamp=ctime)
                lid += 1
            create(f"{pulsar_root}/managed-ledgers/{name}", info.SerializeToString())
            for cursor in CURSORS:
                create(ledgers.path(lid), ledger_data(name, cursor, ctime, ensembles[lid % 3]))
                cursor_info = ManagedCursorInfo(cursorsLedgerId=lid, markDeleteLedgerId=lid - 1, markDeleteEntryId=0)
                create(f"{pulsar_root}/managed-ledgers/{name}/{cursor}", cursor_info.SerializeToString())
                lid += 1
        for p in pending:
            p.get()
        zk.ensure_path(f"{pulsar_root}/schemas")
        failed = bk.run(add_entries(bk, with_entries))
        assert failed == 0, f"{failed} adds failed"
    return time.perf_counter() - started, lid, no_metadata, no_data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--ledgers-per-topic", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("-o", "--output", choices=["text", "json"], default="text")
    args = parser.parse_args()
    with temporary_sandbox(bookies=3) as (_, state, env):
        populate_s, ledgers, no_metadata, no_data = populate(state.service_uri, args.topics, args.ledgers_per_topic)
        seconds, reported, counts = [], 0.0, {}
        for _ in range(args.runs):
            started = time.perf_counter()
            done = subprocess.run([*BKCTL, "pulsar", "missing", "-o", "json"], capture_output=True, env=env)
            seconds.append(time.perf_counter() - started)
            assert done.returncode == 3, done.stderr.decode()[-2000:]
            doc = json.loads(done.stdout)
            reported, counts = doc["seconds"], doc["byReason"]
            assert doc["ledgers"] == ledgers and doc["managedLedgers"] == args.topics, doc["ledgers"]
        assert (counts["no-metadata"], counts["no-data"]) == (no_metadata, no_data), counts
    result = {
        "topics": args.topics,
        "ledgers": ledgers,
        "found": counts,
        "populateSeconds": round(populate_s, 1),
        "missingSeconds": [round(s, 2) for s in seconds],
        "checkSeconds": reported,  # as the command reports it: reading and judging, without start-up and output
    }
    if args.output == "json":
        print(json.dumps(result, indent=2))
    else:
        print(
            f"{ledgers} ledgers, {args.topics} topics: `bkctl pulsar missing -o json` in "
            f"{', '.join(f'{s:.1f}' for s in seconds)} s (check {reported:.1f} s), found {counts}; "
            f"populated in {populate_s:.0f} s"
        )


if __name__ == "__main__":
    main()

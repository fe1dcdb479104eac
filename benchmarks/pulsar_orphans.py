"""`bkctl pulsar orphans` over a large Pulsar cluster's metadata: 100,000 ledgers and 10,000 topics.

    python benchmarks/pulsar_orphans.py [--topics 10000] [--ledgers-per-topic 10] [-o json]

Starts a throw-away sandbox (its embedded ZooKeeper, no bookies: the audit reads metadata only), writes what
10,000 topics' brokers would have written — per topic a ManagedLedgerInfo listing its data ledgers, two cursors
with their cursor ledgers, and the ledgers' metadata (format 3, Pulsar's custom metadata, two hours old) — with
pipelined creates, then times the real `bkctl pulsar orphans -o json` as a user runs it (a subprocess). Every
tenth topic has one data ledger dropped from its ManagedLedgerInfo: those are the orphans it must find.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from bookie._proto.pulsar_ml_data_formats_pb2 import ManagedCursorInfo, ManagedLedgerInfo
from bookie.codec.digest import DigestType
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState, Segment, serialize
from bookie.meta.store import MetadataStore
from bookie.meta.uri import parse_service_uri

from common import temporary_sandbox

BKCTL = [sys.executable, "-m", "bkctl"]
WINDOW = 2000  # creates in flight
CURSORS = ("sub-a", "sub-b")
ENSEMBLE = ("127.0.0.1:3181", "127.0.0.1:3182", "127.0.0.1:3183")


def ledger_data(
    name: str,
    cursor: str | None,
    ctime_ms: int,
    ensemble: tuple[str, ...] = ENSEMBLE,
    entries: int = 100,
    entry_size: int = 1024,
) -> bytes:
    """A broker's ledger of topic ``name``: a CLOSED data ledger of ``entries`` entries, or ``cursor``'s ledger, left
    OPEN (format 3, Pulsar's custom metadata, E 3 WQ 2 AQ 2)."""
    custom = {"application": b"pulsar", "component": b"managed-ledger", "pulsar/managed-ledger": name.encode()}
    if cursor is not None:
        custom["pulsar/cursor"] = cursor.encode()
    md = LedgerMetadata(
        3,
        2,
        2,
        (Segment(0, ensemble),),
        state=LedgerState.CLOSED if cursor is None else LedgerState.OPEN,
        last_entry_id=entries - 1 if cursor is None else -1,
        length=entries * entry_size if cursor is None else 0,
        digest_type=DigestType.CRC32C,
        password=b"",
        ctime=ctime_ms,
        custom_metadata=custom,
    )
    return serialize(md)


def populate(uri: str, topics: int, per_topic: int) -> tuple[float, int, int]:
    """Write the metadata; return (seconds, ledgers, orphans)."""
    started = time.perf_counter()
    ctime = int((time.time() - 7200) * 1000)
    data_per_topic = per_topic - len(CURSORS)
    with MetadataStore(parse_service_uri(uri)) as store:
        zk, ledgers = store.zk, LedgerManager(store)
        pulsar_root = store.root.rsplit("/", 1)[0]
        pending: list = []

        def create(path: str, data: bytes) -> None:
            pending.append(zk.create_async(path, data))
            if len(pending) >= WINDOW:
                for p in pending:
                    p.get()
                pending.clear()

        total = topics * per_topic
        for parent in sorted({ledgers.path(i).rsplit("/", 1)[0] for i in range(0, total, 1000)}):
            zk.ensure_path(parent)
        for parent in sorted({ledgers.path(i).rsplit("/", 1)[0] for i in range(total)}):
            zk.ensure_path(parent)
        namespaces = sorted({f"tenant-{t % 10}/ns-{t // 10 % 10}" for t in range(topics)})
        for namespace in namespaces:
            zk.ensure_path(f"{pulsar_root}/managed-ledgers/{namespace}/persistent")
        lid, orphans = 0, 0
        for t in range(topics):
            name = f"tenant-{t % 10}/ns-{t // 10 % 10}/persistent/topic-{t}"
            info = ManagedLedgerInfo()
            for k in range(data_per_topic):
                create(ledgers.path(lid), ledger_data(name, None, ctime))
                if t % 10 == 0 and k == 0:
                    orphans += 1  # dropped from its ManagedLedgerInfo, never deleted
                else:
                    info.ledgerInfo.add(ledgerId=lid, entries=100, size=102400, timestamp=ctime)
                lid += 1
            create(f"{pulsar_root}/managed-ledgers/{name}", info.SerializeToString())
            for cursor in CURSORS:
                create(ledgers.path(lid), ledger_data(name, cursor, ctime))
                cursor_info = ManagedCursorInfo(cursorsLedgerId=lid, markDeleteLedgerId=lid - 1, markDeleteEntryId=0)
                create(f"{pulsar_root}/managed-ledgers/{name}/{cursor}", cursor_info.SerializeToString())
                lid += 1
        for p in pending:
            p.get()
        zk.ensure_path(f"{pulsar_root}/schemas")
    return time.perf_counter() - started, lid, orphans


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--ledgers-per-topic", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("-o", "--output", choices=["text", "json"], default="text")
    args = parser.parse_args()
    with temporary_sandbox(bookies=0) as (_, state, env):
        populate_s, ledgers, expected = populate(state.service_uri, args.topics, args.ledgers_per_topic)
        seconds, found, reported = [], 0, 0.0
        for _ in range(args.runs):
            started = time.perf_counter()
            done = subprocess.run([*BKCTL, "pulsar", "orphans", "-o", "json"], capture_output=True, env=env)
            seconds.append(time.perf_counter() - started)
            assert done.returncode == 3, done.stderr.decode()[-2000:]
            doc = json.loads(done.stdout)
            found, reported = doc["count"], doc["seconds"]
            assert doc["ledgers"] == ledgers and doc["managedLedgers"] == args.topics, doc["ledgers"]
        assert found == expected, (found, expected)
    result = {
        "topics": args.topics,
        "ledgers": ledgers,
        "orphans": found,
        "populateSeconds": round(populate_s, 1),
        "orphansSeconds": [round(s, 2) for s in seconds],
        "auditSeconds": reported,  # as the command reports it: reading and judging, without start-up and output
    }
    if args.output == "json":
        print(json.dumps(result, indent=2))
    else:
        print(
            f"{ledgers} ledgers, {args.topics} topics: `bkctl pulsar orphans -o json` in "
            f"{', '.join(f'{s:.1f}' for s in seconds)} s (audit {reported:.1f} s), {found} orphans found; "
            f"populated in {populate_s:.0f} s"
        )


if __name__ == "__main__":
    main()

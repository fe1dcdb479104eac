"""A direct bookie benchmark (like Apache BookKeeper's BenchBookie): pipelined adds in BookKeeper's protocol to one
bookie, ours or Java, without the ledger client; and, in the same run, a raw Python group-commit append + fsync loop
on the same disk with the same entry size, for the ratio between the two.

Entries are framed (CRC32C) before the clock starts: this measures the bookie, not the client's framing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import time
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from admin.bench.stats import latency_ms, throughput
from bookie.codec.digest import Digester, DigestType, master_key
from bookie.codec.entry import frame_entry
from bookie.codec.records import pack_record
from bookie.errors import BKError, ServiceUnavailable, error_for_status

if TYPE_CHECKING:
    from bookie.local.bookies import LocalBookie
    from bookie.meta.store import MetadataStore

T = TypeVar("T")
BENCH_PASSWORD = b"bkctl-bench"


class _Add:
    __slots__ = ("entry_id", "group")

    def __init__(self, entry_id: int, group: int):
        self.entry_id, self.group = entry_id, group


@dataclass
class BookieBench:
    """Adds in BookKeeper's protocol, straight to one bookie (ours or Java): ``batch_entries`` adds leave in one
    write, ``max_outstanding`` such groups in flight."""

    bookie_id: str
    address: tuple[str, int]
    entry_size: int = 1024
    entries: int = 200_000
    ledgers: int = 1
    batch_entries: int = 256
    max_outstanding: int = 32  # groups in flight
    first_ledger_id: int = 0

    def records(self) -> list[tuple[int, int, bytes]]:
        """``(ledgerId, entryId, int32 size | framed entry)``, round-robin over the ledgers, framed up front."""
        digester = Digester(DigestType.CRC32C)
        base = self.first_ledger_id = self.first_ledger_id or (int(time.time() * 1000) << 8)
        payload = os.urandom(self.entry_size)
        next_entry = [0] * self.ledgers
        records = []
        for n in range(self.entries):
            ledger = n % self.ledgers
            entry_id = next_entry[ledger]
            next_entry[ledger] += 1
            framed = frame_entry(
                digester, base + ledger, entry_id, entry_id - 1, (entry_id + 1) * self.entry_size, payload
            )
            records.append((base + ledger, entry_id, pack_record(framed)))
        return records

    async def _drive(self, records: list) -> tuple[float, list[float]]:
        from bookie.client.wire_client import WireBookieClient

        client = WireBookieClient(self.bookie_id, self.address)
        key = master_key(BENCH_PASSWORD)
        window = asyncio.Semaphore(self.max_outstanding)
        latencies: list[float] = []
        errors: list[BKError] = []
        groups: dict[int, list] = {}  # group -> [adds left, sent at]
        drained = asyncio.get_running_loop().create_future()
        bench = self

        class Target:
            def added(self, add, index, status, _client):
                if status:
                    errors.append(
                        error_for_status(
                            status, f"bookie {bench.bookie_id} refused entry {add.entry_id} (status {status})"
                        )
                        if status > 0
                        else ServiceUnavailable(f"bookie {bench.bookie_id} is unreachable or hung up")
                    )
                group = groups[add.group]
                group[0] -= 1
                if group[0] == 0:
                    latencies.extend([time.perf_counter() - group[1]] * group[2])
                    del groups[add.group]
                    window.release()
                    if not groups and not drained.done() and sending_done:
                        drained.set_result(None)

        target, sending_done = Target(), False
        started = time.perf_counter()
        try:
            for group, first in enumerate(range(0, len(records), self.batch_entries)):
                await window.acquire()
                if errors:
                    break
                chunk = records[first : first + self.batch_entries]
                groups[group] = [len(chunk), time.perf_counter(), len(chunk)]
                for ledger_id, entry_id, record in chunk:
                    client.add(ledger_id, key, False, record, target, _Add(entry_id, group), 0)
            sending_done = True
            if groups:
                await drained
            if errors:
                raise errors[0]
            return time.perf_counter() - started, latencies
        finally:
            await client.close()

    def read_back(self) -> dict[str, Any]:
        """Read what :meth:`run` wrote, ledger by ledger, each in entry order (pipelined range reads): the
        bookie's sequential reads. Entries/s, MB/s, and the time per entry."""
        from bookie.client.bookie_client import RangeStopped
        from bookie.client.wire_client import WireBookieClient

        counts = [self.entries // self.ledgers + (n < self.entries % self.ledgers) for n in range(self.ledgers)]

        async def drive() -> float:
            client = WireBookieClient(self.bookie_id, self.address)
            started = time.perf_counter()
            try:
                for n, count in enumerate(counts):
                    async for item in client.read_range(self.first_ledger_id + n, 0, count - 1, 60):
                        if isinstance(item, RangeStopped):
                            raise error_for_status(
                                item.status, f"bookie {self.bookie_id}: read of entry {item.entry_id} failed"
                            )
            finally:
                await client.close()
            return time.perf_counter() - started

        seconds = _run(drive())
        return {
            **throughput(self.entries, self.entry_size, seconds),
            "usPerEntry": round(seconds / self.entries * 1e6, 1),
        }

    def run(self) -> dict:
        records = self.records()
        seconds, latencies = _run(self._drive(records))
        if len(latencies) != self.entries:
            raise BKError(f"only {len(latencies)} of {self.entries} adds were acknowledged")
        return {**throughput(self.entries, self.entry_size, seconds), "latencyMs": latency_ms(latencies)}


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    try:
        import uvloop

        return uvloop.run(coroutine)
    except ImportError:
        return asyncio.run(coroutine)


@contextlib.contextmanager
def scratch_bookie(store: MetadataStore, service_uri: str, storage: str, directory: Path) -> Iterator[LocalBookie]:
    """A bookie of its own for a run (bookie.local.bookies.LocalBookie): ``storage`` "db" (DbLedgerStorage) or
    "interleaved", in ``directory``, on 127.0.0.1, with the sandbox's bookie settings; registered in the cluster
    while it runs (other clients may place ledgers on it meanwhile), then stopped and its cookie removed."""
    from bookie.errors import NotFound
    from bookie.local.bookies import LocalBookie, wait_registered
    from bookie.local.sandbox import BOOKIE_SETTINGS
    from bookie.meta.cookies import CookieStore
    from bookie.storage.db import DB_LEDGER_STORAGE, INTERLEAVED_LEDGER_STORAGE

    classes = {"db": DB_LEDGER_STORAGE, "interleaved": INTERLEAVED_LEDGER_STORAGE}
    bookie = LocalBookie.create(0, directory, service_uri, {**BOOKIE_SETTINGS, "ledgerStorageClass": classes[storage]})
    bookie.start()
    try:
        wait_registered(store, [bookie])
        yield bookie
    finally:
        bookie.stop()
        try:
            CookieStore(store).delete(bookie.bookie_id)
        except NotFound:
            pass


def raw_group_commit(directory: Path, entry_size: int, entries: int, group_bytes: int = 512 * 1024) -> dict:
    """Append ``int32 length | entry`` records in groups of ``group_bytes`` to a zero-preallocated file and fsync
    each group: the best a Python journal can do on this disk."""
    record = pack_record(os.urandom(entry_size + 52))  # a framed 1 KiB entry is size + 52 bytes
    per_group = max(1, group_bytes // len(record))
    group = record * per_group
    directory.mkdir(parents=True, exist_ok=True)
    fd, path = tempfile.mkstemp(dir=directory, prefix="raw-journal-")
    try:
        total = ((entries + per_group - 1) // per_group) * len(group)
        zeros = bytes(1 << 20)
        for offset in range(0, total + len(zeros), len(zeros)):
            os.pwrite(fd, zeros, offset)
        os.fsync(fd)
        written, position = 0, 0
        started = time.perf_counter()
        while written < entries:
            os.pwrite(fd, group, position)
            os.fdatasync(fd)
            position += len(group)
            written += per_group
        seconds = time.perf_counter() - started
    finally:
        os.close(fd)
        os.unlink(path)
    return throughput(written, entry_size, seconds)

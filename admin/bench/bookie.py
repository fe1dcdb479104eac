"""A direct bookie benchmark (like Apache BookKeeper's BenchBookie): adds over one bookie's batched add stream,
without the ledger client; and, in the same run, a raw Python group-commit append + fsync loop on the same disk
with the same entry size, for the ratio between the two.

Entries are framed (CRC32C) before the clock starts: this measures the bookie, not the client's framing.
"""

from __future__ import annotations

import asyncio
import os
import struct
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from admin.bench.stats import latency_ms, throughput
from bookie.codec.digest import Digester, DigestType, master_key
from bookie.codec.entry import frame_entry
from bookie.errors import BKError, error_for_status

BENCH_PASSWORD = b"bkctl-bench"
SIZE = struct.Struct(">i")


@dataclass
class BookieBench:
    address: tuple[str, int]
    entry_size: int = 1024
    entries: int = 200_000
    ledgers: int = 1
    batch_entries: int = 256
    max_outstanding: int = 32  # batches in flight
    first_ledger_id: int = 0

    def batches(self) -> list:
        """The AddBatch messages, round-robin over the ledgers, framed up front."""
        from bookie._proto import bookkeeper_protocol_pb2 as pb

        digester = Digester(DigestType.CRC32C)
        key = master_key(BENCH_PASSWORD)
        base = self.first_ledger_id or (int(time.time() * 1000) << 8)
        payload = os.urandom(self.entry_size)
        next_entry = [0] * self.ledgers
        batches = []
        for batch_id, start in enumerate(range(0, self.entries, self.batch_entries)):
            records, used = [], set()
            for n in range(start, min(start + self.batch_entries, self.entries)):
                ledger = n % self.ledgers
                entry_id = next_entry[ledger]
                next_entry[ledger] += 1
                framed = frame_entry(digester, base + ledger, entry_id, entry_id - 1, (entry_id + 1) * self.entry_size,
                                     payload)
                records.append(SIZE.pack(len(framed)) + framed)
                used.add(base + ledger)
            batch = pb.AddBatch(batchId=batch_id, entries=b"".join(records))
            for ledger_id in sorted(used):
                batch.keys.add(ledgerId=ledger_id, masterKey=key)
            batches.append(batch)
        return batches

    async def _drive(self, batches: list) -> tuple[float, list[float]]:
        import grpc

        from bookie._proto import bookkeeper_protocol_pb2_grpc as pb_grpc
        from bookie.client.channel import OPTIONS

        host, port = self.address
        latencies: list[float] = []
        async with grpc.aio.insecure_channel(f"{host}:{port}", options=OPTIONS) as channel:
            call = pb_grpc.BookieStub(channel).AddEntries()
            window = asyncio.Semaphore(self.max_outstanding)
            sent: dict[int, float] = {}

            async def send():
                for batch in batches:
                    await window.acquire()
                    sent[batch.batchId] = time.perf_counter()
                    await call.write(batch)
                await call.done_writing()

            started = time.perf_counter()
            sender = asyncio.ensure_future(send())
            async for answer in call:
                now = time.perf_counter()
                if answer.failed:
                    first = answer.failed[0]
                    raise error_for_status(first.status, f"bookie refused ledger {first.ledgerId} entry "
                                                         f"{first.entryId} (status {first.status})")
                latencies.extend([now - sent.pop(answer.batchId)] * answer.count)
                window.release()
            await sender
            return time.perf_counter() - started, latencies

    def run(self) -> dict:
        batches = self.batches()
        try:
            import uvloop

            seconds, latencies = uvloop.run(self._drive(batches))
        except ImportError:
            seconds, latencies = asyncio.run(self._drive(batches))
        if len(latencies) != self.entries:
            raise BKError(f"only {len(latencies)} of {self.entries} adds were acknowledged")
        return {**throughput(self.entries, self.entry_size, seconds), "latencyMs": latency_ms(latencies)}


def raw_group_commit(directory: Path, entry_size: int, entries: int, group_bytes: int = 512 * 1024) -> dict:
    """Append ``int32 length | entry`` records in groups of ``group_bytes`` to a zero-preallocated file and fsync
    each group: the best a Python journal can do on this disk."""
    record = SIZE.pack(entry_size + 52) + os.urandom(entry_size + 52)  # a framed 1 KiB entry is size + 52 bytes
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

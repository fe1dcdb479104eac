"""Client benchmarks (like Apache BookKeeper's `benchmark writes` / `benchmark reads`): the ledger client against a
running cluster. Run on the client's event loop, through its async core.

With ``rate``, each add's latency counts from the moment it was due, not from when it was sent, so a stall shows
in the percentiles instead of hiding behind a slower send rate (no coordinated omission).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable

from admin.bench.stats import latency_ms, throughput
from bookie.codec.digest import DigestType
from bookie.errors import BKError, NoSuchLedger

PASSWORD = b"bkctl-bench"
# With --rate, the writer wakes at most every 1 ms and sends what came due (the Java client's benchmark sleeps in whole
# milliseconds too, on Java 17). Latency still counts from each entry's due time, so the tick is part of it. At 10k
# entries/s, runs alternating: p50 / p99 1.62-1.64 / 3.27-3.32 ms with 1 ms, 2.00-2.16 / 3.93-4.19 with 2 ms,
# 2.09-2.43 / 6.6-8.3 with 0.5 ms (the client's CPU-seconds per 50k adds 1.0, 0.8-0.9 and 2.9-3.2).
SEND_TICK = 0.001


async def write(
    core,
    ensemble: int,
    write_quorum: int,
    ack_quorum: int,
    entry_size: int = 1024,
    ledgers: int = 1,
    max_outstanding: int = 5000,
    entries: int | None = None,
    seconds: float | None = None,
    rate: float | None = None,
    progress: Callable[[int], None] = lambda n: None,
    keep: bool = False,
    created: list[int] | None = None,
):
    """Write, then close the ledgers (and delete them unless ``keep``), also when an add failed. Each ledger id is
    appended to ``created`` as soon as it exists, so that a caller interrupted meanwhile can delete them."""
    created = [] if created is None else created
    writers = []
    for _ in range(ledgers):
        writers.append(await core.create(ensemble, write_quorum, ack_quorum, DigestType.CRC32C, PASSWORD, {}))
        created.append(writers[-1].ledger_id)
    payload = os.urandom(entry_size)
    window = asyncio.Semaphore(max_outstanding)
    latencies: list[float] = []
    errors: list[BaseException] = []
    clock = time.perf_counter
    interval = 1.0 / rate if rate else 0.0
    started, cpu = clock(), time.process_time()
    sent = 0

    def done(future, due):
        window.release()
        if future.cancelled():  # the client is shutting down under an interrupted caller
            return
        if future.exception() is not None:
            errors.append(future.exception())
            return
        latencies.append(clock() - due)
        progress(1)

    try:
        while not errors and (entries is None or sent < entries) and (seconds is None or clock() - started < seconds):
            due = clock()
            if rate:  # send everything that is due, then sleep until the next one is
                due = started + sent * interval
                if due > clock():  # what came due while sleeping goes out as one batch per bookie
                    await asyncio.sleep(max(due - clock(), SEND_TICK))
                    continue
            await window.acquire()  # returns at once unless max_outstanding adds are in flight
            writers[sent % ledgers].append(payload).add_done_callback(lambda f, due=due: done(f, due))
            sent += 1
        for _ in range(max_outstanding):
            await window.acquire()
        elapsed, cpu = clock() - started, time.process_time() - cpu
    finally:
        for writer in writers:  # a failed add must not leave its ledger OPEN (kept) or behind (not kept)
            try:
                await writer.close(despite_failure=True)
            except BKError:
                pass  # deleted below, or kept at whatever state: the error below is what the caller sees
            if not keep:
                try:
                    await core.delete(writer.ledger_id)
                except NoSuchLedger:
                    pass  # an interrupted caller deleted it first (it does not wait for this clean-up)
    if errors:
        raise errors[0]
    result = {
        **throughput(len(latencies), entry_size, elapsed),
        "latencyMs": latency_ms(latencies),
        "cpuSeconds": round(cpu, 3),
    }
    return result, [w.ledger_id for w in writers]


READ_WINDOWS = 10  # at least this many latency samples from a read of a short ledger


async def read(core, ledger_id: int, progress: Callable[[int], None] = lambda n: None, window: int = 4096):
    """Read a closed ledger from start to end, streamed; latency is the time to receive each ``window`` entries,
    fewer for a ledger of less than ``READ_WINDOWS`` windows (a latency per entry would be the stream's spacing,
    not a wait anyone sees; no window at all would report no latency)."""
    reader = await core.open(ledger_id, PASSWORD, recovery=False)
    window = max(1, min(window, (reader.lac + 1) // READ_WINDOWS))
    clock = time.perf_counter
    latencies, count, size = [], 0, 0
    started = mark = clock()
    cpu = time.process_time()
    async for entries in reader.iter_windows(0, reader.lac):
        for entry in entries:
            count += 1
            size += len(entry.payload)
            if count % window == 0:
                now = clock()
                latencies.append(now - mark)
                mark = now
                progress(window)
    elapsed, cpu = clock() - started, time.process_time() - cpu
    return {
        **throughput(count, size // max(count, 1), elapsed),
        "latencyMs": latency_ms(latencies),
        "latencyWindow": window,
        "cpuSeconds": round(cpu, 3),
    }

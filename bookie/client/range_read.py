"""A range read on one connection (:meth:`BookieClient.read_range`): plain reads of consecutive entries (those of a
stripe only, when given), a window of them in flight, the answers of one burst yielded together."""

from __future__ import annotations

import asyncio
import collections
import itertools
from collections.abc import AsyncIterator, Iterator

from bookie.client.bookie_client import EOK, EntryChunk, RangeStopped, Stripe
from bookie.client.connection import Connection, Key, RangeWaiter
from bookie.codec.write_set import wanted_entries
from bookie.errors import OperationTimeout, ServiceUnavailable

# Reads in flight per range read: at most READ_WINDOW, and about READ_WINDOW_BYTES of answers, sized by the last
# entry read (the first burst, before any size is known, is FIRST_READS). 1 KiB entries, ours -> ours, 3 bookies on
# 2 cores: 256 in flight left the CPUs idle a tenth of the time waiting for answers (perf -a); 1,024 read 74-79k
# entries/s against 70k in alternating runs. A range of 5 MB entries keeps 1 in flight, not a gigabyte.
READ_WINDOW = 1024
READ_WINDOW_BYTES = 4 << 20
FIRST_READS = 4


async def read_range(
    conn: Connection,
    ledger_id: int,
    first_entry_id: int,
    last_entry_id: int,
    timeout: float,
    stripe: Stripe | None = None,
) -> AsyncIterator[EntryChunk | RangeStopped]:
    """The entries ``first_entry_id..last_entry_id`` (of ``stripe`` only, when given) in chunks, in order; a
    :class:`RangeStopped` ends it at the first one the bookie cannot give."""
    wanted: Iterator[int]
    if stripe is None:
        wanted = iter(range(first_entry_id, last_entry_id + 1))
    else:
        wanted = wanted_entries(
            first_entry_id,
            last_entry_id,
            stripe.bookie_index,
            stripe.ensemble_size,
            stripe.write_quorum_size,
            stripe.also_held_by,
        )
    what = f"range read of ledger {ledger_id}"
    reads = RangeWaiter()
    answers = reads.answers
    window: collections.deque[tuple[int, Key]] = collections.deque()  # (entry id, key), in order
    limit = FIRST_READS

    def refill() -> None:
        """Top the window up to ``limit`` reads, sent together."""
        entry_ids = list(itertools.islice(wanted, limit - len(window)))
        if entry_ids:
            window.extend(zip(entry_ids, conn.send_reads(ledger_id, entry_ids, reads), strict=True))

    try:
        refill()
        while window:
            chunk: EntryChunk = []
            while window:  # the answers that have come, in order (at most READ_WINDOW)
                item = answers.pop(window[0][1], None)
                if item is None:
                    break
                entry_id = window.popleft()[0]
                _, _, status, entry, _ = item  # once, not an attribute lookup each
                if status != EOK:
                    if chunk:
                        yield chunk
                    yield RangeStopped(entry_id, status)
                    return
                chunk.append((entry_id, entry))  # type: ignore[arg-type]  # a read's entry: bytes
            if not chunk:
                await _next_answers(conn, reads, timeout, what)
                continue
            limit = max(1, min(READ_WINDOW, READ_WINDOW_BYTES // max(len(chunk[-1][1]), 1)))
            if len(window) <= limit // 2:
                refill()
            yield chunk
    finally:
        for _, key in window:
            conn.forget(key, reads)


async def _next_answers(conn: Connection, reads: RangeWaiter, timeout: float, what: str) -> None:
    """Until the next answer of a range read, or its connection's failure (raised, as :meth:`Connection.wait`
    does)."""
    if reads.error is None:
        reads.wake = asyncio.get_running_loop().create_future()
        try:
            await asyncio.wait_for(reads.wake, timeout)
        except TimeoutError:
            raise OperationTimeout(f"{what} on bookie {conn.client.bookie_id} timed out") from None
        finally:
            reads.wake = None
    if reads.error is not None:
        if isinstance(reads.error, ServiceUnavailable):
            raise ServiceUnavailable(f"{reads.error} ({what})") from None
        raise reads.error

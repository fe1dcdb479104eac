"""Reading a ledger (BookKeeper: client/PendingReadOp.java): from one replica of each entry's write set, falling back to
the next on an error status, any transport error (unreachable, timed out, cancelled) or a bad digest (a bad digest is
reported as corruption: ledger, entry, bookie). A read fails only when no replica of some entry gives it. Sequential
ranges are read from every bookie of the ensemble at once, each streaming its own stripe; what a stripe lacks is
streamed from the next replica of the same entries, and what is still missing then is read one entry at a time, at most
MAX_ENTRY_READS at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Iterable, Iterator, Mapping
from typing import Any

from bookie.client.bookie_client import ENOENTRY, ENOLEDGER, EOK, EUA, LacRead, RangeStopped, Stripe, refused_because
from bookie.client.context import ClientContext
from bookie.codec.digest import Digester
from bookie.codec.entry import Entry, parse_entry
from bookie.codec.lac import parse_lac
from bookie.codec.write_set import write_set
from bookie.errors import BKError, CorruptEntry, NoSuchEntry, NoSuchLedger, ServiceUnavailable, Unauthorized
from bookie.meta.ledger_metadata import LedgerMetadata, Segment

log = logging.getLogger(__name__)
WINDOW_BYTES = 16 << 20  # a round of striped range reads holds about this much (and one more is read ahead)
MAX_WINDOW = 16384  # entries: 1 KiB entries read 112k/s with 16384, 102-108k/s with 4096
# Single-entry reads in flight per reader (a lost stripe read entry by entry): a bound, so that a ledger's worth of
# them is not sent at once; the bookie queues them on the connection, and 64 keeps that queue short for the reads
# behind it.
MAX_ENTRY_READS = 64


def covered(ensemble_size: int, write_quorum: int, ack_quorum: int, answered: set[int]) -> bool:
    """The coverage rule: every window of WQ consecutive ensemble indexes has fewer than AQ unanswered bookies."""
    for start in range(ensemble_size):
        unknown = sum(1 for w in range(write_quorum) if (start + w) % ensemble_size not in answered)
        if unknown >= ack_quorum:
            return False
    return True


async def _all(coroutines: Iterable[Awaitable[Any]]) -> None:
    """Run ``coroutines`` at once; when one fails, the others are cancelled (a failed window stops its reads)."""
    tasks = [asyncio.ensure_future(c) for c in coroutines]
    try:
        await asyncio.gather(*tasks)
    finally:  # ended before this returns, as wait_for_lac's polls: none fails later with no one to retrieve it
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class _InFlight:
    """A semaphore for single-entry reads that also keeps the highest number ever in flight (``peak``)."""

    def __init__(self, limit: int) -> None:
        self._semaphore = asyncio.Semaphore(limit)
        self.count = self.peak = 0

    async def __aenter__(self) -> None:
        await self._semaphore.acquire()
        self.count += 1
        self.peak = max(self.peak, self.count)

    async def __aexit__(self, *exc: object) -> None:
        self.count -= 1
        self._semaphore.release()


class LedgerReader:
    """A ledger open for reading, on the client's loop: entries up to ``lac`` (a closed ledger's last entry)."""

    def __init__(
        self, client: ClientContext, ledger_id: int, metadata: LedgerMetadata, password: bytes, lac: int
    ) -> None:
        self.client = client
        self.ledger_id = ledger_id
        self.metadata = metadata
        # Metadata of format v1 names no digest type: BookKeeper's reader then uses the one it is configured with.
        self.digester = Digester(metadata.digest_type or client.config.digest_type, password)
        self.lac = lac
        self.corruptions: list[str] = []  # "ledger L entry E on bookie B: ..." for every bad replica met
        self._in_flight: _InFlight | None = None
        entries = metadata.last_entry_id + 1 if metadata.is_closed else 0
        # An open ledger's length is not known yet: start small, then size windows by the entries read.
        average = metadata.length / entries if entries and metadata.length else 64 * 1024
        self.window = max(16, min(MAX_WINDOW, int(WINDOW_BYTES / max(average, 1))))

    def _parse(self, body: bytes, entry_id: int | None, bookie_id: str) -> Entry | None:
        """The entry in ``body`` (``entry_id`` None: whichever it is), or None for a corrupt copy (recorded)."""
        try:
            return parse_entry(self.digester, body, self.ledger_id, entry_id)  # the bookie is named below
        except CorruptEntry as exc:
            message = f"ledger {self.ledger_id} entry {entry_id} on bookie {bookie_id} is corrupt: {exc}"
            self.corruptions.append(message)
            log.warning("%s; trying another replica", message)
            return None

    async def read_entry(self, entry_id: int, skip: str | None = None) -> Entry:
        """One entry from the first replica of its write set that has a valid copy."""
        segment = self.metadata.segment_of(entry_id)
        md = self.metadata
        problems: list[str] = []
        no_ledger = refused = 0
        for index in write_set(entry_id, md.ensemble_size, md.write_quorum_size):
            bookie_id = segment.bookies[index]
            if bookie_id == skip:
                continue
            try:
                async with self._requests():
                    answer = await self.client.bookie(bookie_id).read_entry(
                        self.ledger_id,
                        entry_id,
                        self.client.config.read_entry_timeout,
                        f"read ledger {self.ledger_id} entry {entry_id}",
                    )
            except BKError as exc:  # any transport error of one replica (unreachable, timeout, cancelled): the next
                problems.append(str(exc))
                continue
            if answer.status != EOK:
                no_ledger += answer.status == ENOLEDGER
                refused += answer.status == EUA
                problems.append(f"bookie {bookie_id}: status {answer.status}")
                continue
            if (entry := self._parse(answer.body, entry_id, bookie_id)) is not None:
                return entry
            problems.append(f"bookie {bookie_id}: corrupt copy")
        if no_ledger:
            await self._check_not_deleted()
        if refused and refused == len(problems):
            raise Unauthorized(
                f"ledger {self.ledger_id} entry {entry_id}: the bookies refused the read: "
                + refused_because(self.client.tls is not None)
            )
        raise NoSuchEntry(f"ledger {self.ledger_id} entry {entry_id}: no readable replica ({'; '.join(problems)})")

    async def _check_not_deleted(self) -> None:
        """Replicas say they have no such ledger: if its metadata is gone too, it was deleted (say so, not the
        replicas' statuses)."""
        if not await asyncio.to_thread(self.client.ledgers.exists, self.ledger_id):
            raise NoSuchLedger(f"ledger {self.ledger_id} was deleted", ledger_id=self.ledger_id)

    def _requests(self) -> _InFlight:
        if self._in_flight is None:  # made on the client's loop, where it is used
            self._in_flight = _InFlight(MAX_ENTRY_READS)
        return self._in_flight

    async def iter_entries(self, first: int, last: int) -> AsyncIterator[Entry]:
        """Entries ``first..last`` in order (see :meth:`iter_windows`)."""
        async for window in self.iter_windows(first, last):
            for entry in window:
                yield entry

    async def iter_windows(self, first: int, last: int) -> AsyncIterator[list[Entry]]:
        """Entries ``first..last`` in order, a window (list) at a time: each segment's stripes streamed from all its
        bookies at once, the next window read while this one is consumed; entries a bookie could not give are read
        from another replica."""
        if first < 0 or last < first:
            return
        windows = self._windows(first, last)
        window = next(windows, None)
        ahead = asyncio.ensure_future(self._read_window(*window)) if window else None
        try:
            while ahead is not None:  # the next window is read while this one is handed out
                current, following = ahead, next(windows, None)
                ahead = asyncio.ensure_future(self._read_window(*following)) if following else None
                entries = await current
                if entries and not self.metadata.is_closed:  # size the next windows by what entries really weigh
                    average = sum(len(e.payload) for e in entries) / len(entries)
                    self.window = max(16, min(MAX_WINDOW, int(WINDOW_BYTES / max(average, 1))))
                yield entries
        finally:  # an error, or a consumer that stopped early: the window read ahead is not wanted
            if ahead is not None:
                ahead.cancel()  # also on a task that has ended: its error is then not logged as never retrieved

    def _windows(self, first: int, last: int) -> Iterator[tuple[Segment, int, int]]:
        """``(segment, first, last)`` of each window, sized by ``self.window`` when it is reached."""
        for index, segment in enumerate(self.metadata.segments):
            start, end = max(first, segment.first_entry_id), min(last, self.metadata.segment_end(index, 2**63 - 1))
            while start <= end:
                stop = min(end, start + self.window - 1)
                yield segment, start, stop
                start = stop + 1

    async def _read_window(self, segment: Segment, first: int, last: int) -> list[Entry]:
        """Round 0 streams every bookie's stripe (the entries it is first replica of). Round r streams, from each
        bookie, the entries still missing whose r-th replica it is: a lost bookie's stripe comes back as one stream
        from the next replica, not one request per entry. What is still missing after every replica was asked
        (a replica that stopped early) is read one entry at a time, MAX_ENTRY_READS at once."""
        md = self.metadata
        size, quorum = md.ensemble_size, md.write_quorum_size
        found: dict[int, Entry] = {}
        missing: list[int] = []
        for replica in range(quorum):
            wanted: Mapping[int, set[int] | None]  # ensemble index -> the entries to stream from it
            if replica == 0:
                wanted = dict.fromkeys(range(size))  # None: the whole stripe
            else:
                held: dict[int, set[int]] = {}
                for entry_id in missing:
                    held.setdefault((entry_id + replica) % size, set()).add(entry_id)
                wanted = held
            await _all(
                self._stream(segment, index, replica, first, last, entries, found) for index, entries in wanted.items()
            )
            missing = [e for e in range(first, last + 1) if e not in found]
            if not missing:
                return [found[e] for e in range(first, last + 1)]
        await self._read_each(missing, found)
        return [found[e] for e in range(first, last + 1)]

    async def _stream(
        self,
        segment: Segment,
        index: int,
        replica: int,
        first: int,
        last: int,
        entries: set[int] | None,
        found: dict[int, Entry],
    ) -> None:
        """Stream from the bookie at ``index`` the entries it holds as ``replica``-th replica (its stripe, for 0)
        into ``found``; only ``entries`` if given. Any error ends the stream: the next round reads the rest."""
        md = self.metadata
        bookie_id = segment.bookies[index]
        if entries is None:  # the entries this bookie is first replica of
            stripe = Stripe(md.ensemble_size, 1, index)
        else:  # what this bookie holds that the bookie ``replica`` places before it also holds (a superset)
            stripe = Stripe(md.ensemble_size, md.write_quorum_size, index, (index - replica) % md.ensemble_size)
            first, last = min(entries), max(entries)
        try:
            async for chunk in self.client.bookie(bookie_id).read_range(
                self.ledger_id, first, last, self.client.config.read_entry_timeout * 4, stripe
            ):
                if isinstance(chunk, RangeStopped):
                    if chunk.status == ENOLEDGER:
                        await self._check_not_deleted()
                    return  # the bookie stopped early: the rest comes from other replicas
                for entry_id, body in chunk:
                    if entries is not None and entry_id not in entries:
                        continue
                    entry = self._parse(body, entry_id, bookie_id)
                    if entry is not None:
                        found[entry_id] = entry
        except NoSuchLedger:
            raise
        except BKError as exc:
            log.warning("ledger %d: %s; reading those entries from other replicas", self.ledger_id, exc)

    async def _read_each(self, entry_ids: list[int], found: dict[int, Entry]) -> None:
        """Read ``entry_ids`` one at a time from any replica, a few workers at once (see MAX_ENTRY_READS)."""
        pending = iter(entry_ids)

        async def work() -> None:
            for entry_id in pending:  # one iterator shared by the workers: each entry is read once
                found[entry_id] = await self.read_entry(entry_id)

        await _all(work() for _ in range(min(MAX_ENTRY_READS, len(entry_ids))))

    async def read(self, first: int, last: int) -> list[Entry]:
        return [entry async for entry in self.iter_entries(first, last)]

    # ---- LAC ----
    async def read_lac(self) -> int:
        """The LAC from the last segment's bookies (READ_LAC), once the coverage rule is met."""
        md = self.metadata
        segment = md.segments[-1]
        answered: set[int] = set()
        best = -1

        async def ask(index: int) -> tuple[int, LacRead]:
            answer = await self.client.bookie(segment.bookies[index]).read_lac(
                self.ledger_id, self.client.config.read_entry_timeout
            )
            return index, answer

        for result in asyncio.as_completed([ask(i) for i in range(md.ensemble_size)]):
            try:
                index, answer = await result
            except BKError:
                continue
            if answer.status in (ENOENTRY, ENOLEDGER):
                answered.add(index)
            elif answer.status == EOK:
                answered.add(index)
                if answer.lac_body is not None:
                    try:
                        best = max(best, parse_lac(self.digester, answer.lac_body, self.ledger_id))
                    except CorruptEntry:
                        pass
                if answer.last_entry_body is not None:
                    entry = self._parse(answer.last_entry_body, None, segment.bookies[index])
                    if entry is not None:
                        best = max(best, entry.last_add_confirmed)
        if not covered(md.ensemble_size, md.write_quorum_size, md.ack_quorum_size, answered):
            raise ServiceUnavailable(f"ledger {self.ledger_id}: too few bookies answered to know its LAC")
        self.lac = max(self.lac, best)
        return self.lac

    async def wait_for_lac(self, previous: int, timeout: float) -> int:
        """Long poll: return once the LAC passes ``previous`` or after ``timeout`` seconds (the LAC then).

        Every bookie of the last segment is asked at once: the entry carrying the next LAC lands on some of them
        only; the first answer above ``previous`` wins.
        """
        segment = self.metadata.segments[-1]

        async def poll(bookie_id: str) -> int:
            answer = await self.client.bookie(bookie_id).long_poll_lac(
                self.ledger_id, previous, timeout, timeout + self.client.config.read_entry_timeout
            )
            return answer.max_lac if answer.status == EOK else -1

        polls = [asyncio.ensure_future(poll(b)) for b in segment.bookies]
        try:
            for done in asyncio.as_completed(polls):
                try:
                    lac = await done
                except BKError:
                    continue
                if lac > previous:
                    self.lac = max(self.lac, lac)
                    return self.lac
        finally:
            # The polls end here, before this coroutine does: interrupted (the client then closes at once), a poll
            # not yet cancelled would otherwise fail later of the closed connection, with no one to retrieve it.
            for task in polls:
                task.cancel()
            await asyncio.gather(*polls, return_exceptions=True)
        return self.lac

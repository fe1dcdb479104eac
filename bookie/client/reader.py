"""Reading a ledger (spec/client-protocol.md): from one replica of each entry's write set, falling back to the
next on ENOENTRY, a timeout or a bad digest (a bad digest is reported as corruption: ledger, entry, bookie).
Sequential ranges are read from every bookie of the ensemble at once, each streaming its own stripe.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.codec.digest import Digester
from bookie.codec.entry import Entry, parse_entry
from bookie.codec.lac import parse_lac
from bookie.codec.write_set import write_set
from bookie.errors import BKError, CorruptEntry, NoSuchEntry, ServiceUnavailable, OperationTimeout
from bookie.meta.ledger_metadata import LedgerMetadata, Segment

log = logging.getLogger(__name__)
WINDOW_BYTES = 16 << 20  # a round of striped range reads holds about this much (and one more is read ahead)
MAX_WINDOW = 16384  # entries: 1 KiB entries read 112k/s with 16384, 102-108k/s with 4096


def covered(ensemble_size: int, write_quorum: int, ack_quorum: int, answered: set[int]) -> bool:
    """The coverage rule: every window of WQ consecutive ensemble indexes has fewer than AQ unanswered bookies."""
    for start in range(ensemble_size):
        unknown = sum(1 for w in range(write_quorum) if (start + w) % ensemble_size not in answered)
        if unknown >= ack_quorum:
            return False
    return True


class LedgerReader:
    def __init__(self, client, ledger_id: int, metadata: LedgerMetadata, password: bytes, lac: int):
        self.client = client
        self.ledger_id = ledger_id
        self.metadata = metadata
        self.digester = Digester(metadata.digest_type, password)
        self.lac = lac
        self.corruptions: list[str] = []  # "ledger L entry E on bookie B: ..." for every bad replica met
        entries = metadata.last_entry_id + 1 if metadata.is_closed else 0
        # An open ledger's length is not known yet: start small, then size windows by the entries read.
        average = metadata.length / entries if entries and metadata.length else 64 * 1024
        self.window = max(16, min(MAX_WINDOW, int(WINDOW_BYTES / max(average, 1))))

    def _parse(self, body: bytes, entry_id: int, bookie_id: str) -> Entry | None:
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
        problems = []
        for index in write_set(entry_id, md.ensemble_size, md.write_quorum_size):
            bookie_id = segment.bookies[index]
            if bookie_id == skip:
                continue
            try:
                answer = await self.client.bookie(bookie_id).read_entry(
                    pb.ReadRequest(ledgerId=self.ledger_id, entryId=entry_id), self.client.config.read_entry_timeout,
                    f"read ledger {self.ledger_id} entry {entry_id}",
                )
            except (ServiceUnavailable, OperationTimeout) as exc:
                problems.append(str(exc))
                continue
            if answer.status != pb.EOK:
                problems.append(f"bookie {bookie_id}: status {answer.status}")
                continue
            if (entry := self._parse(answer.body, entry_id, bookie_id)) is not None:
                return entry
            problems.append(f"bookie {bookie_id}: corrupt copy")
        raise NoSuchEntry(f"ledger {self.ledger_id} entry {entry_id}: no readable replica ({'; '.join(problems)})")

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
        while ahead is not None:  # the next window is read while this one is handed out
            current, following = ahead, next(windows, None)
            ahead = asyncio.ensure_future(self._read_window(*following)) if following else None
            try:
                entries = await current
            except BaseException:
                if ahead is not None:
                    ahead.cancel()
                raise
            if entries and not self.metadata.is_closed:  # size the next windows by what entries really weigh
                average = sum(len(e.payload) for e in entries) / len(entries)
                self.window = max(16, min(MAX_WINDOW, int(WINDOW_BYTES / max(average, 1))))
            yield entries

    def _windows(self, first: int, last: int):
        """``(segment, first, last)`` of each window, sized by ``self.window`` when it is reached."""
        for index, segment in enumerate(self.metadata.segments):
            start, end = max(first, segment.first_entry_id), min(last, self.metadata.segment_end(index, 2**63 - 1))
            while start <= end:
                stop = min(end, start + self.window - 1)
                yield segment, start, stop
                start = stop + 1

    async def _read_window(self, segment: Segment, first: int, last: int) -> list[Entry]:
        md = self.metadata
        found: dict[int, Entry] = {}

        async def stripe(index: int) -> None:
            bookie_id = segment.bookies[index]
            request = pb.ReadRangeRequest(ledgerId=self.ledger_id, firstEntryId=first, lastEntryId=last,
                                          ensembleSize=md.ensemble_size, writeQuorumSize=1, bookieIndex=index)
            try:
                async for chunk in self.client.bookie(bookie_id).read_range(
                    request, self.client.config.read_entry_timeout * 4
                ):
                    for entry_id, body in chunk:
                        if isinstance(body, int):
                            return  # the bookie stopped early: the rest of its stripe comes from other replicas
                        entry = self._parse(body, entry_id, bookie_id)
                        if entry is not None:
                            found[entry_id] = entry
            except BKError as exc:
                log.warning("ledger %d: %s; reading its stripe from other replicas", self.ledger_id, exc)

        await asyncio.gather(*(stripe(i) for i in range(md.ensemble_size)))
        missing = [e for e in range(first, last + 1) if e not in found]
        for entry in await asyncio.gather(*(self.read_entry(e) for e in missing)):
            found[entry.entry_id] = entry
        return [found[e] for e in range(first, last + 1)]

    async def read(self, first: int, last: int) -> list[Entry]:
        return [entry async for entry in self.iter_entries(first, last)]

    # ---- LAC ----
    async def read_lac(self) -> int:
        """The LAC from the last segment's bookies (READ_LAC), once the coverage rule is met."""
        md = self.metadata
        segment = md.segments[-1]
        answered: set[int] = set()
        best = -1

        async def ask(index: int):
            answer = await self.client.bookie(segment.bookies[index]).read_lac(
                self.ledger_id, self.client.config.read_entry_timeout
            )
            return index, answer

        for result in asyncio.as_completed([ask(i) for i in range(md.ensemble_size)]):
            try:
                index, answer = await result
            except BKError:
                continue
            if answer.status in (pb.ENOENTRY, pb.ENOLEDGER):
                answered.add(index)
            elif answer.status == pb.EOK:
                answered.add(index)
                if answer.HasField("lacBody"):
                    try:
                        best = max(best, parse_lac(self.digester, answer.lacBody, self.ledger_id))
                    except CorruptEntry:
                        pass
                if answer.HasField("lastEntryBody"):
                    entry = self._parse(answer.lastEntryBody, None, segment.bookies[index])
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
        request = pb.ReadRequest(ledgerId=self.ledger_id, entryId=-1, previousLAC=previous, timeOut=int(timeout * 1000))

        async def poll(bookie_id: str) -> int:
            answer = await self.client.bookie(bookie_id).read_entry(
                request, timeout + self.client.config.read_entry_timeout, f"long poll ledger {self.ledger_id}"
            )
            return answer.maxLAC if answer.status == pb.EOK else -1

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
            for task in polls:
                task.cancel()
        return self.lac

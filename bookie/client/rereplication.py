"""Re-replication of lost bookies' ledgers (BookKeeper: client/BookKeeperAdmin.java, LedgerFragmentReplicator.java):
what `bookie recover`, `bookie decommission`, the autorecovery workers and the bookies' HTTP admin API
(/api/v1/autorecovery/bookie and /decommission) run.

For every ledger with the bookie in a segment: an OPEN ledger whose last segment holds it is recovered (fenced and
closed) first; then, for each segment holding it, the entries it had to hold (write-set rule) are read from the
surviving replicas — each streaming its own stripe, digests checked — and written with RECOVERY_ADD, as framed, to
a replacement chosen by the placement policy; then the segment is swapped by a CAS on the metadata. One failing
ledger does not stop the run. Re-running continues where it stopped: fixed segments no longer name the bookie, and
an interrupted fragment's segment is split after what its replacement acknowledged (``_keep_copied``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from bookie.client.bookie_client import EOK, BookieClient, EntryToken, RangeStopped, Stripe, status_name
from bookie.client.core import ClientCore
from bookie.client.placement import replacement
from bookie.codec.digest import DIGEST_SIZES, Digester, master_key
from bookie.codec.entry import HEADER, parse_entry
from bookie.codec.records import pack_record
from bookie.codec.write_set import entries_of_bookie, write_set
from bookie.errors import (
    BKError,
    CorruptData,
    CorruptEntry,
    InvalidArgument,
    MetadataVersionConflict,
    NoSuchLedger,
    OperationTimeout,
)
from bookie.meta.cookies import CookieStore
from bookie.meta.ledger_metadata import LedgerMetadata, Segment
from bookie.meta.registration import BookieRegistry, RegisteredBookie
from bookie.meta.store import MetadataStore

log = logging.getLogger(__name__)
IN_FLIGHT_BYTES = 4 << 20  # recovery adds outstanding to one target, per fragment
LEDGERS_AT_ONCE = 8  # one ledger at a time re-replicated 22.8 MB/s; ledgers are independent
WRITABLE_TTL = 5.0  # seconds
INTERRUPTED_ADDS_WAIT = 5.0  # seconds an interrupted copy waits for its adds in flight, to keep what they wrote


class TargetRefused(BKError):
    """The bookie chosen to take a replica refused the copy (a Java bookie refuses, for 7 days, a ledger it deleted
    while fenced or half-deleted: HandleFactoryImpl's recentlyFencedAndDeletedLedgers, answered EFENCED); another
    target may take it."""


@dataclass
class RecoverReport:
    ledgers: list[int] = field(default_factory=list)  # ledgers that named the bookies
    recovered: list[int] = field(default_factory=list)
    skipped_open: list[int] = field(default_factory=list)
    failed: dict[int, str] = field(default_factory=dict)
    # interrupted: ledger -> the entry its fragment's copy stopped at; the entries before it were kept (the segment
    # split there), so that a rerun copies from that entry on
    kept_until: dict[int, int] = field(default_factory=dict)
    fragments: int = 0
    entries: int = 0
    bytes: int = 0
    seconds: float = 0.0

    @property
    def complete(self) -> bool:
        """Every ledger re-replicated: none failed, none left open."""
        return not self.failed and not self.skipped_open

    def doc(self) -> dict[str, Any]:
        return {
            "ledgers": len(self.ledgers),
            "recovered": self.recovered,
            "skippedOpen": self.skipped_open,
            "failed": {str(k): v for k, v in self.failed.items()},
            "fragments": self.fragments,
            "entries": self.entries,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 3),
            "mbPerSec": round(self.bytes / self.seconds / 1e6, 1) if self.seconds else 0.0,
        }


class _Acks:
    """Collects the target bookie's answers to recovery adds."""

    def __init__(self) -> None:
        self.outstanding = 0
        self.acked: set[int] = set()
        self.errors: list[str] = []
        self.drained = asyncio.Event()
        self.drained.set()

    def sent(self) -> None:
        self.outstanding += 1
        self.drained.clear()

    def added(self, token: EntryToken, index: int, status: int, bookie: BookieClient) -> None:
        if status != EOK:
            self.errors.append(f"entry {token.entry_id} on {bookie.bookie_id}: {status_name(status)}")
        else:
            self.acked.add(token.entry_id)
        self.outstanding -= 1
        if self.outstanding == 0:
            self.drained.set()


class RateLimit:
    """A token bucket over bytes per second (None: unlimited)."""

    def __init__(self, bytes_per_second: float | None) -> None:
        self.rate = bytes_per_second
        self.allowance = bytes_per_second or 0
        self.last = time.monotonic()

    async def take(self, size: int) -> None:
        if not self.rate:
            return
        now = time.monotonic()
        self.allowance = min(self.rate, self.allowance + (now - self.last) * self.rate)
        self.last = now
        self.allowance -= size
        if self.allowance < 0:
            await asyncio.sleep(-self.allowance / self.rate)


class BookieRecovery:
    """Re-replicates what ``lost`` bookies held. ``progress(kind, n)`` is called as it goes: "bytes" for each
    entry copied (its size), "fragments" for each segment's replica swapped in, "ledgers" for each ledger handled
    and "recovered" for each ledger that no longer names a lost bookie."""

    def __init__(
        self,
        core: ClientCore,
        lost: set[str],
        skip_open: bool = False,
        rate: float | None = None,
        progress: Callable[[str, int], None] = lambda kind, n: None,
    ) -> None:
        self.core, self.lost, self.skip_open = core, set(lost), skip_open
        self.unreadable = set(lost)  # the bookies not read from: lost ones (a move reads its live source too)
        self.read_back = False  # read every copied entry back from the target before the swap (a move does)
        self.limit = RateLimit(rate)
        self.progress = progress
        self._writable: tuple[float, list[RegisteredBookie]] | None = None
        self.report = RecoverReport()  # of the run under way: what an interrupted run had done
        self.settled = threading.Event()  # set when no fragment is being copied (an interrupted one has split)
        self.settled.set()
        self._copying = 0

    async def _writable_bookies(self) -> list[RegisteredBookie]:
        """The writable bookies, listed again at most every ``WRITABLE_TTL`` seconds (not once per fragment)."""
        now = time.monotonic()
        if self._writable is None or now - self._writable[0] > WRITABLE_TTL:
            self._writable = (now, await self.core.writable_bookies())
        return self._writable[1]

    def bytes_to_copy(self, ledgers: Iterable[tuple[int, LedgerMetadata]]) -> int:
        """The bytes a copy of the lost bookies' replicas of ``ledgers`` sends, framed entries (header and digest)
        as ``RecoverReport.bytes`` counts them, estimated from their metadata (an open ledger's count 0: its length
        is not known until it is closed): the total a progress display starts with."""
        total = 0
        for _, md in ledgers:
            framing = HEADER.size + DIGEST_SIZES[md.digest_type or self.core.config.digest_type]
            for index, segment in enumerate(md.segments):
                for position, bookie_id in enumerate(segment.bookies):
                    if bookie_id in self.lost:
                        total += replica_bytes(md, index, position) + framing * replica_entries(md, index, position)
        return total

    def affected(
        self, ledger_ids: list[int] | None = None, on_corrupt: Callable[[CorruptData], None] | None = None
    ) -> list[tuple[int, LedgerMetadata]]:
        """The ledgers with a lost bookie in some segment (blocking: metadata reads); unreadable metadata raises
        :class:`CorruptData`, or goes to ``on_corrupt`` and is skipped."""
        found = self.core.ledgers.iter_ledgers(ledger_ids, on_corrupt=on_corrupt)
        return [(lid, md) for lid, md in found if any(self.lost & set(s.bookies) for s in md.segments)]

    async def run(self, ledgers: list[tuple[int, LedgerMetadata]]) -> RecoverReport:
        """Recover the ledgers, ``LEDGERS_AT_ONCE`` at a time (a ledger's own segments one after another)."""
        report = self.report = RecoverReport(ledgers=[lid for lid, _ in ledgers])
        started = time.monotonic()
        window = asyncio.Semaphore(LEDGERS_AT_ONCE)

        async def one(ledger_id: int, md: LedgerMetadata) -> None:
            async with window:
                try:
                    if await self._ledger(ledger_id, md, report):
                        report.recovered.append(ledger_id)
                        self.progress("recovered", 1)
                    else:
                        report.skipped_open.append(ledger_id)
                except (TimeoutError, BKError) as exc:
                    log.warning("ledger %d not recovered: %s", ledger_id, exc)
                    report.failed[ledger_id] = str(exc) or type(exc).__name__
                self.progress("ledgers", 1)

        await asyncio.gather(*(one(ledger_id, md) for ledger_id, md in ledgers))
        report.recovered.sort()
        report.seconds = time.monotonic() - started
        return report

    async def _ledger(self, ledger_id: int, md: LedgerMetadata, report: RecoverReport) -> bool:
        password = md.password or b""
        if not md.is_closed:
            if self.lost & set(md.segments[-1].bookies):
                if self.skip_open:
                    return False
                await self.core.open(ledger_id, password, recovery=True)  # fence and close first
            md, _ = await asyncio.to_thread(self.core.ledgers.read, ledger_id)
        for index, segment in enumerate(md.segments):
            for position, bookie_id in enumerate(segment.bookies):
                if bookie_id in self.lost:
                    md = await self._fragment(ledger_id, md, index, position, password, report)
        return True

    async def _fragment(
        self,
        ledger_id: int,
        md: LedgerMetadata,
        index: int,
        position: int,
        password: bytes,
        report: RecoverReport,
        target: str | None = None,
    ) -> LedgerMetadata:
        """Copy the replica at ``position`` of segment ``index`` to ``target`` (None: the placement policy's
        pick) and swap it in; return the metadata after the swap."""
        segment = md.segments[index]
        target = target or await self._target(md, index, position)
        first, last = segment.first_entry_id, md.segment_end(index, md.last_entry_id)
        lost = segment.bookies[position]
        wanted = list(entries_of_bookie(position, first, last, md.ensemble_size, md.write_quorum_size))
        self._copying += 1
        self.settled.clear()
        try:
            if wanted:
                acks = _Acks()
                try:
                    await self._copy(ledger_id, md, segment, position, set(wanted), target, password, report, acks)
                    if self.read_back:
                        await self._read_back(ledger_id, md, position, wanted, target)
                except asyncio.CancelledError:
                    with contextlib.suppress(asyncio.CancelledError, TimeoutError):  # the adds in flight get answered
                        await asyncio.wait_for(acks.drained.wait(), INTERRUPTED_ADDS_WAIT)
                    self._keep_copied(ledger_id, first, last, position, lost, target, wanted, acks.acked, report)
                    raise
            report.fragments += 1
            self.progress("fragments", 1)
            swap = asyncio.ensure_future(asyncio.to_thread(self._swap, ledger_id, first, last, lost, position, target))
            try:
                return await asyncio.shield(swap)
            except asyncio.CancelledError:
                await asyncio.wait([swap])  # a metadata write under way ends before anything is let go (a lock)
                raise
        finally:
            self._copying -= 1
            if not self._copying:
                self.settled.set()

    async def _read_back(
        self, ledger_id: int, md: LedgerMetadata, position: int, wanted: list[int], target: str
    ) -> None:
        """Every entry copied must come back from the target (its stripe, one range read): TargetRefused if not."""
        found: set[int] = set()
        stripe = Stripe(md.ensemble_size, md.write_quorum_size, position, also_held_by=position)
        async for chunk in self.core.bookie(target).read_range(
            ledger_id, wanted[0], wanted[-1], 60.0, stripe, high_priority=True
        ):
            if isinstance(chunk, RangeStopped):
                break
            found.update(entry_id for entry_id, _ in chunk)
        missing = sorted(set(wanted) - found)
        if missing:
            raise TargetRefused(f"{target} acknowledged entries it does not return: {missing[:10]}")

    async def _target(self, md: LedgerMetadata, index: int, position: int) -> str:
        """The bookie to take ``position`` of segment ``index``: the placement policy's replacement."""
        return replacement(await self._writable_bookies(), list(md.segments[index].bookies), position, self.lost)

    async def _copy(
        self,
        ledger_id: int,
        md: LedgerMetadata,
        segment: Segment,
        position: int,
        needed: set[int],
        target: str,
        password: bytes,
        report: RecoverReport,
        acks: _Acks,
    ) -> None:
        digester = Digester(md.digest_type or self.core.config.digest_type, password)
        key = master_key(password)
        destination = self.core.bookie(target)
        first, last = min(needed), max(needed)

        limited = self.limit.rate is not None

        async def put(entry_id: int, body: bytes) -> None:
            needed.discard(entry_id)  # claimed before any await: another stripe may offer the same entry
            if limited:
                await self.limit.take(len(body))
            while acks.outstanding * len(body) > IN_FLIGHT_BYTES:
                await asyncio.sleep(0.001)
            acks.sent()
            destination.add(ledger_id, key, True, pack_record(body), acks, EntryToken(entry_id), position)
            report.entries += 1
            report.bytes += len(body)
            self.progress("bytes", len(body))

        async def stream(source: int) -> None:  # each survivor streams its stripe; the first copy of an entry wins
            stripe = Stripe(md.ensemble_size, md.write_quorum_size, source, also_held_by=position)
            try:
                async for chunk in self.core.bookie(segment.bookies[source]).read_range(
                    ledger_id, first, last, 60.0, stripe, high_priority=True
                ):
                    if isinstance(chunk, RangeStopped):
                        break  # what it could not give comes from another replica
                    for entry_id, body in chunk:
                        if entry_id not in needed:
                            continue
                        try:
                            parse_entry(digester, body, ledger_id, entry_id)
                        except CorruptEntry as exc:
                            log.warning("ledger %d: %s; another replica will do", ledger_id, exc)
                            continue
                        if entry_id in needed:
                            await put(entry_id, body)
            except BKError as exc:
                log.warning("ledger %d: %s", ledger_id, exc)

        # the other replicas stream in parallel (a move's live source, which holds all of it, only for the rest:
        # read alone it halved the copy's rate), then whatever no stripe gave, one replica at a time
        await asyncio.gather(
            *(stream(i) for i, b in enumerate(segment.bookies) if b not in self.unreadable and i != position)
        )
        if needed and segment.bookies[position] not in self.unreadable:
            await stream(position)
        for entry_id in sorted(needed):  # whatever no stripe gave: one replica at a time
            for source in write_set(entry_id, md.ensemble_size, md.write_quorum_size):
                if segment.bookies[source] in self.unreadable:
                    continue
                answer = await self.core.bookie(segment.bookies[source]).read_entry(
                    ledger_id, entry_id, 10.0, "recovery read"
                )
                if answer.status == EOK:
                    try:
                        parse_entry(digester, answer.body, ledger_id, entry_id)
                    except CorruptEntry:
                        continue
                    await put(entry_id, answer.body)
                    break
        await asyncio.wait_for(acks.drained.wait(), 60)
        if needed:
            raise BKError(f"entries {sorted(needed)[:10]} have no readable replica left: not recoverable")
        if acks.errors:
            raise TargetRefused(f"writing to {target} failed: {acks.errors[0]}")

    def _keep_copied(
        self,
        ledger_id: int,
        first: int,
        last: int,
        position: int,
        lost: str,
        target: str,
        wanted: list[int],
        acked: set[int],
        report: RecoverReport,
    ) -> None:
        """An interrupted copy keeps what the target acknowledged: the segment is split before the first wanted
        entry not acknowledged, the part before it names the target. A split segment is plain BookKeeper metadata
        (one more ensemble, the same bookies but one); write sets depend on entry ids only, so both parts hold what
        the whole did. Blocking, on purpose: one metadata write, which the interruption must not cut in two."""
        stop = next((e for e in wanted if e not in acked), None)
        if stop is None:  # all of it acknowledged: the fragment is done
            with contextlib.suppress(BKError, OSError):
                self._swap(ledger_id, first, last, lost, position, target)
            return
        if stop == wanted[0]:
            return  # nothing acknowledged: nothing to keep
        while True:
            try:
                md, version = self.core.ledgers.read(ledger_id)
            except (BKError, OSError):
                return
            index = segment_at(md, first)
            segment = md.segments[index] if index is not None else None
            if index is None or segment is None or segment.bookies[position] != lost or target in segment.bookies:
                return  # changed meanwhile (another recovery, the auditor, a move): nothing of ours to keep
            if not first < stop <= md.segment_end(index, md.last_entry_id):
                return
            bookies = list(segment.bookies)
            bookies[position] = target
            segments = list(md.segments)
            segments[index : index + 1] = [
                Segment(segment.first_entry_id, tuple(bookies)),
                Segment(stop, segment.bookies),
            ]
            try:
                self.core.ledgers.write(ledger_id, md.with_changes(segments=tuple(segments)), version)
            except MetadataVersionConflict:
                continue
            except (BKError, OSError):
                return
            log.info("ledger %d: entries before %d copied to %s, in place of %s", ledger_id, stop, target, lost)
            report.kept_until[ledger_id] = stop
            return

    def _swap(self, ledger_id: int, first: int, last: int, lost: str, position: int, target: str) -> LedgerMetadata:
        """CAS the segment that starts at entry ``first``: the target, which holds its entries up to ``last``, takes
        the lost bookie's place (retried over concurrent changes). The segment is found by its first entry, never by
        its index: a concurrent split (an interrupted recovery's) shifts the segments after it."""
        while True:
            md, version = self.core.ledgers.read(ledger_id)
            index = segment_at(md, first)
            if index is None or md.segments[index].bookies[position] != lost:
                return md  # someone (another recover, the auditor) already replaced it
            segment = md.segments[index]
            if target in segment.bookies:
                raise BKError(f"ledger {ledger_id}: {target} joined segment {first} meanwhile; it is not swapped in")
            if md.segment_end(index, md.last_entry_id) > last:
                raise BKError(f"ledger {ledger_id}: segment {first} grew past entry {last} meanwhile; not swapped")
            bookies = list(segment.bookies)
            bookies[position] = target
            segments = list(md.segments)
            segments[index] = Segment(first, tuple(bookies))
            changed = md.with_changes(segments=tuple(segments))
            try:
                self.core.ledgers.write(ledger_id, changed, version)
                return changed
            except MetadataVersionConflict:
                continue
            except NoSuchLedger:
                raise BKError(f"ledger {ledger_id} was deleted during recovery") from None


def replica_entries(md: LedgerMetadata, index: int, position: int) -> int:
    """How many entries the replica at ``position`` of segment ``index`` holds (rounded when E > WQ: its share of
    the write sets); 0 when unknown (an open ledger's last entry is not known yet)."""
    if not md.is_closed or md.last_entry_id < 0:
        return 0
    first, end = md.segments[index].first_entry_id, md.segment_end(index, md.last_entry_id)
    if end < first:
        return 0
    held = end - first + 1
    if md.write_quorum_size < md.ensemble_size:
        held = round(held * md.write_quorum_size / md.ensemble_size)
    return held


def replica_bytes(md: LedgerMetadata, index: int, position: int) -> int:
    """The bytes the replica at ``position`` of segment ``index`` holds, estimated from the ledger's length (its
    entries' average size): 0 when unknown (an open ledger has no length yet)."""
    held = replica_entries(md, index, position)
    if not held or md.length <= 0:
        return 0
    return round(held * md.length / (md.last_entry_id + 1))


def segment_at(md: LedgerMetadata, first_entry_id: int) -> int | None:
    """The index of the segment that starts at ``first_entry_id`` (None: there is none now)."""
    return next((i for i, s in enumerate(md.segments) if s.first_entry_id == first_entry_id), None)


def delete_cookies(store: MetadataStore, bookie_ids: Iterable[str]) -> list[str]:
    """Remove the cookies of retired bookies (blocking); return those that existed."""
    cookies = CookieStore(store)
    present = set(cookies.list())
    deleted = [b for b in sorted(bookie_ids) if b in present]
    for bookie_id in deleted:
        cookies.delete(bookie_id)
    return deleted


def require_stopped(store: MetadataStore, bookie_id: str) -> None:
    """A bookie is decommissioned once it is down: refuse while it is registered (blocking)."""
    registered = {b.bookie_id for b in BookieRegistry(store).list(writable=True, readonly=True)}
    if bookie_id in registered:
        raise InvalidArgument(f"bookie {bookie_id} is still registered: stop it before decommissioning it")


async def decommission(
    core: ClientCore,
    bookie_id: str,
    timeout: float | None = None,
    progress: Callable[[str, int], None] = lambda kind, n: None,
) -> list[RecoverReport]:
    """Re-replicate everything a stopped bookie held, pass after pass (a writer may still add segments naming it),
    until no ledger names it; return each pass's report. Stops after a pass with failures (its report last); raises
    :class:`OperationTimeout` when not done within ``timeout`` seconds. The cookie is the caller's to remove."""
    await asyncio.to_thread(require_stopped, core.store, bookie_id)
    deadline = None if timeout is None else time.monotonic() + timeout
    reports: list[RecoverReport] = []
    while True:
        recovery = BookieRecovery(core, {bookie_id}, progress=progress)
        ledgers = await asyncio.to_thread(recovery.affected)
        if not ledgers:
            return reports
        reports.append(await recovery.run(ledgers))
        if reports[-1].failed:
            return reports
        if deadline is not None and time.monotonic() > deadline:
            raise OperationTimeout(f"decommission of {bookie_id} not done within {timeout:g} s")

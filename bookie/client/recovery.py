"""Ledger recovery (BookKeeper: client/LedgerRecoveryOp.java): what makes a ledger whose writer died safe to
read, and closes it.

1. CAS the metadata OPEN -> IN_RECOVERY.
2. Fence-read entry -1 on every bookie of the last segment; keep the highest piggy-backed LAC; done once the
   coverage rule holds.
3. LAC = max(that, first entry of the last segment - 1).
4. Read LAC+1, LAC+2, ... (fence flag, high priority) from the whole write set: present when any replica has a
   valid copy, missing when none has and WQ-AQ+1 bookies said ENOENTRY/ENOLEDGER.
5. Re-add each present entry with RECOVERY_ADD, as it was framed, to its whole write set. Bookies of the last
   segment that did not answer the fence are first replaced, in a new segment at LAC+1 (an ensemble change by CAS,
   as BookKeeper's recovering handle does), so re-adds can reach a quorum with a bookie down.
6. At the first missing entry, CAS IN_RECOVERY -> CLOSED at the LAC.
Two recoveries may race: both fence and re-add (harmless), exactly one CAS wins, the other finds the ledger closed.
"""

from __future__ import annotations

import asyncio
import logging

from bookie.client.bookie_client import ENOENTRY, ENOLEDGER, EOK, EUA, BookieClient, EntryRead, EntryToken
from bookie.client.context import ClientContext
from bookie.client.placement import replacement
from bookie.client.reader import LedgerReader, covered
from bookie.codec.entry import Entry, frame_entry
from bookie.codec.records import pack_record
from bookie.codec.write_set import write_set
from bookie.errors import BKError, LedgerClosed, MetadataVersionConflict, ServiceUnavailable, error_for_status
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState, Segment

log = logging.getLogger(__name__)


class _RecoveryTarget:
    """Collects the answers of one recovery add."""

    def __init__(self, needed: int) -> None:
        self.needed = needed
        self.acks = 0
        self.errors: list[int] = []
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def added(self, token: EntryToken, index: int, status: int, bookie: BookieClient) -> None:
        if status == EOK:
            self.acks += 1
        else:
            self.errors.append(status)
        if not self.done.done() and self.acks + len(self.errors) >= self.needed:
            self.done.set_result(None)


async def _to_in_recovery(client: ClientContext, ledger_id: int) -> tuple[LedgerMetadata, int]:
    while True:
        md, version = await asyncio.to_thread(client.ledgers.read, ledger_id)
        if md.state != LedgerState.OPEN:
            return md, version
        try:
            changed = md.with_changes(state=LedgerState.IN_RECOVERY)
            return changed, await asyncio.to_thread(client.ledgers.write, ledger_id, changed, version)
        except MetadataVersionConflict:
            continue


async def _fence(
    client: ClientContext, reader: LedgerReader, md: LedgerMetadata, master_key: bytes
) -> tuple[int, set[int]]:
    """Fence the last segment's bookies; return the highest LAC they know, once coverage holds, and the ensemble
    indexes that did not answer."""
    segment = md.segments[-1]
    answered: set[int] = set()
    lac = -1

    async def fence(index: int) -> tuple[int, EntryRead]:
        return index, await client.bookie(segment.bookies[index]).read_entry(
            reader.ledger_id, -1, client.config.read_entry_timeout, f"fence ledger {reader.ledger_id}", master_key
        )

    for result in asyncio.as_completed([fence(i) for i in range(md.ensemble_size)]):
        try:
            index, answer = await result
        except BKError as exc:
            log.warning("recovery of ledger %d: %s", reader.ledger_id, exc)
            continue
        if answer.status == EOK:
            entry = reader._parse(answer.body, None, segment.bookies[index])
            if entry is not None:
                answered.add(index)
                lac = max(lac, entry.last_add_confirmed)
        elif answer.status in (ENOENTRY, ENOLEDGER):
            answered.add(index)
        elif answer.status == EUA:
            raise error_for_status(answer.status, f"ledger {reader.ledger_id}: wrong password for fencing")
    if not covered(md.ensemble_size, md.write_quorum_size, md.ack_quorum_size, answered):
        raise ServiceUnavailable(
            f"cannot recover ledger {reader.ledger_id}: too few bookies of its last ensemble answered the fence"
        )
    return lac, set(range(md.ensemble_size)) - answered


async def _replace_silent(
    client: ClientContext, ledger_id: int, md: LedgerMetadata, version: int, first: int, silent: set[str]
) -> tuple[LedgerMetadata, int]:
    """Ensemble change during recovery: a segment at ``first`` without the bookies that did not answer."""
    while True:
        last = md.segments[-1]
        if last.first_entry_id == first and not silent & set(last.bookies):
            return md, version  # a racing recovery made the change already
        writable = await client.writable_bookies()
        ensemble = list(last.bookies)
        for index, bookie_id in enumerate(ensemble):
            if bookie_id in silent:
                ensemble[index] = replacement(writable, ensemble, index, silent | set(last.bookies))
        segments = list(md.segments)
        if last.first_entry_id == first:
            segments[-1] = Segment(first, tuple(ensemble))
        else:
            segments.append(Segment(first, tuple(ensemble)))
        changed = md.with_changes(segments=tuple(segments))
        try:
            return changed, await asyncio.to_thread(client.ledgers.write, ledger_id, changed, version)
        except MetadataVersionConflict:
            md, version = await asyncio.to_thread(client.ledgers.read, ledger_id)
            if md.state == LedgerState.CLOSED:
                raise LedgerClosed(f"ledger {ledger_id} was closed by a concurrent recovery") from None


async def _recovery_read(
    client: ClientContext, reader: LedgerReader, md: LedgerMetadata, entry_id: int, key: bytes
) -> Entry | None:
    """The entry if some replica has a valid copy; None once WQ-AQ+1 bookies say they have none and none has one.

    Every replica of the write set is asked (at once), and a copy wins over any number of "no such entry": a
    recovery's ensemble change may have put a new bookie in place of a silent one, in the very segment the writer
    wrote (in place, when the segment starts where the recovery does), and if that recovery died before re-adding
    the entries, the new bookie never saw them. Its ENOENTRY proves nothing while another replica has a copy;
    stopping at the first ENOENTRY of a W2 A2 ledger closed it below an acknowledged entry. (Apache BookKeeper
    stops at the first WQ-AQ+1 misses; a copy that arrives later is lost there too.)
    """
    segment = md.segment_of(entry_id)

    async def ask(bookie_id: str) -> tuple[str, EntryRead | None]:
        try:
            return bookie_id, await client.bookie(bookie_id).read_entry(
                reader.ledger_id,
                entry_id,
                client.config.read_entry_timeout,
                f"recovery read of ledger {reader.ledger_id}",
                key,
            )
        except BKError:
            return bookie_id, None

    indexes = write_set(entry_id, md.ensemble_size, md.write_quorum_size)
    missing = 0
    for bookie_id, answer in await asyncio.gather(*(ask(segment.bookies[i]) for i in indexes)):
        if answer is None:
            continue
        if answer.status == EOK:
            if (entry := reader._parse(answer.body, entry_id, bookie_id)) is not None:
                return entry
        elif answer.status in (ENOENTRY, ENOLEDGER):
            missing += 1
    if missing >= md.write_quorum_size - md.ack_quorum_size + 1:
        return None
    raise ServiceUnavailable(
        f"cannot recover ledger {reader.ledger_id}: entry {entry_id} is neither readable nor known missing"
    )


async def _recovery_add(
    client: ClientContext, md: LedgerMetadata, entry: Entry, body: bytes, key: bytes, ledger_id: int
) -> None:
    segment = md.segment_of(entry.entry_id)
    indexes = write_set(entry.entry_id, md.ensemble_size, md.write_quorum_size)
    target = _RecoveryTarget(len(indexes))
    record = pack_record(body)
    for index in indexes:
        client.bookie(segment.bookies[index]).add(
            ledger_id, key, True, record, target, EntryToken(entry.entry_id), index
        )
    await asyncio.wait_for(target.done, client.config.add_entry_timeout)
    if target.acks < md.ack_quorum_size:
        raise ServiceUnavailable(
            f"cannot recover ledger {ledger_id}: re-adding entry {entry.entry_id} reached {target.acks} bookies"
        )


async def recover(client: ClientContext, ledger_id: int, password: bytes, master_key: bytes) -> LedgerMetadata:
    """Fence and close the ledger; return its CLOSED metadata (at once if it is closed already)."""
    md, version = await _to_in_recovery(client, ledger_id)
    if md.state == LedgerState.CLOSED:
        return md
    reader = LedgerReader(client, ledger_id, md, password, -1)
    fenced_lac, silent_indexes = await _fence(client, reader, md, master_key)
    silent = {md.segments[-1].bookies[i] for i in silent_indexes}
    lac = max(fenced_lac, md.segments[-1].first_entry_id - 1)
    length = 0
    if lac >= 0:
        length = (await reader.read_entry(lac)).length
    entry_id = lac + 1
    write_md = md  # reads use the ensemble the entries were written to; re-adds may go to a changed one
    while (entry := await _recovery_read(client, reader, md, entry_id, master_key)) is not None:
        if silent and write_md is md:
            try:
                write_md, version = await _replace_silent(client, ledger_id, md, version, entry_id, silent)
            except LedgerClosed:
                return (await asyncio.to_thread(client.ledgers.read, ledger_id))[0]
        body = frame_entry(
            reader.digester, ledger_id, entry.entry_id, entry.last_add_confirmed, entry.length, entry.payload
        )
        await _recovery_add(client, write_md, entry, body, master_key, ledger_id)
        lac, length = entry.entry_id, entry.length
        entry_id += 1
    md = write_md
    while True:
        closed = md.with_changes(state=LedgerState.CLOSED, last_entry_id=lac, length=length)
        try:
            await asyncio.to_thread(client.ledgers.write, ledger_id, closed, version)
            log.info("ledger %d recovered: closed at entry %d, %d bytes", ledger_id, lac, length)
            return closed
        except MetadataVersionConflict:
            md, version = await asyncio.to_thread(client.ledgers.read, ledger_id)
            if md.state == LedgerState.CLOSED:
                return md  # a concurrent recovery won the race
            if md.state == LedgerState.OPEN:
                raise LedgerClosed(f"ledger {ledger_id} was reopened during recovery") from None

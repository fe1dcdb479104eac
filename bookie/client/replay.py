"""Writing a ledger again under a chosen id, entry for entry as it was first written: what a restore and a copy
between clusters are made of (BookKeeper has no such operation; its ``createLedgerAdv(ledgerId, ...)`` comes
closest, but frames entries with the new writer's LAC and length and cannot keep the ledger's ctime).

One replay, on the client's loop:

1. **claim**: the ledger's znode is created under the chosen id, OPEN, with the source's ensemble/write/ack sizes,
   digest type, ctime and custom metadata plus a marker ``(key, value)`` that says whose run made it, and a single
   segment on a fresh ensemble. The znode comes first, as with every writer: a bookie's garbage collector deletes
   the entries of a ledger the metadata does not know. An existing id raises LedgerExists.
2. **write**: each entry is framed with its *stored* LAC and length fields (so an entry written again under its
   own id and password is byte for byte the original) and added, as a normal add with the password's master key, to
   every bookie of its write set; every one of them must acknowledge it (no writer repairs a replica later). Bytes
   in flight are bounded. A bookie's error or failure fails the replay with a BKError naming the ledger, the entry
   and the bookie; there is no ensemble change (the caller abandons and starts again).
3. **verify**: every entry is read back from every replica (a striped range read per bookie), its digest and ids
   checked, and the payload checksum of every replica compared with the expected one (:func:`payload_xor`, the
   export's, over ``checksum_ledger_id``: the source's id when the id changed). Or, asked, each entry from one
   replica, and every bookie's list of the entries it holds.
4. **close**: a compare-and-set to CLOSED at the source's last entry and length, with the marker removed: the
   commit point. A ledger that still carries its marker was not committed: :meth:`LedgerReplay.resume` takes it up
   again, :meth:`LedgerReplay.abandon` deletes it.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import struct
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from bookie.client.bookie_client import (
    CONNECTION_LOST,
    EOK,
    EUA,
    BookieClient,
    RangeStopped,
    Stripe,
    refused_because,
    status_name,
)
from bookie.client.core import ClientCore
from bookie.client.placement import choose_ensemble
from bookie.client.reader import _all  # run at once; one failing cancels the others
from bookie.codec.availability import AvailabilityOfEntries
from bookie.codec.digest import Digester, DigestType, master_key
from bookie.codec.entry import HEADER, parse_entry
from bookie.codec.write_set import entries_of_bookie
from bookie.errors import (
    BKError,
    CorruptData,
    CorruptEntry,
    InvalidArgument,
    MetadataVersionConflict,
    NoSuchLedger,
    NotEnoughBookies,
    OperationTimeout,
    ServiceUnavailable,
    Unauthorized,
)
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState, Segment

IN_FLIGHT_BYTES = 8 << 20  # framed bytes sent and not yet acknowledged by every replica, over the ensemble
READ_BACK_TIMEOUT = 60.0  # seconds a range read of the read-back waits for an answer
_IDS = struct.Struct(">qq")
_HEAD = struct.Struct(">iqqqq")  # an add record's size, then the framed entry's header (bookie/codec/entry.py)
_MASK64 = (1 << 64) - 1


class ReplayEntry(NamedTuple):
    """One entry as it was written: its id, its stored LAC and ledger-length fields, and its payload. A tuple, so
    that a batch of them can be made by ``zip`` over columns."""

    entry_id: int
    lac: int
    length: int
    payload: bytes

    def __repr__(self) -> str:  # not the payload: it may be megabytes
        return f"ReplayEntry(entry_id={self.entry_id}, lac={self.lac}, length={self.length}, {len(self.payload)} bytes)"


def ledger_differs(target: LedgerMetadata, source: LedgerMetadata, password: bytes, marker_key: str) -> str:
    """What makes ``target`` another ledger than one :meth:`LedgerReplay.claim` wrote from ``source`` with
    ``password``: its ensemble/write/ack sizes, digest type (any, for a source whose format names none), password,
    ctime or custom metadata (``marker_key`` aside); "" when none does. Its state, ensemble and last entry are the
    caller's to judge."""
    if {k: v for k, v in target.custom_metadata.items() if k != marker_key} != source.custom_metadata:
        return "its custom metadata differs"
    sizes = ("ensemble_size", "write_quorum_size", "ack_quorum_size")
    if any(getattr(target, name) != getattr(source, name) for name in sizes):
        return "its ensemble, write or ack quorum size differs"
    if target.digest_type != (source.digest_type or target.digest_type) or (target.password or b"") != password:
        return "its digest type or password differs"
    if target.ctime != source.ctime:
        return "its creation time differs"
    return ""


def payload_xor(ledger_id: int, entries: Iterable[tuple[int, bytes]]) -> int:
    """The export's payload checksum (admin/export/part_files.py: LedgerStats) of ``(entry id, payload)`` pairs:
    XOR over them of the 8-byte BLAKE2b of ``ledgerId | entryId | payload``, as an unsigned 64-bit int."""
    result, pack, blake = 0, _IDS.pack, hashlib.blake2b
    for entry_id, payload in entries:
        result ^= int.from_bytes(blake(pack(ledger_id, entry_id) + payload, digest_size=8).digest(), "big")
    return result


class _Add:
    """One entry's adds, sent to each bookie of its write set: answers still expected, and its record's size."""

    __slots__ = ("entry_id", "remaining", "size")

    def __init__(self, entry_id: int, size: int, remaining: int) -> None:
        self.entry_id, self.size, self.remaining = entry_id, size, remaining


class LedgerReplay:
    """A ledger written again under a chosen id: claim (znode), write, verify, close. Runs on the client's loop.

    ``metadata`` is the znode as claimed (OPEN, marked) and, after :meth:`close`, as closed. The password is kept for
    framing and never shown (not in the repr, logs or errors)."""

    ledger_id: int
    metadata: LedgerMetadata

    def __init__(
        self,
        core: ClientCore,
        ledger_id: int,
        metadata: LedgerMetadata,
        version: int,
        password: bytes,
        marker: tuple[str, bytes],
    ) -> None:
        self.core = core
        self.ledger_id = ledger_id
        self.metadata = metadata
        self._version = version
        self._marker = marker
        self._digester = Digester(metadata.digest_type or DigestType.CRC32, password)
        self._key = master_key(password)
        self._framing = HEADER.size + self._digester.size  # a framed entry's bytes before its payload
        self._ensemble = list(metadata.segments[-1].bookies)
        self._bookies: list[BookieClient] = [core.bookie(b) for b in self._ensemble]
        self._E, self._WQ = metadata.ensemble_size, metadata.write_quorum_size
        self._next = 0  # the next entry id to write
        self._pending: dict[int, _Add] = {}  # entries not yet acknowledged by every bookie of their write set
        self._outstanding = [0] * self._E  # adds sent to each ensemble index and not answered
        self._in_flight = 0  # framed bytes sent and not acknowledged, summed over the bookies
        self._room: asyncio.Future[None] | None = None  # resolved when the bytes in flight fall (or on an error)
        self._wanted = 0  # the bytes in flight that resolve _room
        self._error: BKError | None = None

    def __repr__(self) -> str:
        return (
            f"LedgerReplay(ledger_id={self.ledger_id}, state={self.metadata.state.name}, "
            f"ensemble={self._ensemble}, written={self._next})"
        )

    # ---- claim, resume ----
    @classmethod
    async def claim(
        cls,
        core: ClientCore,
        ledger_id: int,
        source: LedgerMetadata,
        password: bytes,
        marker: tuple[str, bytes],
        ensemble: list[str] | None = None,
    ) -> LedgerReplay:
        """Create the ledger's znode under ``ledger_id``: OPEN, the source's sizes, digest type, ctime and custom
        metadata with ``marker`` added, on ``ensemble`` or on one the placement policy picks. LedgerExists when the
        id is taken; ServiceUnavailable, naming the shortage, when fewer than E bookies are writable."""
        core.ledgers.path(ledger_id)  # InvalidArgument for an id the cluster's ledger manager cannot store
        size, write_quorum, ack_quorum = source.ensemble_size, source.write_quorum_size, source.ack_quorum_size
        if not size >= write_quorum >= ack_quorum >= 1:
            raise InvalidArgument(
                f"ledger {ledger_id}: need ensemble >= write quorum >= ack quorum >= 1, got "
                f"{size}/{write_quorum}/{ack_quorum}"
            )
        if ensemble is None:
            try:
                ensemble = choose_ensemble(await core.writable_bookies(), size)
            except NotEnoughBookies as exc:
                raise ServiceUnavailable(f"ledger {ledger_id}: {exc}") from None
        elif len(ensemble) != size or len(set(ensemble)) != size:
            raise InvalidArgument(f"ledger {ledger_id}: ensemble {ensemble} is not {size} distinct bookies")
        md = LedgerMetadata(
            ensemble_size=size,
            write_quorum_size=write_quorum,
            ack_quorum_size=ack_quorum,
            segments=(Segment(0, tuple(ensemble)),),
            digest_type=DigestType(source.digest_type or DigestType.CRC32),  # format v1 names none: read as CRC32
            password=password,
            ctime=source.ctime,
            custom_metadata={**source.custom_metadata, marker[0]: marker[1]},
            c_token=int.from_bytes(os.urandom(7), "big"),
        )
        version = await asyncio.to_thread(core.ledgers.create, ledger_id, md)
        return cls(core, ledger_id, md, version, password, marker)

    @classmethod
    async def resume(cls, core: ClientCore, ledger_id: int, password: bytes, marker: tuple[str, bytes]) -> LedgerReplay:
        """Take up a ledger claimed before and still marked with ``marker`` (its writes start again from entry 0:
        a bookie stores an entry added twice as once). InvalidArgument when the ledger does not carry the marker
        (not a replay's, or one that was closed), Unauthorized when ``password`` is not the ledger's."""
        md, version = await asyncio.to_thread(core.ledgers.read, ledger_id)
        key, value = marker
        if md.custom_metadata.get(key) != value:
            raise InvalidArgument(
                f"ledger {ledger_id} does not carry the marker {key}={value.decode(errors='replace')}"
            )
        if md.state != LedgerState.OPEN:
            raise InvalidArgument(f"ledger {ledger_id} is {md.state.name}, not OPEN: it cannot be written again")
        if md.password is not None and md.password != password:
            raise Unauthorized(f"wrong password for ledger {ledger_id}")
        return cls(core, ledger_id, md, version, password, marker)

    # ---- write ----
    async def add(self, entries: Iterable[ReplayEntry]) -> None:
        """Send ``entries``, in entry order, continuing from the entries sent before (0, 1, 2...); returns when the
        last is sent and the bytes in flight are back under the bound, not when all are acknowledged."""
        pending = iter(entries)
        while self._send(pending):
            await self._wait(IN_FLIGHT_BYTES // 2)

    async def write(self, entries: Iterable[ReplayEntry]) -> None:
        """:meth:`add` ``entries``, then wait until every bookie of each entry's write set acknowledged it."""
        await self.add(entries)
        await self.drain()

    async def drain(self) -> None:
        """Wait until every entry sent is acknowledged by every bookie of its write set."""
        await self._wait(0)

    def _send(self, entries: Iterator[ReplayEntry]) -> bool:
        """Frame and send entries until ``IN_FLIGHT_BYTES`` are in flight (True: wait for room before the rest) or
        none is left (False). The adds of one call leave together: each connection frames them in one go."""
        self._raise()
        ledger_id, key, digest, size, count = self.ledger_id, self._key, self._digester.digest, self._E, self._WQ
        bookies, outstanding, pending, framing = self._bookies, self._outstanding, self._pending, self._framing
        pack, join = _HEAD.pack, b"".join
        for entry_id, lac, length, payload in entries:
            if entry_id != self._next:
                raise InvalidArgument(
                    f"ledger {ledger_id}: entry {entry_id} given where entry {self._next} comes next "
                    "(entries are written in order from 0)"
                )
            head = pack(framing + len(payload), ledger_id, entry_id, lac, length)
            record = join((head, digest(head[4:], payload), payload))
            add = pending[entry_id] = _Add(entry_id, len(record), count)
            self._next = entry_id + 1
            for w in range(count):
                index = (entry_id + w) % size
                outstanding[index] += 1
                bookies[index].add(ledger_id, key, False, record, self, add, index)
            self._in_flight += len(record) * count
            if self._in_flight > IN_FLIGHT_BYTES:
                return True
        return False

    def added(self, add: _Add, index: int, status: int, bookie: BookieClient) -> None:
        """One bookie's answer to one add (an AddTarget)."""
        self._outstanding[index] -= 1
        if status != EOK:
            if self._error is None:
                if status == CONNECTION_LOST:
                    why = "connection lost"
                elif status == EUA:  # or it still holds a deleted ledger of this id, under another password
                    why = (
                        refused_because(self.core.tls is not None)
                        + ", or a deleted ledger of this id not yet collected"
                    )
                else:
                    why = status_name(status)
                self._error = BKError(
                    f"ledger {self.ledger_id}: bookie {bookie.bookie_id} failed entry {add.entry_id}: {why}"
                )
                self._wake()
            return
        add.remaining -= 1
        if add.remaining == 0:
            del self._pending[add.entry_id]
            self._in_flight -= add.size * self._WQ
            if self._room is not None and self._in_flight <= self._wanted:
                self._wake()

    def _wake(self) -> None:
        room, self._room = self._room, None
        if room is not None and not room.done():
            room.set_result(None)

    async def _wait(self, in_flight: int) -> None:
        """Until at most ``in_flight`` bytes are in flight (0: every add acknowledged); raise the replay's error,
        or OperationTimeout naming the bookies that do not answer (none did within the add timeout)."""
        timeout = self.core.config.add_entry_timeout
        while self._error is None and self._in_flight > in_flight:
            progress = self._in_flight
            self._wanted = in_flight
            self._room = asyncio.get_running_loop().create_future()
            try:
                await asyncio.wait_for(asyncio.shield(self._room), timeout)
            except TimeoutError:
                if self._in_flight == progress and self._error is None:
                    self._error = self._timed_out(timeout)
        self._raise()

    def _timed_out(self, timeout: float) -> BKError:
        slow = [self._ensemble[i] for i, n in enumerate(self._outstanding) if n > 0]
        first = min(self._pending, default=self._next)
        return OperationTimeout(
            f"ledger {self.ledger_id}: bookie {', '.join(slow) or '?'} did not acknowledge entry {first} "
            f"within {timeout:g} s"
        )

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error

    # ---- verify ----
    async def verify(
        self, expected_xor: int | None, checksum_ledger_id: int | None = None, *, every_replica: bool = True
    ) -> None:
        """Read every entry written back from every replica: digests and ids checked, each replica complete, and
        the payload checksum of each replica's copy of the ledger equal to ``expected_xor`` (None: only to each
        other's), computed over ``checksum_ledger_id`` (the source's id; default this ledger's). CorruptData
        naming the ledger, and the bookie and entry or the checksums that differ.

        Not ``every_replica``: each entry is read from the first bookie of its write set only, and every bookie is
        asked for the list of the entries it holds (GET_LIST_OF_ENTRIES_OF_LEDGER), which must be all of its
        share: half the reads with WQ=2, the other replicas' bytes taken on their acknowledgement."""
        await self.drain()  # what was added and not yet acknowledged first
        last = self._next - 1
        checksum_id = self.ledger_id if checksum_ledger_id is None else checksum_ledger_id
        positions = self._WQ if every_replica else 1
        layers = [0] * positions  # per write-set position: the checksum of the replicas at that position
        counts = [0] * positions
        if last >= 0:
            work = [self._read_back(index, last, checksum_id, positions, layers, counts) for index in range(self._E)]
            if not every_replica:
                work += [self._listed(index, last) for index in range(self._E)]
            await _all(work)
        for w in range(positions):
            if counts[w] != last + 1:
                raise CorruptData(
                    f"ledger {self.ledger_id}: replicas at write-set position {w} returned {counts[w]} of "
                    f"{last + 1} entries",
                    ledger_id=self.ledger_id,
                )
        wanted = layers[0] if expected_xor is None else expected_xor & _MASK64
        differ = [w for w in range(positions) if layers[w] != wanted]
        if differ:
            raise CorruptData(
                f"ledger {self.ledger_id}: payload checksum {layers[differ[0]]:016x} of the entries read back "
                f"(replicas at write-set position {differ[0]}) is not the expected {wanted:016x}",
                ledger_id=self.ledger_id,
            )

    async def _listed(self, index: int, last: int) -> None:
        """The bookie at ``index`` lists every entry of its share of ``0..last``: CorruptData naming it if not."""
        bookie = self._bookies[index]
        async for ledger_id, status, data in bookie.list_entries([self.ledger_id], READ_BACK_TIMEOUT):
            if status != EOK:
                raise CorruptData(
                    f"ledger {ledger_id}: bookie {bookie.bookie_id} does not list its entries ({status_name(status)})",
                    ledger_id=ledger_id,
                )
            held = AvailabilityOfEntries.decode(data)
            missing = held.unavailable(entries_of_bookie(index, 0, last, self._E, self._WQ))
            if missing:
                raise CorruptData(
                    f"ledger {ledger_id}: bookie {bookie.bookie_id} lacks {len(missing)} of its entries, "
                    f"from entry {missing[0]}",
                    ledger_id=ledger_id,
                )

    async def _read_back(
        self, index: int, last: int, checksum_id: int, positions: int, layers: list[int], counts: list[int]
    ) -> None:
        """Stream the entries the bookie at ``index`` holds at the first ``positions`` of their write sets: check
        each one, add it to its write-set position's checksum and count."""
        bookie = self._bookies[index]
        digest, framing, ledger_id, size = self._digester.digest, self._framing, self.ledger_id, self._E
        pack, ids, blake = _IDS.pack, _IDS.unpack_from, hashlib.blake2b
        stripe = Stripe(size, positions, index)
        async for chunk in bookie.read_range(ledger_id, 0, last, READ_BACK_TIMEOUT, stripe):
            if isinstance(chunk, RangeStopped):
                raise CorruptData(
                    f"ledger {ledger_id}: bookie {bookie.bookie_id} does not return entry {chunk.entry_id} "
                    f"({status_name(chunk.status)})",
                    ledger_id=ledger_id,
                )
            for entry_id, body in chunk:
                header, payload = body[:32], body[framing:]
                whole = len(body) >= framing and ids(header) == (ledger_id, entry_id)
                if not whole or digest(header, payload) != body[32:framing]:
                    raise self._corrupt(body, entry_id, bookie.bookie_id)
                w = (index - entry_id) % size
                layers[w] ^= int.from_bytes(blake(pack(checksum_id, entry_id) + payload, digest_size=8).digest(), "big")
                counts[w] += 1

    def _corrupt(self, body: bytes, entry_id: int, where: str) -> CorruptData:
        """The error of an entry read back that does not check out, saying what is wrong with it."""
        try:
            parse_entry(self._digester, body, self.ledger_id, entry_id, where)
        except CorruptEntry as exc:
            return CorruptData(str(exc), ledger_id=self.ledger_id)
        return CorruptData(
            f"ledger {self.ledger_id} entry {entry_id} from {where} does not check", ledger_id=self.ledger_id
        )

    # ---- close, abandon ----
    async def close(self, last_entry_id: int, length: int) -> LedgerMetadata:
        """Compare-and-set the znode to CLOSED at ``last_entry_id`` and ``length``, the marker removed: the
        commit. MetadataVersionConflict, naming the ledger, when someone else changed the znode since the claim."""
        await self.drain()
        if last_entry_id != self._next - 1:  # a ledger without entries closes at -1
            written = f"entries 0..{self._next - 1} were" if self._next else "no entry was"
            raise InvalidArgument(f"ledger {self.ledger_id}: cannot close at entry {last_entry_id}: {written} written")
        custom = {k: v for k, v in self.metadata.custom_metadata.items() if k != self._marker[0]}
        closed = self.metadata.with_changes(
            state=LedgerState.CLOSED, last_entry_id=last_entry_id, length=length, custom_metadata=custom
        )
        try:
            self._version = await asyncio.to_thread(self.core.ledgers.write, self.ledger_id, closed, self._version)
        except MetadataVersionConflict:
            raise MetadataVersionConflict(
                f"ledger {self.ledger_id}: its metadata changed since it was claimed (someone else wrote it): "
                "not closed"
            ) from None
        self.metadata = closed
        return closed

    async def abandon(self) -> None:
        """Delete the znode (the entries written become garbage for the bookies' collectors); a ledger already
        gone is no error. MetadataVersionConflict when someone else changed it since: it is not deleted."""
        try:
            await asyncio.to_thread(self.core.ledgers.delete, self.ledger_id, self._version)
        except NoSuchLedger:
            pass
        except MetadataVersionConflict:
            raise MetadataVersionConflict(
                f"ledger {self.ledger_id}: its metadata changed since it was claimed (someone else wrote it): "
                "not deleted"
            ) from None

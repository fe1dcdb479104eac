"""Ledger storage: the one interface the bookie serves from (BookKeeper: bookie/LedgerStorage.java), with the rules
every engine shares written here once, as BookKeeper writes them once in bookie/HandleFactoryImpl.java and
bookie/LedgerDescriptorImpl.java:

- an add goes to its ledger, created with the writer's master key on its first add (or fence, or explicit LAC);
  a ledger whose key is set refuses another key (EUA), and a fenced ledger refuses all but recovery adds;
- fencing and explicit LACs change the ledger's header (bookie/storage/ledger_header.py) and are journaled;
- the LAC is the highest piggy-backed LAC of the entries added (or explicit LAC written), and after a restart the
  LAC of the last entry stored;
- replay re-applies master keys, fences, explicit LACs and entries.

An engine (bookie/storage/interleaved.py, bookie/storage/db/storage.py) only keeps ledger headers and stores and
finds entries: the abstract methods of :class:`LedgerStorage`. The journal, checkpoints and the replay of the
journal files are bookie/storage/journalled.py's.

The interface is an abstract base class rather than a Protocol: the shared rules are its methods, run over the
engine's abstract ones, and an engine that misses one cannot be made.
"""

from __future__ import annotations

import logging
import time
from abc import abstractmethod
from collections import defaultdict
from collections.abc import Callable, Container
from dataclasses import dataclass, replace

from bookie.codec.records import PREFIX, Walked, entry_lac, walk_add_batch_records
from bookie.errors import BadRequest, BookieIOError, CorruptData, LedgerFenced, NoSuchEntry, NoSuchLedger, Unauthorized
from bookie.storage import journal as jf
from bookie.storage.config import StorageConfig
from bookie.storage.gc import Compactable
from bookie.storage.group_commit import Callback
from bookie.storage.journalled import JournalledStorage, records_of
from bookie.storage.ledger_header import LedgerHeader
from bookie.storage.stats import StorageStats

log = logging.getLogger(__name__)

Refused = tuple[int, int, Exception]  # (ledgerId, entryId, why the add was refused)


@dataclass(frozen=True)
class AddKey:
    """What a batch's adds of one ledger carry besides their entries."""

    master_key: bytes
    recovery: bool = False
    deferred_sync: bool = False


@dataclass
class AddBatch:
    """The adds of a batch to store: their records (``int32 size | framed entry`` each, all of them stored),
    where each is, and per ledger the bytes to store and the highest piggy-backed LAC."""

    records: bytes
    entries: list[Walked]
    sizes: dict[int, int]
    lacs: dict[int, int]


def walk_add_batch(
    records: bytes, known: Container[int], refused: dict[int, Exception], limit: int
) -> tuple[AddBatch, list[Refused]]:
    """The records of a batch to store (bookie/codec/records.py; those of ``known`` ledgers, not ``refused``, at
    most ``limit`` bytes each), and ``(ledgerId, entryId, error)`` of those refused; :class:`BadRequest` when the
    batch does not parse."""
    entries: list[Walked] = []
    failures: list[Refused] = []
    sizes: defaultdict[int, int] = defaultdict(int)
    lacs: dict[int, int] = {}
    for walked in walk_add_batch_records(records):
        _, size, ledger_id, entry_id, lac = walked
        if ledger_id in refused:
            failures.append((ledger_id, entry_id, refused[ledger_id]))
        elif ledger_id not in known:
            failures.append((ledger_id, entry_id, BadRequest(f"no master key for ledger {ledger_id}")))
        elif size > limit or entry_id < 0:
            failures.append((ledger_id, entry_id, BadRequest(f"entry of {size} bytes over the {limit}-byte limit")))
        else:
            entries.append(walked)
            sizes[ledger_id] += PREFIX + size
            if lac > lacs.get(ledger_id, -1):
                lacs[ledger_id] = lac
    if failures:  # the records to store, and to journal, without the refused ones
        records = records_of(records, entries)
        return walk_add_batch(records, known, {}, limit)[0], failures
    return AddBatch(records, entries, sizes, lacs), failures


def deferred(keys: dict[int, AddKey]) -> bool:
    """A batch of DEFERRED_SYNC adds only: acknowledged once written, not synced."""
    return all(k.deferred_sync for k in keys.values())


class LedgerStorage(JournalledStorage):
    """A bookie's ledger storage: adds, fencing, master keys, LACs, reads, the list of a ledger's entries.

    Args:
    config: where the files are, and the engine's settings.
    stats: where the engine records its metrics (the bookie's BookieStats).
    """

    def __init__(self, config: StorageConfig, stats: StorageStats | None = None):
        super().__init__(config, stats)
        # the LAC of each ledger added to, fenced or read since the start; the others' is derived on demand
        self._lacs: dict[int, int] = {}
        self.on_lac_advanced: Callable[[int], None] | None = None  # told the ledger whose LAC an add raised

    # ---- what an engine does ----
    @abstractmethod
    def _header(self, ledger_id: int) -> LedgerHeader | None:
        """The ledger's header; None when the bookie has no such ledger."""

    @abstractmethod
    def ledger_exists(self, ledger_id: int) -> bool:
        """Whether the bookie has the ledger (what :meth:`_header` says, without making the header)."""

    @abstractmethod
    def _set_header(self, ledger_id: int, header: LedgerHeader) -> None:
        """Keep the ledger's new header (creating the ledger when new), durable at the next checkpoint;
        :class:`BookieIOError` when there is no room for a new ledger."""

    @abstractmethod
    def _store(self, batch: AddBatch) -> dict[int, Exception]:
        """Store the batch's entries (the ledgers' headers are set); the ledgers whose entries were not stored,
        and why (none of a ledger's entries then are)."""

    @abstractmethod
    def _replay_entry(self, ledger_id: int, entry_id: int, entry: bytes) -> None:
        """Store an entry of the journal (its ledger's header is set)."""

    @abstractmethod
    def read_entry(self, ledger_id: int, entry_id: int) -> bytes:
        """The framed entry; ``entry_id`` -1 = the highest entry stored. :class:`NoSuchLedger`,
        :class:`NoSuchEntry` when not on this bookie."""

    @abstractmethod
    def last_entry_id(self, ledger_id: int) -> int:
        """The highest entry id stored; -1 when none."""

    @abstractmethod
    def entry_ids(self, ledger_id: int) -> list[int]:
        """The entries the index holds for the ledger (the entry logs are not read)."""

    @abstractmethod
    def ledger_ids(self) -> list[int]:
        """Every ledger on this bookie."""

    @abstractmethod
    def gc_units(self) -> list[tuple[Compactable, str]]:
        """What garbage collection runs over, one collector each, with the directory it is named after ("": the
        whole storage)."""

    @abstractmethod
    def _delete_ledger(self, ledger_id: int) -> None:
        """Forget the ledger's header and index (garbage collection reclaims its entry-log space)."""

    # ---- ledgers ----
    def ledger(self, ledger_id: int) -> LedgerHeader:
        """The ledger's header; :class:`NoSuchLedger` when the bookie has no such ledger."""
        header = self._header(ledger_id)
        if header is None:
            raise NoSuchLedger(f"ledger {ledger_id} is not on this bookie", ledger_id=ledger_id)
        return header

    def master_key(self, ledger_id: int) -> bytes | None:
        """The ledger's master key; None when the bookie has no such ledger, or no key for it yet."""
        header = self._header(ledger_id)
        return header.master_key if header is not None and header.has_master_key else None

    def is_fenced(self, ledger_id: int) -> bool:
        return self.ledger(ledger_id).fenced

    def explicit_lac(self, ledger_id: int) -> bytes | None:
        return self.ledger(ledger_id).explicit_lac

    def lac(self, ledger_id: int) -> int:
        if not self.ledger_exists(ledger_id):
            raise NoSuchLedger(f"ledger {ledger_id} is not on this bookie", ledger_id=ledger_id)
        lac = self._lacs.get(ledger_id)
        if lac is None:
            lac = self._lacs[ledger_id] = self._lac_on_disk(ledger_id)
        return lac

    def delete_ledger(self, ledger_id: int) -> None:
        """Forget the ledger (garbage collection reclaims its entry-log space)."""
        self._delete_ledger(ledger_id)
        self._lacs.pop(ledger_id, None)

    # ---- adds ----
    def _ledger_for_add(self, ledger_id: int, key: AddKey, journal: list[bytes]) -> LedgerHeader:
        """The header of the ledger an add (fence, explicit LAC) of ``key`` goes to, its master key set and
        journaled (into ``journal``) when new; :class:`Unauthorized` for another key, :class:`LedgerFenced` when
        fenced and not a recovery add."""
        header = self._header(ledger_id)
        if header is None or (header.master_key != key.master_key and not header.has_master_key):
            header = replace(header or LedgerHeader(), master_key=key.master_key)
            self._set_header(ledger_id, header)
            journal.append(jf.master_key_record(ledger_id, key.master_key))
        elif header.master_key != key.master_key:
            raise Unauthorized(f"ledger {ledger_id}: wrong master key")
        if header.fenced and not key.recovery:
            raise LedgerFenced(f"ledger {ledger_id} is fenced")
        return header

    def add_batch(self, keys: dict[int, AddKey], records: bytes, callback: Callback) -> tuple[int, list[Refused]]:
        """Store a batch of add records (``int32 size | framed entry`` each) and journal it; ``callback`` runs once
        it is durable. Returns how many were stored, and ``(ledgerId, entryId, error)`` for each add refused."""
        started = time.perf_counter()
        journal: list[bytes] = []
        known: set[int] = set()
        refused: dict[int, Exception] = {}
        for ledger_id, key in keys.items():
            try:
                self._ledger_for_add(ledger_id, key, journal)
                known.add(ledger_id)
            except (Unauthorized, LedgerFenced, BookieIOError) as exc:  # BookieIOError: no room for a new ledger
                refused[ledger_id] = exc
        batch, failures = walk_add_batch(records, known, refused, self.config.max_entry_size)
        entries, whole = batch.entries, True
        for ledger_id in batch.lacs:  # the LAC before these adds, so that raising it tells who waits
            if ledger_id not in self._lacs:
                self._lacs[ledger_id] = self._lac_on_disk(ledger_id)
        rejected = self._store(batch) if entries else {}
        if rejected:
            failures += [(lid, eid, rejected[lid]) for _, _, lid, eid, _ in entries if lid in rejected]
            entries, whole = [e for e in entries if e[2] not in rejected], False
        for ledger_id, lac in batch.lacs.items():
            if ledger_id not in rejected:
                self._raise_lac(ledger_id, lac)
        self._journal_batch(journal, batch.records, entries, whole, callback, not deferred(keys))
        if self.stats is not None:
            recovery = sum(keys[e[2]].recovery for e in entries) if any(k.recovery for k in keys.values()) else 0
            size = sum(n for lid, n in batch.sizes.items() if lid not in rejected) - PREFIX * len(entries)
            self.stats.adds_stored(len(entries), len(failures), recovery, size, time.perf_counter() - started)
        return len(entries), failures

    def _raise_lac(self, ledger_id: int, lac: int) -> None:
        current = self._lacs.get(ledger_id)
        if current is None:
            current = self._lacs[ledger_id] = self._lac_on_disk(ledger_id)
        if lac > current:
            self._lacs[ledger_id] = lac
            if self.on_lac_advanced is not None:
                self.on_lac_advanced(ledger_id)

    def _lac_on_disk(self, ledger_id: int) -> int:
        """After a restart: the piggy-backed LAC of the last entry stored."""
        try:
            entry = self.read_entry(ledger_id, -1)
        except (NoSuchEntry, NoSuchLedger):
            return -1
        except CorruptData as exc:  # e.g. an entry never acknowledged whose data a power loss took
            log.error("ledger %d: cannot read its last entry for the LAC: %s", ledger_id, exc)
            return -1
        return entry_lac(entry)

    # ---- fencing and explicit LAC ----
    def fence(self, ledger_id: int, master_key: bytes, callback: Callback) -> None:
        """Fence the ledger (creating it locally if unknown); ``callback`` runs once the fence record is durable."""
        journal: list[bytes] = []
        header = self._ledger_for_add(ledger_id, AddKey(master_key, recovery=True), journal)
        self._set_header(ledger_id, replace(header, fenced=True))
        self._journal_ledger_record(ledger_id, journal, jf.fence_record(ledger_id), callback)

    def write_explicit_lac(
        self, ledger_id: int, master_key: bytes, lac: int, buffer: bytes, callback: Callback
    ) -> None:
        """Keep the writer's explicit LAC ``buffer`` (its LAC ``lac``); ``callback`` once journaled."""
        journal: list[bytes] = []
        header = self._ledger_for_add(ledger_id, AddKey(master_key, recovery=True), journal)
        self._set_header(ledger_id, replace(header, explicit_lac=buffer))
        self._raise_lac(ledger_id, lac)
        self._journal_ledger_record(ledger_id, journal, jf.explicit_lac_record(ledger_id, buffer), callback)

    # ---- replay ----
    def _apply(self, record: jf.Record, lacs: dict[int, int]) -> None:
        ledger_id, kind = record.ledger_id, record.kind
        if kind == "entry":
            if not self.ledger_exists(ledger_id):  # a ledger first seen by an entry record
                self._set_header(ledger_id, LedgerHeader())
            self._replay_entry(ledger_id, record.entry_id, record.data)
            lacs[ledger_id] = max(lacs.get(ledger_id, -1), entry_lac(record.data))
            return
        header = self._header(ledger_id) or LedgerHeader()  # a ledger first seen by a fence or explicit LAC
        if kind == "master_key":
            if not header.has_master_key:
                self._set_header(ledger_id, replace(header, master_key=record.data))
        elif kind == "fence":
            self._set_header(ledger_id, replace(header, fenced=True))
        elif kind == "explicit_lac":
            self._set_header(ledger_id, replace(header, explicit_lac=record.data))

    def _replayed(self, lacs: dict[int, int]) -> None:
        # Only now may the disk be read: until replay repointed them, index entries written before the crash can
        # point at entry-log bytes that were still in the lost write buffer.
        for ledger_id, lac in lacs.items():
            self._lacs[ledger_id] = max(lac, self._lac_on_disk(ledger_id))

"""Offline operations on a stopped bookie's DbLedgerStorage files, as BookKeeper 4.17.4's shell does them
(``bookkeeper-server/src/main/java/org/apache/bookkeeper/bookie/storage/ldb/{LedgersIndexCheckOp,
LocationsIndexRebuildOp,LedgersIndexRebuildOp}.java``, ``tools/cli/commands/bookie/ConvertTo{DB,Interleaved}
StorageCommand.java``). Checks and rebuilds take one ledger directory and its index directory at a time (the caller
goes through a bookie's directories in order); conversions take them all, since a ledger's index may have to change
directory (DbLedgerStorage keeps ledger ``L`` in directory ``L mod N``). Nothing here knows whether the bookie
runs: the caller locks its directories first.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bookie._proto.db_ledger_storage_pb2 import LedgerData
from bookie.codec.entry import entry_ids
from bookie.codec.records import PREFIX, SIZE
from bookie.errors import CorruptData
from bookie.files import fsync_dir, write_private
from bookie.progress import NO_PROGRESS, Progress
from bookie.storage import journal as jf
from bookie.storage.db.indexes import LOCATION_KEY, LONG, EntryLocationIndex, LedgerMetadataIndex
from bookie.storage.db.kv import LEDGERS, LOCATIONS, KeyValueStorage
from bookie.storage.entry_log import (
    EntryLogger,
    iter_records,
    last_log_id,
    list_log_ids,
    location,
    log_path,
    record_head,
    split_location,
)
from bookie.storage.index import ENTRIES_PER_PAGE, LOCATION, IndexFile, IndexHeader
from bookie.storage.ledger_cache import LedgerCache

BATCH = 10_000  # records per RocksDB batch (BookKeeper's BATCH_COMMIT_SIZE)


def _sizes(paths: list[Path]) -> int:
    return sum(path.stat().st_size for path in paths)


def _scanned(path: Path, progress: Progress) -> Iterator[tuple[int, int, int, memoryview]]:
    """:func:`iter_records` of one entry log, advancing ``progress`` by its bytes every ``BATCH`` records and by
    one log at its end (a log of a gigabyte is seconds of scanning)."""
    reported = 0
    for count, record in enumerate(iter_records(path), 1):
        if count % BATCH == 0:
            progress.advance(0, record[0] - reported)
            reported = record[0]
        yield record
    progress.advance(1, path.stat().st_size - reported)


def _timestamp() -> str:
    """BookKeeper's suffix of a moved-away index: ``yyyy-MM-dd'T'HH:mm:ss.SSSZ``."""
    now = time.time()
    return (
        time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(now))
        + f".{int(now * 1000) % 1000:03d}"
        + time.strftime("%z", time.localtime(now))
    )


def locations(index_dir: Path, ledger_id: int | None = None) -> Iterator[tuple[int, int, int, int]]:
    """``(ledgerId, entryId, entryLogId, position)`` of the locations index (read-only), in key order."""
    index = EntryLocationIndex(index_dir, read_only=True)
    try:
        records = ((ledger_id, e, loc) for e, loc in index.entries(ledger_id)) if ledger_id is not None else index.all()
        for lid, eid, loc in records:
            yield (lid, eid, *split_location(loc))
    finally:
        index.close()


def ledgers(index_dir: Path) -> dict[int, LedgerData]:
    """The ledgers index (read-only)."""
    index = LedgerMetadataIndex(index_dir, read_only=True)
    index.close()
    return index.ledgers


@dataclass
class IndexCheck:
    """What :func:`check_index` found in one directory."""

    ledgers: int = 0
    locations: int = 0
    entries_verified: int = 0
    problems: list[str] = field(default_factory=list)


def check_index(
    ledger_dir: Path, index_dir: Path, verify_entries: bool = False, progress: Progress = NO_PROGRESS
) -> IndexCheck:
    """BookKeeper's check-db-ledgers-index (every record of the ledgers index parses), and more: every location
    belongs to a ledger of the ledgers index and points into an entry log that exists; with ``verify_entries``,
    at an entry with the ledger and entry ids of its key. ``progress``: the ledgers index is read (no total: RocksDB
    only estimates it), then the locations are checked ledger by ledger (of those the ledgers index has)."""
    result = IndexCheck()
    db = KeyValueStorage(index_dir, LEDGERS, read_only=True)
    known: set[int] = set()
    progress.phase("reading the ledgers index", None, "ledgers")
    try:
        for key, value in db.items():
            (ledger_id,) = LONG.unpack_from(key) if len(key) >= 8 else (None,)
            if ledger_id is None:
                result.problems.append(f"{db.path}: key {key.hex()} is not a ledger id")
                continue
            if ledger_id < 0:
                continue  # the storage state flags
            try:
                LedgerData.FromString(value)
            except Exception as exc:  # noqa: BLE001 (protobuf's DecodeError, or a missing required field)
                result.problems.append(f"{db.path}: ledger {ledger_id}: unreadable LedgerData ({exc})")
                continue
            known.add(ledger_id)
            progress.advance()
    finally:
        db.close()
    result.ledgers = len(known)
    progress.phase("checking locations", len(known), "ledgers")
    current = None
    logs = set(list_log_ids(ledger_dir))
    orphans: dict[int, int] = {}
    missing: dict[int, int] = {}
    fds: dict[int, int] = {}
    try:
        for ledger_id, entry_id, log_id, pos in locations(index_dir):
            result.locations += 1
            if ledger_id != current:  # locations come in key order: a ledger's together
                current = ledger_id
                if ledger_id in known:
                    progress.advance()
            if ledger_id not in known:
                orphans[ledger_id] = orphans.get(ledger_id, 0) + 1
            if log_id not in logs:
                missing[log_id] = missing.get(log_id, 0) + 1
            elif verify_entries:
                if log_id not in fds:
                    fds[log_id] = os.open(log_path(ledger_dir, log_id), os.O_RDONLY)
                head = record_head(fds[log_id], pos)
                found = head[1:] if head else None
                if found != (ledger_id, entry_id):
                    result.problems.append(
                        f"ledger {ledger_id} entry {entry_id}: {log_path(ledger_dir, log_id)} offset {pos - 4} holds "
                        + (f"ledger {found[0]} entry {found[1]}" if found else "no entry")
                    )
                result.entries_verified += 1
    finally:
        for fd in fds.values():
            os.close(fd)
    result.problems += [
        f"{count} locations of ledger {lid}, which the ledgers index does not have" for lid, count in orphans.items()
    ]
    result.problems += [
        f"{count} locations in entry log {log_path(ledger_dir, log_id)}, which is missing"
        for log_id, count in missing.items()
    ]
    return result


@dataclass
class Rebuilt:
    """What a rebuild or a conversion wrote (or, dry, would write)."""

    ledgers: int = 0
    entries: int = 0
    sources: int = 0  # entry logs (and journals) scanned, or index files converted
    copied: int = 0  # entries copied into this ledger directory's entry logs (convert_to_db)
    backup: Path | None = None  # where the index it replaced went


def rebuild_locations(
    ledger_dir: Path, index_dir: Path, dry_run: bool = False, progress: Progress = NO_PROGRESS
) -> Rebuilt:
    """BookKeeper's rebuild-db-ledger-locations-index: the locations of the ledgers of the ledgers index, from a
    scan of every entry log (a later copy of an entry, from compaction, wins); the old index is kept as
    ``locations.BACKUP-<time>``. ``progress``: entry logs and their bytes scanned."""
    active = set(ledgers(index_dir))
    result = Rebuilt(ledgers=len(active))
    current = Path(index_dir) / "current"
    index: KeyValueStorage | None = None
    if not dry_run:
        if (current / LOCATIONS).exists():
            result.backup = current / f"{LOCATIONS}.BACKUP-{_timestamp()}"
            os.rename(current / LOCATIONS, result.backup)
        index = KeyValueStorage(index_dir, LOCATIONS)
    try:
        batch: list[tuple[bytes, bytes]] = []
        logs = [(log_id, log_path(ledger_dir, log_id)) for log_id in list_log_ids(ledger_dir)]
        progress.phase("scanning entry logs", len(logs), "entry logs", _sizes([path for _, path in logs]))
        for log_id, path in logs:
            result.sources += 1
            for pos, ledger_id, entry_id, _ in _scanned(path, progress):
                if ledger_id in active:
                    result.entries += 1
                    batch.append((LOCATION_KEY.pack(ledger_id, entry_id), LONG.pack((log_id << 32) | pos)))
                    if len(batch) >= BATCH and index is not None:
                        index.write(batch)
                        batch = []
        if index is not None:
            index.write(batch)
    finally:
        if index is not None:
            index.close()
    return result


def rebuild_ledgers(
    journal_dirs: list[Path],
    ledger_dir: Path,
    index_dir: Path,
    dry_run: bool = False,
    rank: int = 0,
    dirs: int = 1,
    progress: Progress = NO_PROGRESS,
) -> Rebuilt:
    """BookKeeper's rebuild-db-ledgers-index: every ledger of the journals and entry logs, fenced, with no master
    key (the next writer's key is taken, as for a ledger first seen by a fence); the old index is kept as
    ``ledgers.PREV-<time>``. Keys are 8 bytes, as the bookie writes them (BookKeeper's rebuild writes 16).

    The directory is the ``rank``-th of ``dirs``: only ledgers with ``ledgerId mod dirs == rank`` belong in it (those
    DbLedgerStorage looks for there). BookKeeper's rebuild puts every ledger of the journals into every directory:
    the others' would then be listed, and kept from garbage collection, by directories that never read them.
    ``progress``: journals and entry logs, and their bytes, scanned."""
    found: set[int] = set()
    result = Rebuilt()
    journals = [jf.journal_path(d, journal_id) for d in journal_dirs for journal_id in jf.list_journal_ids(d)]
    logs = [log_path(ledger_dir, log_id) for log_id in list_log_ids(ledger_dir)]
    progress.phase("scanning journals and entry logs", len(journals) + len(logs), "files", _sizes(journals + logs))
    for path in journals:
        result.sources += 1
        found.update(r.ledger_id for r in jf.JournalScan(path, skip_corruption=True))
        progress.advance(1, path.stat().st_size)
    for path in logs:
        result.sources += 1
        found.update(ledger_id for _, ledger_id, _, _ in _scanned(path, progress))
    found = {ledger_id for ledger_id in found if ledger_id % dirs == rank}
    result.ledgers = len(found)
    if dry_run:
        return result
    stamp = _timestamp()
    current = Path(index_dir) / "current"
    temp = f"{LEDGERS}.TEMP-{stamp}"
    index = KeyValueStorage(index_dir, temp)
    try:
        value = LedgerData(exists=True, fenced=True, masterKey=b"").SerializeToString()
        index.write((LONG.pack(ledger_id), value) for ledger_id in sorted(found))
    finally:
        index.close()
    result.backup = current / f"{LEDGERS}.PREV-{stamp}"
    if (current / LEDGERS).exists():
        os.rename(current / LEDGERS, result.backup)
    os.rename(current / temp, current / LEDGERS)
    fsync_dir(current)  # done when it returns: a power cut must not bring the old index back
    return result


def convert_to_db(
    pairs: list[tuple[Path, Path]], dry_run: bool = False, progress: Progress = NO_PROGRESS
) -> list[Rebuilt]:
    """BookKeeper's convert-to-db-storage: each ledger's index file (master key, fence, explicit LAC, locations)
    into the two databases of the directory pair ``ledgerId mod N`` of ``pairs`` (where DbLedgerStorage looks for
    it: storage.py's ``storage_of``, BookKeeper's ``getLedgerStorage``), whichever index directory held its file;
    then the index files are removed. One :class:`Rebuilt` per pair.

    An interleaved bookie spreads its entry logs over all its ledger directories, but each directory of a
    DbLedgerStorage reads only its own logs (their ids are unique per directory only): an entry in a log of another
    directory is copied into a new entry log of the ledger's (``copied``). The logs it came from keep it until
    garbage collection, which finds its ledger in no ledgers index of theirs. (BookKeeper's command routes the
    index the same way but copies nothing: with several directories its locations can point into a log the
    ledger's directory does not have.) ``progress``: ledgers converted."""
    results = [Rebuilt() for _ in pairs]
    log_dirs = {log_id: ledger_dir for ledger_dir, _ in reversed(pairs) for log_id in list_log_ids(ledger_dir)}
    files: dict[int, IndexFile] = {}
    for _, index_dir in pairs:
        for ledger_id in LedgerCache(index_dir).ledger_ids():
            files.setdefault(ledger_id, IndexFile(index_dir, ledger_id))
    copier: dict[int, _Copier] = {}
    db: dict[int, tuple[LedgerMetadataIndex, EntryLocationIndex]] = {}  # by rank, opened when first written
    progress.phase("converting index files", len(files), "ledgers")
    try:
        for ledger_id, file in sorted(files.items()):
            progress.advance()
            rank = ledger_id % len(pairs)
            result, (ledger_dir, index_dir) = results[rank], pairs[rank]
            header = file.read_header()
            entries = [
                (ledger_id, page_no * ENTRIES_PER_PAGE + slot, loc)
                for page_no in range(file.page_count())
                for slot, loc in enumerate(_page_locations(file.read_page(page_no)))
                if loc
            ]
            file.close()
            foreign = [e for e in entries if log_dirs.get(split_location(e[2])[0], ledger_dir) != ledger_dir]
            result.ledgers += 1
            result.sources += 1
            result.entries += len(entries)
            result.copied += len(foreign)
            if dry_run:
                continue
            if foreign:
                if rank not in copier:
                    copier[rank] = _Copier(ledger_dir)
                moved = dict(copier[rank].copy(foreign, log_dirs))
                copier[rank].logger.flush()  # the copies are on disk before any location points at them
                entries = [(lid, eid, moved.get(eid, loc)) for lid, eid, loc in entries]
            if rank not in db:
                db[rank] = (LedgerMetadataIndex(index_dir), EntryLocationIndex(index_dir))
            ledgers_db, locations_db = db[rank]
            data = LedgerData(exists=True, fenced=header.fenced, masterKey=header.master_key)
            if header.explicit_lac is not None:
                data.explicitLac = header.explicit_lac
            ledgers_db.set(ledger_id, data)
            locations_db.write(entries)
        for ledgers_db, _ in db.values():
            ledgers_db.flush()
    finally:
        for each in copier.values():
            each.close()
        for ledgers_db, locations_db in db.values():
            ledgers_db.close()
            locations_db.close()
    if not dry_run:
        for file in files.values():  # only once the databases hold everything (synced)
            file.delete()
    return results


class _Copier:
    """Appends entries of logs in other ledger directories to the entry logs of one (convert_to_db)."""

    def __init__(self, ledger_dir: Path):
        self.logger = EntryLogger(ledger_dir)
        self.fds: dict[Path, int] = {}

    def copy(self, entries: list[tuple[int, int, int]], log_dirs: dict[int, Path]) -> Iterator[tuple[int, int]]:
        """``(entryId, new location)`` of each ``(ledgerId, entryId, location)`` copied."""
        for ledger_id, entry_id, loc in entries:
            log_id, pos = split_location(loc)
            path = log_path(log_dirs[log_id], log_id)
            if path not in self.fds:
                self.fds[path] = os.open(path, os.O_RDONLY)
            (size,) = SIZE.unpack(os.pread(self.fds[path], PREFIX, pos - PREFIX))
            record = os.pread(self.fds[path], PREFIX + size, pos - PREFIX)
            if len(record) != PREFIX + size or entry_ids(record[PREFIX:]) != (ledger_id, entry_id):
                raise CorruptData(f"{path}: offset {pos - PREFIX} does not hold ledger {ledger_id} entry {entry_id}")
            with self.logger.lock:  # the log the record went to: append may roll over to a new one
                base = self.logger.append(record, {ledger_id: len(record)})
                moved = location(self.logger.current_id, base + PREFIX)
            yield entry_id, moved

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()
        self.logger.close()


def _page_locations(page: bytes | bytearray) -> list[int]:
    return [LOCATION.unpack_from(page, slot * 8)[0] for slot in range(ENTRIES_PER_PAGE)]


def convert_to_interleaved(
    pairs: list[tuple[Path, Path]], dry_run: bool = False, progress: Progress = NO_PROGRESS
) -> list[Rebuilt]:
    """BookKeeper's convert-to-interleaved-storage: an index file per ledger of each pair's ledgers index (master
    key, fence, explicit LAC, locations), in that pair's index directory; the databases are then kept as
    ``ledgers.backup`` and ``locations.backup``. One :class:`Rebuilt` per pair.

    Each directory of a DbLedgerStorage numbers its entry logs from its own ``lastId``, so two directories may
    both hold a ``0.log``; InterleavedLedgerStorage reads a log from whichever directory has its id, so a log whose
    id an earlier directory already has is renamed past every id in use, and the locations into it say so.
    ``progress``: a phase per pair, its ledgers converted."""
    renamed: dict[Path, dict[int, int]] = {}
    used: set[int] = set()
    next_id = max(last_log_id(ledger_dir) for ledger_dir, _ in pairs) + 1
    for ledger_dir, _ in pairs:
        renamed[ledger_dir] = {}
        for log_id in list_log_ids(ledger_dir):
            if log_id in used:
                renamed[ledger_dir][log_id], next_id = next_id, next_id + 1
            used.add(renamed[ledger_dir].get(log_id, log_id))
    results = [
        _to_index_files(ledger_dir, index_dir, renamed[ledger_dir], dry_run, progress)
        for ledger_dir, index_dir in pairs
    ]
    if dry_run:
        return results
    # after the index files are written, before the databases move away: until then the bookie is still a
    # DbLedgerStorage one, whose directories do not care about each other's ids
    for ledger_dir, ids in renamed.items():
        for old, new in ids.items():
            os.rename(log_path(ledger_dir, old), log_path(ledger_dir, new))
        if ids:
            fsync_dir(ledger_dir / "current")
    if any(renamed.values()):
        for ledger_dir, _ in pairs:  # every directory knows the highest id handed out, as InterleavedLedgerStorage
            write_private(ledger_dir / "current" / "lastId", f"{next_id - 1:x}\n".encode(), sync=True)
    for (_, index_dir), result in zip(pairs, results, strict=True):
        current = Path(index_dir) / "current"
        for name in (LEDGERS, LOCATIONS):
            os.rename(current / name, current / f"{name}.backup")
        fsync_dir(current)
        result.backup = current / f"{LEDGERS}.backup"
    return results


def _to_index_files(
    ledger_dir: Path, index_dir: Path, renamed: dict[int, int], dry_run: bool, progress: Progress
) -> Rebuilt:
    result = Rebuilt()
    db_ledgers = LedgerMetadataIndex(index_dir, read_only=True)
    db_locations = EntryLocationIndex(index_dir, read_only=True)
    cache = LedgerCache(index_dir)
    progress.phase("converting to index files", len(db_ledgers.ledgers), "ledgers")
    try:
        for ledger_id, data in sorted(db_ledgers.ledgers.items()):
            progress.advance()
            entries = list(db_locations.entries(ledger_id))
            result.ledgers += 1
            result.entries += len(entries)
            if dry_run:
                continue
            state = cache.create(ledger_id, bytes(data.masterKey))
            state.header = IndexHeader(
                bytes(data.masterKey),
                bool(data.fenced),
                bytes(data.explicitLac) if data.HasField("explicitLac") else None,
            )
            for entry_id, loc in entries:
                log_id, pos = split_location(loc)
                cache.set_location(state, entry_id, location(renamed.get(log_id, log_id), pos))
        if not dry_run:
            cache.flush()
    finally:
        cache.close()
        db_ledgers.close()
        db_locations.close()
    return result

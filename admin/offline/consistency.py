"""localconsistencycheck: every location in a stopped bookie's index files points at the entry it names in an entry
log (InterleavedLedgerStorage.localConsistencyCheck and DefaultEntryLogger.checkEntry).

For each ledger with an index file (in any index directory), each non-zero slot: the entry log it names exists in
some ledger directory, holds at least the entry's 20-byte head at that position, the size there is sane (>= 16),
the head names that ledger and entry — BookKeeper's four checks — and, ours, the whole entry lies inside the file
(so a read of it would not come back short).

On a DbLedgerStorage bookie (a ``current/locations`` RocksDB database in an index directory) the same checks go
through its locations index instead, each directory's locations against that ledger directory's entry logs only (a
DbLedgerStorage directory reads no other's: log ids repeat across them). BookKeeper's localconsistencycheck asks the
ledger storage, and DbLedgerStorage answers with nothing checked; its ``check-db-ledgers-index`` (``bkctl bookie
check-db-index``) checks the ledgers index.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path

from bookie.codec.records import MIN_STORED
from bookie.progress import NO_PROGRESS, Progress
from bookie.storage.config import StorageConfig
from bookie.storage.db.indexes import EntryLocationIndex, LedgerMetadataIndex
from bookie.storage.db.kv import LEDGERS, LOCATIONS, has_database
from bookie.storage.dirs import LedgerDirs
from bookie.storage.entry_log import log_path, record_head, split_location
from bookie.storage.index import ENTRIES_PER_PAGE, LOCATION, IndexFile, index_name
from bookie.storage.ledger_cache import LedgerCache


@dataclass(frozen=True)
class Inconsistency:
    ledger_id: int
    entry_id: int
    log_id: int
    pos: int  # the location's offset in the log: the entry's, after its 4-byte size
    problem: str  # missing-log, past-end, bad-length, wrong-entry, cut-short
    detail: str

    def doc(self) -> dict[str, object]:
        return {
            "ledgerId": self.ledger_id,
            "entryId": self.entry_id,
            "logId": self.log_id,
            "pos": self.pos,
            "problem": self.problem,
            "detail": self.detail,
        }


@dataclass
class ConsistencyReport:
    ledgers: int = 0
    pages: int = 0  # index pages read (none on a DbLedgerStorage bookie)
    entries: int = 0
    inconsistencies: list[Inconsistency] = field(default_factory=list)
    storage: str = "interleaved"  # or "db": what was read, index files or the locations databases

    def doc(self) -> dict[str, object]:
        return {
            "storage": self.storage,
            "ledgers": self.ledgers,
            "pages": self.pages,
            "entries": self.entries,
            "inconsistencies": [i.doc() for i in self.inconsistencies],
        }


class _Logs:
    """Open entry logs by id, found in whichever ledger directory holds them."""

    def __init__(self, ledger_dirs: tuple[Path, ...]):
        self.dirs = ledger_dirs
        self.fds: dict[int, tuple[int, int] | None] = {}  # log id -> (fd, size), None: no such log

    def get(self, log_id: int) -> tuple[int, int] | None:
        if log_id not in self.fds:
            path = next((p for p in (log_path(d, log_id) for d in self.dirs) if p.exists()), None)
            fd = os.open(path, os.O_RDONLY) if path is not None else -1
            self.fds[log_id] = (fd, os.fstat(fd).st_size) if fd >= 0 else None
        return self.fds[log_id]

    def close(self) -> None:
        for opened in self.fds.values():
            if opened is not None:
                os.close(opened[0])


def _check(logs: _Logs, ledger_id: int, entry_id: int, location: int) -> Inconsistency | None:
    log_id, pos = split_location(location)

    def problem(kind: str, detail: str) -> Inconsistency:
        return Inconsistency(ledger_id, entry_id, log_id, pos, kind, detail)

    opened = logs.get(log_id)
    if opened is None:
        return problem("missing-log", f"entry log {log_id:x}.log is in no ledger directory")
    fd, size = opened
    head = record_head(fd, pos)
    if head is None:
        return problem("past-end", f"pos {pos} is past the end of entry log {log_id:x}.log ({size} bytes)")
    length, found_ledger, found_entry = head
    if length < MIN_STORED:
        return problem("bad-length", f"entry length {length} at pos {pos} of entry log {log_id:x}.log")
    if (found_ledger, found_entry) != (ledger_id, entry_id):
        return problem(
            "wrong-entry", f"entry log {log_id:x}.log holds ledger {found_ledger} entry {found_entry} at pos {pos}"
        )
    if pos + length > size:
        return problem("cut-short", f"the {length}-byte entry at pos {pos} runs past the end of {log_id:x}.log")
    return None


def is_db_storage(config: StorageConfig) -> bool:
    """Whether the directories are a DbLedgerStorage bookie's (a locations database in an index directory)."""
    return any(has_database(d, LOCATIONS) for d in config.index_dirs)


def check_local(config: StorageConfig, progress: Progress = NO_PROGRESS) -> ConsistencyReport:
    """Check every index slot of every ledger (every location, on a DbLedgerStorage bookie); ``progress``: the
    ledgers checked, of those listed first (a phase per directory on a DbLedgerStorage bookie, of the ledgers its
    ledgers index has)."""
    if is_db_storage(config):
        return _check_db(config, progress)
    report = ConsistencyReport()
    logs = _Logs(config.ledger_dirs)
    index_dirs = LedgerDirs(list(dict.fromkeys(config.index_dirs)))
    try:
        ids = LedgerCache(index_dirs).ledger_ids()
        progress.phase("checking ledgers", len(ids), "ledgers")
        for ledger_id in ids:
            progress.advance()
            path = index_dirs.find(index_name(ledger_id))
            if path is None:  # deleted meanwhile
                continue
            index = IndexFile(path.parents[3], ledger_id, path)
            try:
                for page_no in range(index.page_count()):
                    page = index.read_page(page_no)
                    report.pages += 1
                    for slot in range(ENTRIES_PER_PAGE):
                        (location,) = LOCATION.unpack_from(page, slot * 8)
                        if not location:
                            continue
                        report.entries += 1
                        found = _check(logs, ledger_id, page_no * ENTRIES_PER_PAGE + slot, location)
                        if found is not None:
                            report.inconsistencies.append(found)
            finally:
                index.close()
            report.ledgers += 1
    finally:
        logs.close()
    return report


def _check_db(config: StorageConfig, progress: Progress) -> ConsistencyReport:
    report = ConsistencyReport(storage="db")
    for ledger_dir, index_dir in zip(config.ledger_dirs, config.index_dirs, strict=True):
        if not has_database(index_dir, LOCATIONS):
            continue
        logs = _Logs((ledger_dir,))
        known = None  # the ledgers of its ledgers index, the total; the locations may have others (check-db-index)
        if has_database(index_dir, LEDGERS):
            ledgers_index = LedgerMetadataIndex(index_dir, read_only=True)
            ledgers_index.close()
            known = set(ledgers_index.ledgers)
        progress.phase("checking ledgers", None if known is None else len(known), "ledgers")
        index = EntryLocationIndex(index_dir, read_only=True)
        try:
            # in key order: ledger by ledger
            for ledger_id, locations in itertools.groupby(index.all(), key=lambda found: found[0]):
                report.ledgers += 1
                for _, entry_id, location in locations:
                    report.entries += 1
                    found = _check(logs, ledger_id, entry_id, location)
                    if found is not None:
                        report.inconsistencies.append(found)
                if known is None or ledger_id in known:
                    progress.advance()
        finally:
            index.close()
            logs.close()
    return report

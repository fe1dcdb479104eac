"""The ledger cache: each ledger's index pages and header state in memory, in front of its index file.

Pages are held up to ``page_limit``; past it the least recently used pages are evicted, dirty ones written to their
files first. The checkpoint writes every dirty page and header and fsyncs the files it wrote. At most
``open_file_limit`` index files are open (BookKeeper's ``openFileLimit``): past it the least recently used are closed,
to be opened again when next read or written.

Index files are spread over the index directories as BookKeeper's IndexPersistenceMgr spreads them: a new ledger's
file goes to a random writable directory, an existing one is found in whichever directory holds it, and a file
written while its directory is full is first moved to a writable one (index.IndexFile.move_to).
"""

from __future__ import annotations

import array
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from bookie.errors import CorruptData
from bookie.storage.dirs import LedgerDirs, NoWritableLedgerDir
from bookie.storage.index import (
    ENTRIES_PER_PAGE,
    LOCATION,
    IndexFile,
    IndexHeader,
    index_name,
    ledger_id_of,
)
from bookie.storage.stats import OpStatsLogger

log = logging.getLogger(__name__)


class LedgerIndex:
    """One ledger's index: its header (master key, fence bit, explicit LAC), last entry, and cached pages."""

    __slots__ = ("_current", "dirty", "file", "header", "header_dirty", "last_entry", "ledger_id", "pages")

    def __init__(self, ledger_id: int, file: IndexFile, header: IndexHeader, last_entry: int):
        self.ledger_id = ledger_id
        self.file = file
        self.header = header
        self.header_dirty = False
        self.pages: dict[int, bytearray] = {}
        self.dirty: set[int] = set()
        self.last_entry = last_entry
        self._current: tuple[int, bytearray] | None = None


def _nonzero_slots(page: bytes | bytearray) -> list[int]:
    values = array.array("q", page)
    return [slot for slot, value in enumerate(values) if value]


class LedgerCache:
    def __init__(
        self,
        index_dirs: LedgerDirs | Path,
        page_limit: int = 8192,
        holds: Callable[[int], bool] = lambda loc: True,
        open_file_limit: int = 20000,
    ):
        """``index_dirs``: the index directories (a path: one); ``holds(location)`` says whether a location points
        into entry-log data that exists."""
        self.dirs = index_dirs if isinstance(index_dirs, LedgerDirs) else LedgerDirs([index_dirs])
        self.holds = holds
        self.page_limit = max(page_limit, 16)
        self.open_file_limit = max(open_file_limit, 1)
        self.ledgers: dict[int, LedgerIndex] = {}
        self._lru: OrderedDict[tuple[int, int], None] = OrderedDict()
        self._open: OrderedDict[int, IndexFile] = OrderedDict()  # id(file): the files that may be open, LRU first
        self._unsynced: dict[int, IndexFile] = {}
        self.lock = threading.RLock()
        self.hits = self.misses = 0
        # the page reads of misses (LEDGER_CACHE_READ_PAGE), when watched
        self.read_page_stats: OpStatsLogger | None = None

    # ---- ledgers ----
    def get(self, ledger_id: int) -> LedgerIndex | None:
        """The ledger's state, loading its index file header when not cached; None when the bookie has no such
        ledger."""
        state = self.ledgers.get(ledger_id)
        if state is not None:
            return state
        with self.lock:
            path = self.dirs.find(index_name(ledger_id))
            if path is None:
                return None
            file = self._use(IndexFile(path.parents[3], ledger_id, path))
            try:
                header = file.read_header()
            except CorruptData:
                if not file.blank():
                    raise
                # created, and a crash took its header: no checkpoint completed since (each syncs the header it
                # writes before its lastMark), so the journal replays all of the ledger's state
                log.warning("%s: no header (a crash while it was created): the ledger is replayed anew", path)
                self._forget(file)
                file.delete()
                return None
            state = LedgerIndex(ledger_id, file, header, self._last_entry_on_disk(file))
            self.ledgers[ledger_id] = state
            return state

    def create(self, ledger_id: int, master_key: bytes) -> LedgerIndex:
        with self.lock:
            state = self.get(ledger_id)
            if state is None:
                file = IndexFile(self.dirs.pick_for_new_index(), ledger_id)
                state = LedgerIndex(ledger_id, file, IndexHeader(master_key), -1)
                state.header_dirty = True
                self.ledgers[ledger_id] = state
            return state

    def delete(self, ledger_id: int) -> None:
        with self.lock:
            state = self.ledgers.pop(ledger_id, None)
            if state is not None:
                for page_no in list(state.pages):
                    self._lru.pop((ledger_id, page_no), None)
                self._unsynced.pop(id(state.file), None)
                self._forget(state.file)
                state.file.delete()
            path = self.dirs.find(index_name(ledger_id))  # not cached, or cached before a file turned up elsewhere
            if path is not None:
                IndexFile(path.parents[3], ledger_id, path).delete()

    def ledger_ids(self) -> list[int]:
        """Every ledger this bookie has an index for (on disk or only in memory so far)."""
        ids = set(self.ledgers)
        for directory in self.dirs.all:
            current = directory / "current"
            for path in current.glob("*/*/*.idx") if current.exists() else ():
                ledger_id = ledger_id_of(path)
                if ledger_id is not None:
                    ids.add(ledger_id)
        return sorted(ids)

    # ---- pages ----
    def _page(self, state: LedgerIndex, page_no: int) -> bytearray:
        page = state.pages.get(page_no)
        key = (state.ledger_id, page_no)
        if page is None:
            self.misses += 1
            began = time.perf_counter()
            page = self._use(state.file).read_page(page_no)
            if self.read_page_stats is not None:
                self.read_page_stats.event(time.perf_counter() - began)
            state.pages[page_no] = page
            self._lru[key] = None
            if len(self._lru) > self.page_limit:
                self._evict()
        else:
            self.hits += 1
            self._lru.move_to_end(key)
        return page

    def _evict(self) -> None:
        while len(self._lru) > self.page_limit:
            (ledger_id, page_no), _ = self._lru.popitem(last=False)
            state = self.ledgers.get(ledger_id)
            if state is None:
                continue
            page = state.pages.pop(page_no)
            if state._current is not None and state._current[0] == page_no:
                state._current = None
            if page_no in state.dirty:
                state.dirty.discard(page_no)
                self._use(state.file).write_page(page_no, page)
                self._unsynced[id(state.file)] = state.file

    def set_location(self, state: LedgerIndex, entry_id: int, location: int) -> None:
        page_no, slot = divmod(entry_id, ENTRIES_PER_PAGE)
        current = state._current
        if current is None or current[0] != page_no:
            with self.lock:
                current = state._current = (page_no, self._page(state, page_no))
        LOCATION.pack_into(current[1], slot * 8, location)
        state.dirty.add(page_no)
        if entry_id > state.last_entry:
            state.last_entry = entry_id

    def get_location(self, state: LedgerIndex, entry_id: int) -> int:
        if entry_id < 0 or entry_id > state.last_entry:
            return 0
        page_no, slot = divmod(entry_id, ENTRIES_PER_PAGE)
        with self.lock:
            page = self._page(state, page_no)
        location: int = LOCATION.unpack_from(page, slot * 8)[0]
        return location

    def entry_ids(self, state: LedgerIndex) -> list[int]:
        """Every entry id with a location, from the index only."""
        ids: list[int] = []
        pages = (state.last_entry // ENTRIES_PER_PAGE + 1) if state.last_entry >= 0 else 0
        for page_no in range(pages):
            with self.lock:
                page = state.pages.get(page_no) or self._use(state.file).read_page(page_no)
            base = page_no * ENTRIES_PER_PAGE
            ids.extend(base + slot for slot in _nonzero_slots(page))
        return ids

    def _last_entry_on_disk(self, file: IndexFile) -> int:
        """The highest entry whose location points at data that exists. A checkpoint may have written the index
        slot of an add whose entry-log bytes and journal record a crash then lost: never acknowledged, and
        never to be the ledger's last entry."""
        for page_no in range(file.page_count() - 1, -1, -1):
            page = file.read_page(page_no)
            for slot in reversed(_nonzero_slots(page)):
                if self.holds(LOCATION.unpack_from(page, slot * 8)[0]):
                    return page_no * ENTRIES_PER_PAGE + slot
        return -1

    # ---- checkpoint ----
    def flush(self) -> int:
        """Write every dirty page and header, fsync the files written; return the number of files synced.

        Dirty state is taken and pages are copied under the lock (adds hold it per batch), so an update made
        while the checkpoint runs is either in this flush or still marked dirty for the next one.
        """
        writes = []
        with self.lock:
            for state in list(self.ledgers.values()):
                header = state.header.encode() if state.header_dirty else None
                state.header_dirty = False
                dirty, state.dirty = state.dirty, set()
                pages = [(page_no, bytes(state.pages[page_no])) for page_no in sorted(dirty)]
                if header is not None or pages:
                    if self.dirs.is_full(state.file.directory):
                        self._relocate(state.file)
                    writes.append((state.file, header, pages))
            unsynced, self._unsynced = self._unsynced, {}
        for file, header, pages in writes:
            with self._pinned(file):
                if header is not None:
                    file.write_raw_header(header)
                for page_no, page in pages:
                    file.write_page(page_no, page)
                file.sync()
            unsynced.pop(id(file), None)
        for file in unsynced.values():
            with self._pinned(file):
                file.sync()
        return len(writes) + len(unsynced)

    def _relocate(self, file: IndexFile) -> None:
        """Move an index file off its full directory (IndexPersistenceMgr.relocateIndexFileAndFlushHeader); when no
        other directory can take it, it stays where it is as long as its directory has room for it."""
        try:
            target = self.dirs.pick_for_new_index(exclude=file.directory)
        except NoWritableLedgerDir:
            if self.dirs.has_room_for_new_index(file.directory):
                return
            raise
        self._use(file).move_to(target / "current" / file.path.relative_to(file.directory / "current"))

    # ---- open files ----
    def _use(self, file: IndexFile) -> IndexFile:
        """Note that ``file`` is about to be read or written (under the lock); past ``open_file_limit`` files that
        may be open, close the least recently used of the others."""
        key = id(file)
        if key in self._open:
            self._open.move_to_end(key)
            return file
        self._open[key] = file
        passed = 0  # the LRU trimmed from its front; pinned files, skipped, move to its end
        while len(self._open) > self.open_file_limit and passed < len(self._open):
            other_key, other = next(iter(self._open.items()))
            if other.pins or other_key == key:  # in use without the lock (a checkpoint), or the one about to be
                self._open.move_to_end(other_key)
                passed += 1
                continue
            del self._open[other_key]
            other.close()
        return file

    @contextmanager
    def _pinned(self, file: IndexFile) -> Iterator[None]:
        """Keep ``file`` open while it is written or synced without the lock."""
        with self.lock:
            self._use(file).pins += 1
        try:
            yield
        finally:
            with self.lock:
                file.pins -= 1
                if file.deleted and not file.pins:
                    file.close()

    def _forget(self, file: IndexFile) -> None:
        self._open.pop(id(file), None)

    @property
    def open_files(self) -> int:
        """How many index files are open."""
        with self.lock:
            return sum(1 for file in self._open.values() if file.is_open)

    def close(self) -> None:
        with self.lock:
            for state in self.ledgers.values():
                state.file.close()
            self._open.clear()

    @property
    def page_count(self) -> int:
        return len(self._lru)

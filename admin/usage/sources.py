"""Where a :class:`StorageView` and the metadata it is explained against come from. Two seams, one function each:

- :func:`running_view`: a running bookie of ours, through its admin client's ``storage_usage(ledger_id)``;
- :func:`offline_view`: a bookie's directories (ours or a Java bookie's), read without writing: the ledgers maps
  of the entry logs (a log without one is scanned record header by record header) and the indexes' ledger ids.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from bookie.errors import AdminServiceMissing, BKError
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.ledger_metadata import LedgerMetadata
from bookie.meta.store import MetadataStore
from bookie.storage.config import StorageConfig
from bookie.storage.entry_log import list_log_ids, log_path, read_ledgers_map, rebuild_ledgers_map
from bookie.storage.gc import GcConfig
from bookie.storage.usage import KINDS, DirView, GcView, LogView, StorageView


class StorageUsageMissing(AdminServiceMissing):
    """The bookie's admin service does not report its storage (BookKeeper's HTTP admin API): exit 7."""

    def __init__(self, bookie_id: str):
        BKError.__init__(
            self,
            f"bookie {bookie_id} does not report its storage usage over its admin service (a Java bookie): read its "
            "directories on its host instead (--offline -c bk_server.conf)",
        )
        self.bookie_id, self.operation = bookie_id, "storage usage"


def running_view(admin: Any, ledger_id: int | None = None) -> StorageView:
    """The view a running bookie states through its admin service; ``ledger_id``: with that ledger's locations.
    A client without the call (BookKeeper's HTTP admin API) is a bookie that does not report it."""
    call = getattr(admin, "storage_usage", None)
    if call is None:
        raise StorageUsageMissing(admin.bookie_id)
    view: StorageView = call(ledger_id)
    return view


def gc_view(gc: GcConfig) -> GcView:
    """A bookie's GC settings, nothing running (offline)."""
    return GcView(
        gc.minor_threshold,
        gc.major_threshold,
        gc.minor_interval_s,
        gc.major_interval_s,
        gc.gc_wait_ms,
        gc.overreplicated_wait_ms,
    )


def _kind(path: Path) -> str:
    if path.suffix == ".txn":
        return "journal"
    if path.suffix == ".log" and path.parent.name == "current":
        return "entryLogs"
    if path.suffix == ".idx" or "locations" in path.parts or "ledgers" in path.parts:
        return "index"  # index files, or DbLedgerStorage's RocksDB databases
    return "other"


def dir_view(path: Path, kind: str) -> DirView:
    sizes = dict.fromkeys(KINDS, 0)
    for root, _, files in os.walk(path):
        for name in files:
            try:
                sizes[_kind(Path(root) / name)] += os.lstat(os.path.join(root, name)).st_size
            except FileNotFoundError:  # removed while walked (a compacted log)
                continue
    disk = os.statvfs(path)
    return DirView(str(path), kind, sizes, disk.f_blocks * disk.f_frsize, disk.f_bavail * disk.f_frsize)


def _local_ledgers(config: StorageConfig) -> tuple[str, dict[int, int]]:
    """The storage ("db" or "interleaved") and its ledgers: id -> entries for DbLedgerStorage (its locations
    database counts them), -1 (present) for index files."""
    from bookie.storage.db.indexes import EntryLocationIndex
    from bookie.storage.db.kv import LOCATIONS, has_database
    from bookie.storage.dirs import LedgerDirs
    from bookie.storage.ledger_cache import LedgerCache

    dbs = [d for d in dict.fromkeys(config.index_dirs) if has_database(d, LOCATIONS)]
    if not dbs:
        index_dirs = LedgerDirs(list(dict.fromkeys(config.index_dirs)))
        return "interleaved", dict.fromkeys(LedgerCache(index_dirs).ledger_ids(), -1)
    counts: dict[int, int] = {}
    for directory in dbs:
        index = EntryLocationIndex(directory, read_only=True)
        try:
            for ledger_id, _, _ in index.all():
                counts[ledger_id] = counts.get(ledger_id, 0) + 1
        finally:
            index.close()
    return "db", counts


def offline_view(config: StorageConfig, gc: GcConfig, bookie_id: str | None = None) -> StorageView:
    """A stopped bookie's storage from its directories (entry-log headers and ledgers maps, the index's ledgers)."""
    logs = []
    for directory in dict.fromkeys(config.ledger_dirs):
        for log_id in list_log_ids(directory):
            path = log_path(directory, log_id)
            try:
                ledgers = read_ledgers_map(path)
                stat = path.stat()
            except FileNotFoundError:
                continue
            logs.append(
                LogView(
                    log_id, str(directory), stat.st_size, ledgers or rebuild_ledgers_map(path), False, stat.st_mtime
                )
            )
    kinds = [("journal", d) for d in config.journal_dirs] + [("ledger", d) for d in config.ledger_dirs]
    kinds += [("index", d) for d in config.index_dirs if d not in config.ledger_dirs]
    storage, local = _local_ledgers(config)
    return StorageView(
        bookie_id,
        storage,
        "offline",
        [dir_view(Path(d), kind) for kind, d in kinds],
        logs,
        local,
        gc_view(gc),
    )


def ledgers_naming(
    store: MetadataStore,
    bookie_ids: Iterable[str],
    also: Iterable[int] = (),
    on_corrupt: Callable[[Exception], None] | None = None,
) -> dict[int, LedgerMetadata]:
    """The metadata of every ledger whose ensembles name one of the bookies, and of those of ``also`` that exist
    (one pass over every ledger's metadata; unreadable metadata goes to ``on_corrupt`` and is skipped)."""
    wanted, bookies = set(also), set(bookie_ids)
    found = {}
    for ledger_id, md in LedgerManager(store).iter_ledgers(on_corrupt=on_corrupt or (lambda exc: None)):
        if ledger_id in wanted or any(bookies.intersection(s.bookies) for s in md.segments):
            found[ledger_id] = md
    return found

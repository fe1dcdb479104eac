"""regenerate-interleaved-storage-index-file (InterleavedStorageRegenerateIndexOp): a ledger's index, rebuilt from
what the entry logs hold, on a stopped bookie.

Every entry log of every ledger directory is scanned in id order, so a later copy of an entry (compaction copies
into newer logs) wins; each entry of the ledgers asked for is written into the ledger's index file at the location
found. A ledger without an index file gets a new one with the master key of the password given and the fenced bit
set, as BookKeeper does; an existing file keeps its header and its other slots. Nothing is written with
``dry_run``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from bookie.progress import NO_PROGRESS, Progress
from bookie.storage.config import StorageConfig
from bookie.storage.dirs import LedgerDirs
from bookie.storage.entry_log import iter_records, list_log_ids, location, log_path
from bookie.storage.ledger_cache import LedgerCache


@dataclass
class RebuiltLedger:
    ledger_id: int
    locations: dict[int, int] = field(default_factory=dict)  # entryId -> location
    created: bool = False  # a new index file (none was found)

    def doc(self) -> dict[str, object]:
        ids = sorted(self.locations)
        return {
            "ledgerId": self.ledger_id,
            "entries": len(ids),
            "firstEntry": ids[0] if ids else None,
            "lastEntry": ids[-1] if ids else None,
            "newIndexFile": self.created,
        }


def _logs(ledger_dirs: tuple[Path, ...]) -> list[tuple[int, Path]]:
    """Every entry log, ascending by id: (id, path)."""
    found = {log_id: log_path(d, log_id) for d in ledger_dirs for log_id in list_log_ids(d)}
    return sorted(found.items())


def rebuild_index(
    config: StorageConfig,
    ledger_ids: set[int],
    master_key: bytes,
    dry_run: bool = False,
    progress: Progress = NO_PROGRESS,
) -> list[RebuiltLedger]:
    """Rebuild the index of ``ledger_ids``; ``progress``: entry logs and their bytes scanned."""
    rebuilt = {ledger_id: RebuiltLedger(ledger_id) for ledger_id in sorted(ledger_ids)}
    logs = _logs(config.ledger_dirs)
    sizes = [path.stat().st_size for _, path in logs]
    progress.phase("scanning entry logs", len(logs), "entry logs", sum(sizes))
    for (log_id, path), size in zip(logs, sizes, strict=True):
        for pos, ledger_id, entry_id, _ in iter_records(path):
            if ledger_id in rebuilt:
                rebuilt[ledger_id].locations[entry_id] = location(log_id, pos)
        progress.advance(1, size)
    cache = LedgerCache(LedgerDirs(list(dict.fromkeys(config.index_dirs))))
    for ledger in rebuilt.values():
        state = cache.get(ledger.ledger_id)
        ledger.created = state is None
        if dry_run or not ledger.locations:
            continue
        if state is None:
            state = cache.create(ledger.ledger_id, master_key)
            state.header = replace(state.header, fenced=True)
        for entry_id, loc in sorted(ledger.locations.items()):
            cache.set_location(state, entry_id, loc)
    if not dry_run:
        cache.flush()
    cache.close()
    return list(rebuilt.values())

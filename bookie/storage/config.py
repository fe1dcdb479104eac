"""Where and how a ledger storage keeps its files: :class:`StorageConfig`, made from the bookie's configuration
(bookie/server/config.py) or by offline tools and tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bookie.storage.dirs import DiskThresholds


@dataclass
class StorageConfig:
    """Where and how the storage engine keeps its files."""

    journal_dirs: tuple[Path, ...]
    ledger_dirs: tuple[Path, ...]
    index_dirs: tuple[Path, ...]  # the ledger directories again when index files live with the entry logs
    disk: DiskThresholds = field(default_factory=DiskThresholds)
    journal_sync_data: bool = True
    journal_max_group_wait_ms: float = 2.0
    journal_flush_when_queue_empty: bool = False
    journal_buffered_writes_threshold: int = 512 * 1024
    journal_max_size_mb: int = 2048
    journal_prealloc_mb: int = 16
    journal_max_backups: int = 5
    journal_skip_corruption: bool = False  # skipReplayJournalInvalidRecord
    entry_log_size_limit: int = 1 << 30
    entry_log_flush_bytes: int = 0
    flush_interval_ms: int = 10_000
    page_limit: int = 8192
    open_file_limit: int = 20000  # index files kept open (interleaved storage)
    max_entry_size: int = 5 * 1024 * 1024
    read_errors_to_fail: int = 10  # I/O errors reading within a minute that declare the disks failed (0: never)

    @property
    def journal_dir(self) -> Path:
        """The first journal directory (the only one, in most set-ups)."""
        return self.journal_dirs[0]

    @property
    def ledger_dir(self) -> Path:
        """The first ledger directory."""
        return self.ledger_dirs[0]

    @property
    def index_dir(self) -> Path:
        """The first index directory."""
        return self.index_dirs[0]

"""listfilesondisc: a bookie's journal, entry log and index files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bookie.storage.config import StorageConfig
from bookie.storage.dir_files import files_by_age

KINDS = {"journal": "txn", "entrylog": "log", "index": "idx"}


@dataclass(frozen=True)
class DiskFile:
    kind: str  # journal, entrylog, index
    path: Path
    size: int
    modified: float  # epoch seconds

    def doc(self) -> dict[str, object]:
        return {"kind": self.kind, "path": str(self.path), "size": self.size, "modified": self.modified}


def list_files(config: StorageConfig, kinds: list[str]) -> list[DiskFile]:
    """The files of each kind (journal, entrylog, index), each kind oldest first, by their real paths, as
    ListFilesOnDiscCommand lists them: journals in the journal dirs, entry logs in the ledger dirs, index files in
    the index dirs (the ledger dirs unless set apart)."""
    where = {"journal": config.journal_dirs, "entrylog": config.ledger_dirs, "index": config.index_dirs}
    found = []
    for kind in kinds:
        for path in files_by_age(dict.fromkeys(where[kind]), KINDS[kind]):
            try:
                st = path.stat()
            except FileNotFoundError:  # removed while listed (a compacted entry log)
                continue
            found.append(DiskFile(kind, path.resolve(), st.st_size, st.st_mtime))
    return found

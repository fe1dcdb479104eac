"""The offline tools (bookie.storage.db.offline, admin.offline) announce each phase's total before it starts and
advance to it."""

from pathlib import Path

import pytest

from admin.offline.consistency import check_local
from admin.offline.rebuild import rebuild_index
from bookie.storage.config import StorageConfig
from bookie.storage.db import offline
from bookie.storage.db.storage import DbLedgerStorage
from bookie.storage.entry_log import list_log_ids, log_path
from bookie.storage.interleaved import InterleavedLedgerStorage

from support.progress import RecordingProgress
from support.storage import KEY, add


@pytest.fixture
def dirs(tmp_path) -> tuple[Path, Path]:
    """A stopped DbLedgerStorage bookie's (journal, ledger) directories: ledgers 1 and 2 over two entry logs."""
    ledgers = (tmp_path / "ledgers",)
    storage = DbLedgerStorage(StorageConfig((tmp_path / "journal",), ledgers, ledgers, entry_log_size_limit=40_000))
    storage.start()
    add(storage, 1, 0, 100)
    storage.checkpoint()
    add(storage, 2, 0, 300)
    storage.shutdown()
    return tmp_path / "journal", tmp_path / "ledgers"


def log_bytes(ledger_dir: Path) -> int:
    return sum(log_path(ledger_dir, i).stat().st_size for i in list_log_ids(ledger_dir))


def test_check_index_counts_the_ledgers_it_checks(dirs):
    _, ledgers = dirs
    progress = RecordingProgress()
    offline.check_index(ledgers, ledgers, verify_entries=True, progress=progress)
    assert [(p.name, p.total) for p in progress.phases] == [
        ("reading the ledgers index", None),
        ("checking locations", 2),
    ]
    assert progress.phases[0].done == 2
    progress.assert_complete()


def test_rebuilds_count_files_and_their_bytes(dirs):
    journal, ledgers = dirs
    progress = RecordingProgress()
    offline.rebuild_locations(ledgers, ledgers, dry_run=True, progress=progress)
    scan = progress.named("scanning entry logs")
    assert (scan.total, scan.unit, scan.total_bytes) == (2, "entry logs", log_bytes(ledgers))
    progress.assert_complete()

    progress = RecordingProgress()
    offline.rebuild_ledgers([journal], ledgers, ledgers, dry_run=True, progress=progress)
    journals = list((journal / "current").glob("*.txn"))
    scan = progress.named("scanning journals and entry logs")
    assert scan.total == len(journals) + 2
    assert scan.total_bytes == log_bytes(ledgers) + sum(p.stat().st_size for p in journals)
    progress.assert_complete()


def test_conversions_count_ledgers(dirs):
    _, ledgers = dirs
    pairs = [(ledgers, ledgers)]
    progress = RecordingProgress()
    offline.convert_to_interleaved(pairs, progress=progress)
    assert [(p.name, p.total) for p in progress.phases] == [("converting to index files", 2)]
    progress.assert_complete()
    progress = RecordingProgress()
    offline.convert_to_db(pairs, progress=progress)
    assert [(p.name, p.total, p.unit) for p in progress.phases] == [("converting index files", 2, "ledgers")]
    progress.assert_complete()


def test_check_local_counts_ledgers_on_either_storage(dirs, tmp_path):
    journal, ledgers = dirs
    progress = RecordingProgress()
    check_local(StorageConfig((journal,), (ledgers,), (ledgers,)), progress)
    assert [(p.name, p.total) for p in progress.phases] == [("checking ledgers", 2)]
    progress.assert_complete()

    config = StorageConfig((tmp_path / "j2",), (tmp_path / "l2",), (tmp_path / "l2",), entry_log_size_limit=40_000)
    interleaved = InterleavedLedgerStorage(config)
    interleaved.start()
    for ledger_id in (1, 2, 3):
        add(interleaved, ledger_id, 0, 100)
    interleaved.shutdown()
    progress = RecordingProgress()
    check_local(config, progress)
    assert [(p.name, p.total) for p in progress.phases] == [("checking ledgers", 3)]
    progress.assert_complete()

    progress = RecordingProgress()
    rebuild_index(config, {2}, KEY, dry_run=True, progress=progress)
    scan = progress.named("scanning entry logs")
    assert (scan.total, scan.total_bytes) == (len(list_log_ids(tmp_path / "l2")), log_bytes(tmp_path / "l2"))
    progress.assert_complete()

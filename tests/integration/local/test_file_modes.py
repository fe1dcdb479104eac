"""State is private: the sandbox's and its bookies' directories 0700 and files 0600 (journal, entry logs, index
files, lastMark, cookies, locks, configurations, logs, ZooKeeper's data), whatever the umask."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest


def bkctl(*args: str, sandbox: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bkctl", *args],
        capture_output=True,
        text=True,
        timeout=180,
        input=stdin,
        env={**os.environ, "BKCTL_SANDBOX_DIR": str(sandbox)},
    )


def modes(directory: Path) -> dict[str, list[str]]:
    """What is not private under ``directory``: ``{"dirs": [...], "files": [...]}`` with their modes."""
    loose: dict[str, list[str]] = {"dirs": [], "files": []}
    for root, dirs, files in os.walk(directory):
        for name, kind, private in [(d, "dirs", 0o700) for d in dirs] + [(f, "files", 0o600) for f in files]:
            path = Path(root, name)
            mode = stat.S_IMODE(path.lstat().st_mode)
            if not path.is_symlink() and mode != private:
                loose[kind].append(f"{path.relative_to(directory)} {mode:04o}")
    return loose


@pytest.fixture
def lax_umask():
    previous = os.umask(0o022)  # files 0644 and directories 0755 unless the code says otherwise
    yield
    os.umask(previous)


def test_the_sandbox_and_its_bookies_keep_everything_private(tmp_path, lax_umask):
    sandbox = tmp_path / "sandbox"
    try:
        started = bkctl("sandbox", "start", "--bookies", "1", "-o", "json", sandbox=sandbox)
        assert started.returncode == 0, started.stderr
        assert json.loads(started.stdout)["bookies"][0]["state"] == "writable"
        bookie_dir = sandbox / "bookie-1"
        created = bkctl(
            "ledger", "create", "-e", "1", "-w", "1", "-a", "1", "--input", "-", sandbox=sandbox, stdin="a\nb\n"
        )
        assert created.returncode == 0, created.stderr
    finally:
        assert bkctl("sandbox", "stop", sandbox=sandbox).returncode == 0  # a clean stop: checkpoint, lastMark
    files = {str(p.relative_to(bookie_dir)) for p in bookie_dir.rglob("*") if p.is_file()}
    # every kind of file a bookie writes is there to be checked
    assert {"journal/current/VERSION", "ledgers/current/lastMark", "journal/current/bookie.lock"} <= files
    assert {"ledgers/current/VERSION", "ledgers/current/lastId", "ledgers/current/0.log", "bk_server.conf"} <= files
    assert any(f.endswith(".txn") for f in files) and any(f.endswith(".idx") for f in files)
    assert any(p.name.startswith("log.") for p in (sandbox / "zookeeper" / "data").rglob("*"))  # ZooKeeper's own
    assert modes(sandbox) == {"dirs": [], "files": []}
    assert stat.S_IMODE(sandbox.stat().st_mode) == 0o700


def test_a_bookie_makes_the_directories_it_is_given_private(tmp_path, lax_umask, zookeeper, bkctl):
    """Directories that exist before the bookie (made by an operator, 0755) are its own: made 0700 at start."""
    from bookie.local.bookies import LocalBookie, wait_registered
    from bookie.meta.store import MetadataStore
    from bookie.meta.uri import parse_service_uri

    uri = f"zk+hierarchical://{zookeeper.address}/modes/ledgers"
    assert bkctl("-u", uri, "cluster", "init").exit_code == 0
    bookie = LocalBookie.create(1, tmp_path / "bookie", uri)
    for directory in (bookie.journal_dir, bookie.ledger_dir):
        os.makedirs(Path(directory) / "current", mode=0o755)
    bookie.start()
    try:
        with MetadataStore(parse_service_uri(uri)) as store:
            wait_registered(store, [bookie])
    finally:
        bookie.stop()
    assert modes(tmp_path / "bookie") == {"dirs": [], "files": []}


def test_db_ledger_storage_keeps_its_rocksdb_databases_private(tmp_path, lax_umask):
    """RocksDB creates its files itself (SSTs, which hold master keys, write-ahead logs, MANIFEST, LOG), with no
    option for their mode: under umask 022 they were 0644 in 0755 directories. Three ledger directories, as Pulsar
    runs them."""
    from bookie.storage.config import StorageConfig
    from bookie.storage.db.storage import DbLedgerStorage

    from support.storage import add

    ledgers = tuple(tmp_path / f"ledgers{i}" for i in range(3))
    storage = DbLedgerStorage(StorageConfig((tmp_path / "journal",), ledgers, ledgers))
    storage.start()
    try:
        for ledger_id in range(3):
            add(storage, ledger_id, 0, 10)
        storage.checkpoint()
        for single in storage.dirs:  # memtables into SST files, as RocksDB's own flushes would later
            single.locations.db.compact()
            single.ledgers.db.compact()
    finally:
        storage.shutdown()
    for directory in ledgers:
        for kind in ("locations", "ledgers"):
            assert list((directory / "current" / kind).glob("*.sst")), f"no SST file in {directory}/current/{kind}"
    assert modes(tmp_path) == {"dirs": [], "files": []}
    assert os.umask(0o022) == 0o022  # the process's umask is back as it was once the databases are closed

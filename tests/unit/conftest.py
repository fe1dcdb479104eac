"""Fixtures of the single-process tests: a ledger storage or a DbLedgerStorage on a temporary directory, opened and
stopped here."""

import contextlib

import pytest

from bookie.storage.config import StorageConfig
from bookie.storage.db.storage import DbConfig, DbLedgerStorage
from bookie.storage.interleaved import InterleavedLedgerStorage

from support.storage import crash_db


@pytest.fixture
def config(tmp_path):
    ledgers = (tmp_path / "ledgers",)
    return StorageConfig((tmp_path / "journal",), ledgers, ledgers, flush_interval_ms=3_600_000)


@pytest.fixture
def open_storage(config):
    opened = []

    def make(**changes):
        for key, value in changes.items():
            setattr(config, key, value)
        storage = InterleavedLedgerStorage(config)
        storage.start()
        opened.append(storage)
        return storage

    yield make
    for storage in opened:
        for journal in storage.journals:
            try:
                journal.stop()  # again, after a test's crash(): a no-op
            except OSError:  # a journal file a test damaged or closed under it
                pass


@pytest.fixture
def open_db(config):
    opened = []

    def make(db: DbConfig | None = None, **changes):
        for key, value in changes.items():
            setattr(config, key, value)
        storage = DbLedgerStorage(config, db)
        storage.start()
        opened.append(storage)
        return storage

    yield make
    for storage in opened:
        with contextlib.suppress(Exception):  # already shut down, or crashed by the test
            crash_db(storage)


@pytest.fixture(params=["open_storage", "open_db"], ids=["InterleavedLedgerStorage", "DbLedgerStorage"])
def open_each_storage(request):
    """``open_storage``, then ``open_db``: for what both storages promise alike."""
    return request.getfixturevalue(request.param)

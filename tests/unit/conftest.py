"""Fixtures of the single-process tests: a ledger storage on a temporary directory, opened and stopped here."""

import pytest

from bookie.storage.ledger_storage import LedgerStorage, StorageConfig


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
        storage = LedgerStorage(config)
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

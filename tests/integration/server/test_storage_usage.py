"""A running bookie's storage view (bookie/storage/usage.py) through its admin service, against the view of its
directories read offline meanwhile: the same logs, ledgers maps, current log, local ledgers and ledger locations."""

import time

import pytest

from admin.bookie_admin import storage_usage
from bookie.client import BookKeeper
from bookie.meta.registration import BookieRegistry
from bookie.server.config import BookieConfig
from bookie.storage.db import DB_LEDGER_STORAGE
from bookie.storage.usage import ledger_locations, view_of_dirs

STORAGES = {"interleaved": {}, "db": {"ledgerStorageClass": DB_LEDGER_STORAGE}}
ENTRIES = 300


def payload(name: bytes, i: int) -> bytes:
    return (name + b"-%06d-" % i) * 113  # 1017 bytes


@pytest.mark.parametrize("storage", STORAGES)
def test_the_admin_view_and_the_offline_view_of_a_running_bookie_agree(harness, cluster, storage):
    """Two ledgers written at once share the entry logs; a restart checkpoints them (every log sealed but the one
    the stop left unsealed, and the new current one). Interleaved storage rolls its 256 KiB logs as it goes;
    DbLedgerStorage writes its write cache into one log at the stop's checkpoint."""
    (bookie,) = harness.start(1, logSizeLimit=256 * 1024, **STORAGES[storage])
    with BookKeeper(harness.service_uri) as bk:
        ledgers = [bk.create_ledger(1, 1, 1) for _ in range(2)]
        futures = [ledger.add_entry_async(payload(b"L", i)) for i in range(ENTRIES) for ledger in ledgers]
        for future in futures:
            future.result(30)
        for ledger in ledgers:
            ledger.close()
    ids = [ledger.ledger_id for ledger in ledgers]
    bookie.stop()
    harness.restart(bookie)
    config = BookieConfig.load(str(bookie.conf_path))
    offline = view_of_dirs(config)
    admin = storage_usage(BookieRegistry(cluster).get(bookie.bookie_id), ledger_id=ids[0])

    assert (admin.source, offline.source) == ("admin", "offline")
    assert admin.bookie_id == offline.bookie_id == bookie.bookie_id  # offline: from the directories' cookie
    assert admin.storage == offline.storage == storage
    assert len(admin.logs) >= (4 if storage == "interleaved" else 2)
    assert [(log.log_id, log.directory, log.active) for log in admin.logs] == [
        (log.log_id, log.directory, log.active) for log in offline.logs
    ]
    assert [log.active for log in admin.logs][-2:] == [False, True]  # the stop's unsealed log, the new current one
    assert [(log.ledgers, log.size) for log in admin.logs] == [(log.ledgers, log.size) for log in offline.logs]
    assert set().union(*(log.ledgers for log in admin.logs)) == set(ids)
    assert admin.local_ledgers == offline.local_ledgers == dict.fromkeys(ids, ENTRIES)
    assert admin.ledger_ranges == ledger_locations(config, ids[0])
    assert (admin.ledger_ranges[0].first, admin.ledger_ranges[-1].last) == (0, ENTRIES - 1)
    # the ranges run on from each other, through the logs whose ledgers maps hold the ledger: how many logs that is
    # depends on when the bookie flushed and rolled them (interleaved: 630 KB fill three or more of 256 KiB)
    assert all(a.last + 1 == b.first for a, b in zip(admin.ledger_ranges, admin.ledger_ranges[1:], strict=False))
    holding = {log.log_id for log in admin.logs if ids[0] in log.ledgers}
    assert {r.log_id for r in admin.ledger_ranges} == holding and (storage == "db" or len(holding) >= 3)
    assert [(d.path, d.kind) for d in admin.dirs] == [(d.path, d.kind) for d in offline.dirs]
    assert admin.dirs[0].bytes["entryLogs"] == offline.dirs[0].bytes["entryLogs"]
    assert admin.gc.major_threshold == offline.gc.major_threshold
    assert offline.gc.next_run is None and time.time() < admin.gc.next_run  # gcWaitTime after start: 10 minutes

"""A bookie process running DbLedgerStorage: it serves what it stored across a restart (the write cache flushed at
shutdown, read back through read-ahead), and exports DbLedgerStorage's metrics per directory."""

from bookie.storage.db import DB_LEDGER_STORAGE

from support.cluster import StreamWriter, metric
from support.storage import payload
from support.wire import read_stored


def test_a_db_storage_bookie_serves_its_entries_after_a_restart_and_counts_its_caches(harness):
    (bookie,) = harness.start(1, ledgerStorageClass=DB_LEDGER_STORAGE, dbStorage_readAheadCacheBatchSize="50")
    writer = StreamWriter(bookie.port, ledger_id=7, limit=1000)
    writer.start()
    writer.join(60)
    assert writer.error is None and len(writer.acked) == 1000
    current = f"{bookie.ledger_dir}/current"  # BookKeeper's label: the directory's current/ (no indexDirectories)
    labels = {"ledgerDir": current, "indexDir": current}
    assert metric(bookie, "bookie_ledgers_count", **labels) == 1
    assert metric(bookie, "bookie_write_cache_count", **labels) == 1000  # no checkpoint yet (flushInterval 10 s)

    bookie.stop()  # SIGTERM: the shutdown checkpoint writes the write cache into the entry log
    harness.restart(bookie)
    entries = read_stored(harness.wire(bookie), 7, 0, 999)
    assert all(entries[e] == payload(7, e) for e in range(1000))
    assert metric(bookie, "bookie_write_cache_count", **labels) == 0
    # read in order after a restart: one entry-log read per 51 entries (20), the rest from the read-ahead cache
    # (and one read of the last entry, for the LAC)
    misses = metric(bookie, "bookie_read_cache_misses", **labels)
    assert misses <= 21 and metric(bookie, "bookie_read_cache_hits", **labels) >= 980

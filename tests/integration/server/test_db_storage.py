"""A bookie process running DbLedgerStorage: it serves what it stored across a restart (the write cache flushed at
shutdown, read back through read-ahead), exports DbLedgerStorage's metrics per directory, and rejects adds its full
write cache has no room for."""

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.storage.db import DB_LEDGER_STORAGE

from support.cluster import StreamWriter, metric, metrics
from support.storage import payload
from support.wire import add_requests, read_stored


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


def test_adds_the_full_write_cache_has_no_room_for_are_rejected_and_counted(harness):
    """A write cache of 1 MB (two halves of 512 KB) and no wait for room (dbStorage_maxThrottleTimeMs 0): an add
    that does not fit next to what the cache holds is answered ETOOMANYREQUESTS at once and counted in
    ADD_ENTRY_REJECTED, as BookKeeper's WriteEntryProcessor counts an OperationRejectedException. Reads are never
    rejected: READ_ENTRY_REJECTED is there, at 0."""
    (bookie,) = harness.start(
        1, ledgerStorageClass=DB_LEDGER_STORAGE, dbStorage_writeCacheMaxSizeMb="1", dbStorage_maxThrottleTimeMs="0"
    )
    big = add_requests(9, 0, 2, size=400 * 1024)
    wire = harness.wire(bookie)
    assert metrics(bookie).find("bookkeeper_server_ADD_ENTRY_REJECTED")[0].value == 0  # registered at start
    # the checkpoint (flushInterval 10 s) empties the cache later: until then it holds the first entry
    assert [wire.ask(request).status for request in big] == [pb.EOK, pb.ETOOMANYREQUESTS]
    assert wire.ask(add_requests(9, 1, 1)[0]).status == pb.EOK  # a small one still fits
    got = metrics(bookie)
    assert got.types["bookkeeper_server_ADD_ENTRY_REJECTED"] == "counter"
    assert got.sum("bookkeeper_server_ADD_ENTRY_REJECTED") == 1
    assert [s.value for s in got.find("bookkeeper_server_READ_ENTRY_REJECTED")] == [0]
    assert got.sum("bookkeeper_server_ADD_ENTRY_REQUEST_count", success="false") == 1

"""The bookie's metrics under Apache BookKeeper 4.17.4's names, types and labels, for every event of BookKeeper's that
ours has (bookie/server/prometheus.py writes them as BookKeeper's Prometheus provider does). Each group below says which
Java class it mirrors and under which scope BookKeeper creates it (``EmbeddedServer``: the root logger, ``bookie``
for the bookie and its storage, ``bookkeeper_server`` for the request processor).

BookKeeper's metrics for things this bookie does not have are not exported (tests/interop/test_metric_names.py
lists them with the reason): thread pools and their queues, the scrubber, the journal's memory limit, FileInfo
caches, the ZooKeeper client's operation timers, and DbLedgerStorage's timers (flush, read-ahead batches, throttled
writes, index lookups; its gauges and cache counters are). Metrics of our own carry ``bkctl_``.

Hot paths record a batch at once (one call for the adds of one journal write, the reads of one pass over a
connection's frames): the events of a batch share its latency, and values (bytes) their mean.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bookie.server.prometheus import OpStats, StatsLogger, StatsProvider
from bookie.storage.dirs import LedgerDirs

if TYPE_CHECKING:
    from bookie.storage.db.storage import SingleDirectoryStorage
    from bookie.storage.gc import GcRun, GcState
    from bookie.storage.gc_group import GarbageCollectors

SERVER_SCOPE, BOOKIE_SCOPE = "bookkeeper_server", "bookie"


class JournalStats:
    """``JournalStats`` of one journal (``bookie_journal_*{journalIndex="N"}``). Recorded by its journal thread."""

    def __init__(self, stats: StatsLogger):
        self.add_entry = stats.op_stats("JOURNAL_ADD_ENTRY")  # enqueued -> acknowledged, per record
        self.force_ledger = stats.op_stats("JOURNAL_FORCE_LEDGER")
        self.sync = stats.op_stats("JOURNAL_SYNC")  # the fsync of a group
        self.creation = stats.op_stats("JOURNAL_CREATION_LATENCY")  # a new journal file
        self.flush = stats.op_stats("JOURNAL_FLUSH_LATENCY")  # the write of a group, before its fsync
        self.process_time = stats.op_stats("JOURNAL_PROCESS_TIME_LATENCY")  # first dequeue -> group done
        self.queue_latency = stats.op_stats("JOURNAL_QUEUE_LATENCY")  # enqueued -> dequeued, per record
        self.grouping = stats.op_stats("JOURNAL_FORCE_WRITE_GROUPING_TOTAL")  # records per fsync
        self.batch_entries = stats.op_stats("JOURNAL_FORCE_WRITE_BATCH_ENTRIES")  # records per write
        self.batch_bytes = stats.op_stats("JOURNAL_FORCE_WRITE_BATCH_BYTES")
        # Ours syncs each group on the thread that wrote it: a written group waits for no force-write thread, so
        # this queue holds at most the group between its write and its fsync.
        self.force_write_queue = stats.counter("JOURNAL_FORCE_WRITE_QUEUE_SIZE")
        self.flush_max_wait = stats.counter("JOURNAL_NUM_FLUSH_MAX_WAIT")
        self.flush_max_outstanding_bytes = stats.counter("JOURNAL_NUM_FLUSH_MAX_OUTSTANDING_BYTES")
        self.flush_empty_queue = stats.counter("JOURNAL_NUM_FLUSH_EMPTY_QUEUE")
        self.write_bytes = stats.counter("JOURNAL_WRITE_BYTES")  # record bytes, without their length prefix
        self._stats = stats

    def watch(self, queue_size: Callable[[], int]) -> None:
        """``JOURNAL_QUEUE_SIZE``: records waiting for the journal thread (a counter in BookKeeper, read as a gauge)."""
        self._stats.counter("JOURNAL_QUEUE_SIZE", queue_size)


class GarbageCollectorStats:
    """``GarbageCollectorStats`` of one collector, read from its state; told of each of its runs."""

    def __init__(self, stats: StatsLogger, state: GcState):
        self.runtime = stats.op_stats("THREAD_RUNTIME")
        stats.counter("MINOR_COMPACTION_TOTAL", lambda: state.counters["minor"])
        stats.counter("MAJOR_COMPACTION_TOTAL", lambda: state.counters["major"])
        stats.counter("RECLAIMED_COMPACTION_SPACE_BYTES", lambda: state.reclaimed_by_compaction)
        stats.counter("RECLAIMED_DELETION_SPACE_BYTES", lambda: state.reclaimed_by_deletion)
        stats.counter("RECLAIM_FAILED_TO_DELETE", lambda: state.reclaim_failed)
        stats.counter("DELETED_LEDGER_TOTAL", lambda: state.ledgers_deleted)
        stats.gauge("ACTIVE_ENTRY_LOG_TOTAL", lambda: state.active_entry_logs)
        stats.gauge("ACTIVE_ENTRY_LOG_SPACE_BYTES", lambda: state.active_entry_log_bytes)
        stats.gauge("ACTIVE_LEDGER_TOTAL", lambda: state.active_ledgers)

    def gc_run(self, run: GcRun) -> None:
        self.runtime.event(run.seconds, not run.error)


class BookieStats:
    """All of a bookie's metrics, with the calls its hot paths make to record a batch of events at once."""

    def __init__(self, journal_dirs: int = 1) -> None:
        self.provider = StatsProvider()
        root = self.provider.logger()
        server = root.scope(SERVER_SCOPE)  # RequestStats
        self.bookie = bookie = root.scope(BOOKIE_SCOPE)
        self._journals = {
            i: JournalStats(bookie.scope("journal").scope_label("journalIndex", str(i))) for i in range(journal_dirs)
        }

        # ---- RequestStats: *_REQUEST from a request's arrival to its answer written, the others its processing ----
        ops = {
            name: server.op_stats(name)
            for name in (
                "ADD_ENTRY_REQUEST",
                "ADD_ENTRY",
                "READ_ENTRY_REQUEST",
                "READ_ENTRY",
                "READ_ENTRY_FENCE_REQUEST",
                "READ_ENTRY_FENCE_WAIT",
                "READ_ENTRY_FENCE_READ",
                "READ_ENTRY_LONG_POLL_REQUEST",
                "READ_ENTRY_LONG_POLL_PRE_WAIT",
                "READ_ENTRY_LONG_POLL_WAIT",
                "READ_ENTRY_LONG_POLL_READ",
                "WRITE_LAC_REQUEST",
                "WRITE_LAC",
                "READ_LAC_REQUEST",
                "READ_LAC",
                "FORCE_LEDGER_REQUEST",
                "FORCE_LEDGER",
                "GET_BOOKIE_INFO_REQUEST",
                "GET_BOOKIE_INFO",
                "GET_LIST_OF_ENTRIES_OF_LEDGER_REQUEST",
                "GET_LIST_OF_ENTRIES_OF_LEDGER",
                # a connection that stopped reading at maxAddsInProgress / maxReadsInProgress, until it reads again
                "ADD_ENTRY_BLOCKED_WAIT",
                "READ_ENTRY_BLOCKED_WAIT",
            )
        }
        self.ops = ops
        self.add_request, self.add_entry = ops["ADD_ENTRY_REQUEST"], ops["ADD_ENTRY"]
        self.read_request, self.read_entry = ops["READ_ENTRY_REQUEST"], ops["READ_ENTRY"]
        self.read_last_entry_no_entry = server.counter("READ_LAST_ENTRY_NOENTRY_ERROR")
        # Adds answered ETOOMANYREQUESTS: DbLedgerStorage's write cache stayed full past dbStorage_maxThrottleTimeMs
        # (BookKeeper's WriteEntryProcessor counts the same OperationRejectedException). Ours never rejects a read
        # (a connection at maxReadsInProgress stops being read instead): the counter is there at 0, as BookKeeper
        # registers it.
        self.add_rejected = server.counter("ADD_ENTRY_REJECTED")
        server.counter("READ_ENTRY_REJECTED")
        self._server = server

        # ---- BookieStats (BookieImpl: the storage side of adds and reads) ----
        self.write_bytes = bookie.counter("WRITE_BYTES")
        self.read_bytes = bookie.counter("READ_BYTES")
        self.force_ledger_ops = bookie.counter("BOOKIE_FORCE_LEDGER")
        self.bookie_add_entry = bookie.op_stats("BOOKIE_ADD_ENTRY")
        self.bookie_recovery_add_entry = bookie.op_stats("BOOKIE_RECOVERY_ADD_ENTRY")
        self.bookie_read_entry = bookie.op_stats("BOOKIE_READ_ENTRY")
        self.bookie_list_entries = bookie.op_stats("BOOKIE_GET_LIST_OF_ENTRIES_OF_LEDGER")
        self.add_bytes = bookie.op_stats("BOOKIE_ADD_ENTRY_BYTES")
        self.read_bytes_stats = bookie.op_stats("BOOKIE_READ_ENTRY_BYTES")
        bookie.gauge("JOURNAL_DIRS", lambda: journal_dirs)
        self.ledger_cache_read_page = bookie.op_stats("LEDGER_CACHE_READ_PAGE")  # IndexInMemPageMgr: a miss's read

        # ---- ours ----
        # Only with skipReplayJournalInvalidRecord: what replay stepped over. Non-zero means acknowledged entries
        # may be missing from this bookie (they are re-replicated from the others by a ledger check).
        self.journal_skipped_records = root.counter("bkctl_journal_corrupt_records_skipped")
        self.journal_skipped_bytes = root.counter("bkctl_journal_corrupt_bytes_skipped")

    def journal_stats(self, index: int) -> JournalStats:
        """Journal ``index``'s metrics (``bookie_journal_*{journalIndex="<index>"}``)."""
        return self._journals[index]

    # ---- events ----
    def adds_stored(self, added: int, failed: int, recovery: int, size: int, seconds: float) -> None:
        """One ``add_batch`` (BookieImpl.addEntry / recoveryAddEntry of each): ``recovery`` of the ``added`` were
        recovery adds; ``size`` bytes of entries stored."""
        if added > recovery:
            self.bookie_add_entry.event(seconds, True, added - recovery)
        if recovery:
            self.bookie_recovery_add_entry.event(seconds, True, recovery)
        if failed:
            self.bookie_add_entry.event(seconds, False, failed)
            self.add_bytes.values(0, failed, False)  # refused before its size was read, as BookKeeper's
        self.add_bytes.values(size, added)
        self.write_bytes.value += size

    def adds_answered(self, ok: int, failed: int, processing: float, request: float, rejected: int = 0) -> None:
        """Adds answered together: ``processing`` from their storage to their acknowledgement (ADD_ENTRY),
        ``request`` from their arrival to the answer written (ADD_ENTRY_REQUEST); ``rejected`` of the ``failed``
        were answered ETOOMANYREQUESTS (ADD_ENTRY_REJECTED)."""
        self.add_rejected.value += rejected
        if ok:
            self.add_entry.event(processing, True, ok)
            self.add_request.event(request, True, ok)
        if failed:
            self.add_entry.event(processing, False, failed)
            self.add_request.event(request, False, failed)

    def add_refused(self, seconds: float, n: int = 1) -> None:
        """Adds answered without being stored (read-only bookie): only their requests count, as BookKeeper's."""
        self.add_request.event(seconds, False, n)

    def entries_read(self, ok: int, failed: int, size: int, seconds: float) -> None:
        """Reads from storage (BookieImpl.readEntry of each), ``seconds`` for all of them, ``size`` bytes read."""
        n = ok + failed
        if not n:
            return
        each = seconds / n
        if ok:
            self.bookie_read_entry.event(each, True, ok)
            self.read_bytes_stats.values(size, ok)
            self.read_bytes.value += size
        if failed:
            self.bookie_read_entry.event(each, False, failed)
            self.read_bytes_stats.values(0, failed, False)

    def reads_answered(
        self, ok: int, failed: int, size: int, reading: float, request: float, requests: tuple[int, int] | None = None
    ) -> None:
        """Plain reads answered together: ``reading`` seconds in storage for all of them (each gets its share),
        ``request`` from their arrival to the answer written; ``size`` bytes read. ``requests``: (ok, failed)
        requests when they are fewer than the entries (a batch read answers many)."""
        self.entries_read(ok, failed, size, reading)
        req_ok, req_failed = requests or (ok, failed)
        each = reading / (req_ok + req_failed or 1)
        for success, count in ((True, req_ok), (False, req_failed)):
            if count:
                self.read_entry.event(each, success, count)
                self.read_request.event(request, success, count)

    def op(self, name: str) -> OpStats:
        return self.ops[name]

    def journal_corruption_skipped(self, records: int, size: int) -> None:
        self.journal_skipped_records.value += records
        self.journal_skipped_bytes.value += size

    # ---- gauges and counters read at scrape time ----
    def watch(self, storage: Any) -> None:
        """The storage engine's: journal queues, and its ledger cache (IndexInMemPageMgr) or DbLedgerStorage's
        caches."""
        for index, journal in enumerate(storage.journals):
            self.journal_stats(index).watch(journal.queue_depth)
        errors = storage.disk_errors
        self.provider.logger().counter("bkctl_disk_read_errors", lambda: errors.total)  # ours: reads the disk failed
        if hasattr(storage, "dirs"):
            for single in storage.dirs:
                self._watch_db_dir(single)
            return
        cache = storage.cache
        self.bookie.counter("LEDGER_CACHE_HIT", lambda: cache.hits)
        self.bookie.counter("LEDGER_CACHE_MISS", lambda: cache.misses)
        self.bookie.gauge("NUM_INDEX_PAGES", lambda: cache.page_count)
        cache.read_page_stats = self.ledger_cache_read_page

    def _db_dir_scope(self, single: SingleDirectoryStorage) -> StatsLogger:
        """SingleDirectoryDbLedgerStorage's ``ledgerIndexDirStatsLogger``: ``bookie_*{ledgerDir=...,indexDir=...}``.
        The labels are the directories' ``current/``, as SingleDirectoryDbLedgerStorage names them (it is given the
        LedgerDirsManager's current directories)."""
        return self.bookie.scope_label("ledgerDir", str(single.ledger_dir / "current")).scope_label(
            "indexDir", str(single.index_dir / "current")
        )

    def _watch_db_dir(self, single: SingleDirectoryStorage) -> None:
        """DbLedgerStorageStats and its indexes' stats, per directory."""
        stats = self._db_dir_scope(single)
        read_cache = single.read_cache
        stats.counter("write-cache-hits", lambda: single.write_cache_hits)
        stats.counter("write-cache-misses", lambda: single.write_cache_misses)
        stats.counter("read-cache-hits", lambda: read_cache.hits)
        stats.counter("read-cache-misses", lambda: read_cache.misses)
        stats.gauge("write-cache-size", lambda: sum(c.size for c in single.caches()))
        stats.gauge("write-cache-count", lambda: sum(c.count for c in single.caches()))
        stats.gauge("read-cache-size", lambda: read_cache.size)
        stats.gauge("read-cache-count", lambda: read_cache.count)
        stats.gauge("ledgers-count", lambda: len(single.ledgers.ledgers))  # LedgerMetadataIndexStats
        stats.gauge("entries-count", single.locations.db.count)  # EntryLocationIndexStats: RocksDB's estimate

    def watch_gc(self, collectors: GarbageCollectors, db_dirs: list[SingleDirectoryStorage] | None = None) -> None:
        """GarbageCollectorStats of each collector: InterleavedLedgerStorage's one as ``bookie_gc_*``, DbLedgerStorage's
        (one per directory, ``db_dirs``, in their order) in their directory's scope, as BookKeeper's: there each
        SingleDirectoryDbLedgerStorage hands its GarbageCollectorThread its ``ledgerIndexDirStatsLogger``, without
        ``gc``. And ours: how many collectors are compacting each kind, the bytes a major compaction would reclaim, the
        bytes of deleted ledgers still in entry logs, the stalled logs."""
        scopes = [self._db_dir_scope(single) for single in db_dirs] if db_dirs else [self.bookie.scope("gc")]
        for collector, scope in zip(collectors.collectors, scopes, strict=True):
            collector.stats = GarbageCollectorStats(scope, collector.state)

        def compacting(kind: str) -> Callable[[], int]:
            return lambda: sum(c.state.compacting == kind for c in collectors.collectors)

        for kind in ("major", "minor"):
            self.provider.logger().scope_label("kind", kind).gauge("bkctl_gc_compacting", compacting(kind))

        # ours, from each collector's view as of its last run (ledgers deleted in the metadata since are still live)
        def summed(name: str) -> Callable[[], int]:
            return lambda: sum(getattr(c.state, name) for c in collectors.collectors)

        root = self.provider.logger()
        root.gauge("bkctl_gc_reclaimable_bytes", summed("reclaimable_bytes"))
        root.gauge("bkctl_gc_deleted_ledger_bytes", summed("dead_bytes"))
        root.gauge("bkctl_gc_stalled_logs", lambda: sum(len(c.state.stalled) for c in collectors.collectors))

    def watch_server(self, status: Callable[[], int], connections: Collection[Any]) -> None:
        """``SERVER_STATUS`` (BookieStateManager: 1 writable, 0 read-only, -1 not registered) and the requests in
        progress on the bookie port's ``connections``."""
        self.bookie.gauge("SERVER_STATUS", status)
        server = self._server
        server.gauge("ADD_ENTRY_IN_PROGRESS", lambda: sum(c.adds_in_flight for c in list(connections)))
        server.gauge("READ_ENTRY_IN_PROGRESS", lambda: sum(c.reads_in_flight for c in list(connections)))
        server.gauge("ADD_ENTRY_BLOCKED", lambda: sum(c.paused_for == "adds" for c in list(connections)))
        server.gauge("READ_ENTRY_BLOCKED", lambda: sum(c.paused_for == "reads" for c in list(connections)))

    def watch_dirs(self, scope: str, dirs: LedgerDirs) -> None:
        """LedgerDirsManager's gauges (``scope``: ``ledger``, or ``index`` for separate index directories) of a
        bookie.storage.dirs.LedgerDirs: each directory's disk usage in percent (named after its path), how many
        are writable, how many there are."""
        logger = self.bookie.scope(scope)
        for directory in dirs.all:
            name = "dir_" + str(directory).rstrip("/").replace("/", "_") + "_usage"
            logger.gauge(name, functools.partial(_percent, dirs.usage, directory), float32=True)
        logger.gauge("writable_dirs", lambda: len(dirs.writable))
        logger.gauge("num_dirs", lambda: len(dirs.all))

    # ---- serving ----
    def text(self) -> str:
        return self.provider.text()

    def start(self, rollover_seconds: float) -> None:
        self.provider.start_rollover(rollover_seconds)

    def stop(self) -> None:
        self.provider.stop()

    def serve(self, port: int, address: str = "127.0.0.1") -> ThreadingHTTPServer:
        """Serve /metrics (``port`` 0 picks a free one); raises ``address_in_use`` when taken."""
        import errno

        from bookie.server.claim import address_in_use

        try:
            return self.provider.serve(address, port)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise address_in_use(address, port, "prometheusStatsHttpPort", "metrics") from None
            raise


def _percent(usage: Callable[[Path], float], directory: Path) -> float:
    return usage(directory) * 100

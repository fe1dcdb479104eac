"""The bookie's Prometheus metrics, served on ``prometheusStatsHttpPort`` at /metrics."""

from __future__ import annotations

import errno

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from bookie.server.claim import address_in_use

LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class BookieStats:
    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry()
        self.adds = Counter("bookie_add_entries", "Entries added", ["status"], registry=registry)
        self.add_batch_latency = Histogram(
            "bookie_add_batch_latency_seconds", "From receiving an add batch to acknowledging it",
            buckets=LATENCY_BUCKETS, registry=registry,
        )
        self.reads = Counter("bookie_read_entries", "Entries read", ["status"], registry=registry)
        self.read_latency = Histogram(
            "bookie_read_latency_seconds", "Single-entry read latency", buckets=LATENCY_BUCKETS, registry=registry
        )
        self.bytes_written = Counter("bookie_write_bytes", "Entry bytes added", registry=registry)
        self.journal_sync_latency = Histogram(
            "bookie_journal_sync_latency_seconds", "Journal fsync latency", buckets=LATENCY_BUCKETS, registry=registry
        )
        self.journal_group_items = Histogram(
            "bookie_journal_group_items", "Queued writes per group commit",
            buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256), registry=registry,
        )
        self.journal_group_bytes = Histogram(
            "bookie_journal_group_bytes", "Bytes per group commit",
            buckets=(512, 4096, 65536, 262144, 524288, 1 << 20, 4 << 20), registry=registry,
        )
        self.journal_queue = Gauge("bookie_journal_queue_depth", "Writes waiting for the journal", registry=registry)
        self.cache_hit_ratio = Gauge("bookie_ledger_cache_hit_ratio", "Index page hit ratio", registry=registry)
        self.cache_pages = Gauge("bookie_ledger_cache_pages", "Index pages in memory", registry=registry)
        self.read_only = Gauge("bookie_read_only", "1 when the bookie is read-only", registry=registry)
        self.gc_runs = Gauge("bookie_gc_runs", "Garbage collection runs since start", registry=registry)
        self.gc_bytes_reclaimed = Gauge("bookie_gc_bytes_reclaimed", "Entry-log bytes freed by garbage collection "
                                        "and compaction since start", registry=registry)
        self.compactions = Gauge("bookie_compactions", "Compaction runs since start", ["kind"], registry=registry)
        # Only with skipReplayJournalInvalidRecord: what replay stepped over. Non-zero means acknowledged entries
        # may be missing from this bookie (they are re-replicated from the others by a ledger check).
        self.journal_skipped_records = Counter(
            "bookie_journal_corrupt_records_skipped", "Corrupt journal records skipped by replay at start-up",
            registry=registry,
        )
        self.journal_skipped_bytes = Counter(
            "bookie_journal_corrupt_bytes_skipped", "Journal bytes skipped by replay after corrupt records",
            registry=registry,
        )
        self.compacting = Gauge("bookie_compacting", "1 while a compaction of this kind runs", ["kind"],
                                registry=registry)

    def journal_sync(self, seconds: float, items: int, size: int) -> None:
        self.journal_sync_latency.observe(seconds)
        self.journal_group_items.observe(items)
        self.journal_group_bytes.observe(size)

    def journal_corruption_skipped(self, records: int, size: int) -> None:
        self.journal_skipped_records.inc(records)
        self.journal_skipped_bytes.inc(size)

    def watch(self, storage) -> None:
        """Gauges read at scrape time from the storage engine."""
        cache = storage.cache
        self.cache_hit_ratio.set_function(lambda: cache.hits / max(1, cache.hits + cache.misses))
        self.cache_pages.set_function(lambda: cache.page_count)
        self.journal_queue.set_function(storage.journal.queue_depth)

    def watch_gc(self, collector) -> None:
        state = collector.state
        self.gc_runs.set_function(lambda: state.runs)
        self.gc_bytes_reclaimed.set_function(lambda: state.bytes_reclaimed)
        for kind in ("major", "minor"):
            self.compactions.labels(kind).set_function(lambda kind=kind: state.counters[kind])
            self.compacting.labels(kind).set_function(lambda kind=kind: int(state.compacting == kind))

    def serve(self, port: int, address: str = "127.0.0.1") -> int:
        """Start the /metrics endpoint; return its port (``port`` 0 picks a free one)."""
        try:
            server, _ = start_http_server(port, addr=address, registry=self.registry)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise address_in_use(address, port, "prometheusStatsHttpPort", "metrics") from None
            raise
        return server.server_port

"""What every bookie is doing now (``bkctl top``), from its ``/metrics`` under BookKeeper's metric names only, so the
same on our bookies and on Java ones with the Prometheus provider; and which of them is slow.

Rates are counters' differences between two scrapes. Percentiles are the bookie's own, of its last rollover window
(``prometheusStatsLatencyRolloverSeconds``, a minute by default): the ``quantile="0.5"`` and ``"0.99"`` samples of
an OpStatsLogger's summary, which BookKeeper's PrometheusTextFormat.writeOpStat and ours both write (NaN until a
window with events closes: None here). Free disk space is GET_BOOKIE_INFO's (BookKeeper's protocol: a Java bookie
answers it too), as BookKeeper's /metrics carries only each ledger directory's usage in percent.

A bookie is slow when its add or read p99 is at least :data:`SLOW_FACTOR` times the median of the other bookies'
and at least :data:`SLOW_FLOOR_MS`: the floor keeps idle bookies (0.1 ms against 0.4 ms) from being flagged.
"""

from __future__ import annotations

import math
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from admin.bookie_metrics import STATES
from bookie.client.metrics_client import Metrics, scrape
from bookie.errors import BKError, MetricsAddressMissing
from bookie.meta.registration import READONLY, RegisteredBookie

ADDS = "bookkeeper_server_ADD_ENTRY_REQUEST"  # summary: arrival -> answer written, both outcomes
READS = "bookkeeper_server_READ_ENTRY_REQUEST"
JOURNAL_SYNC = "bookie_journal_JOURNAL_SYNC"  # summary per journalIndex: the fsync of a journal group
ADDS_IN_PROGRESS = "bookkeeper_server_ADD_ENTRY_IN_PROGRESS"  # gauges
READS_IN_PROGRESS = "bookkeeper_server_READ_ENTRY_IN_PROGRESS"
# counters: requests answered ETOOMANYREQUESTS (a full DbLedgerStorage write cache; a Java bookie's full read pool)
ADDS_REJECTED = "bookkeeper_server_ADD_ENTRY_REJECTED"
READS_REJECTED = "bookkeeper_server_READ_ENTRY_REJECTED"
SERVER_STATUS = "bookie_SERVER_STATUS"
LEDGER_DIR_USAGE = "bookie_ledger_dir_<path>_usage"  # LedgerDirsManager: one gauge per directory, named after it
# GarbageCollectorStats: an interleaved (or sorted) storage's under bookie_gc_, a DbLedgerStorage's under bookie_ with
# ledgerDir/indexDir labels (each directory's collector gets its directory's scope, without gc)
GC_SCOPES = ("bookie_gc_", "bookie_")
GC_RUNS, MAJOR, MINOR = "THREAD_RUNTIME", "MAJOR_COMPACTION_TOTAL", "MINOR_COMPACTION_TOTAL"
# Every metric family read, as BookKeeper names it (the interop test holds them to a Java bookie's names)
FAMILIES = (
    ADDS,
    READS,
    JOURNAL_SYNC,
    ADDS_IN_PROGRESS,
    READS_IN_PROGRESS,
    ADDS_REJECTED,
    READS_REJECTED,
    SERVER_STATUS,
    LEDGER_DIR_USAGE,
    *(GC_SCOPES[0] + name for name in (GC_RUNS, MAJOR, MINOR)),
)

SLOW_FACTOR = 3.0
SLOW_FLOOR_MS = 10.0


@dataclass
class BookieRow:
    """One bookie in one sample: each value None when the bookie does not say (or not yet: a percentile before its
    first window closes), all of them None with ``error`` when its metrics could not be read."""

    bookie_id: str
    state: str | None
    url: str | None = None
    adds_per_sec: float | None = None
    reads_per_sec: float | None = None
    add_p50_ms: float | None = None
    add_p99_ms: float | None = None
    read_p50_ms: float | None = None
    read_p99_ms: float | None = None
    fsync_p99_ms: float | None = None
    in_flight: int | None = None
    errors_per_sec: float | None = None
    rejected_per_sec: float | None = None  # adds and reads answered ETOOMANYREQUESTS, a part of errors_per_sec
    disk_used_percent: float | None = None
    disk_free_bytes: int | None = None
    gc: str | None = None  # "major", "minor", "gc" (a pass without compaction) or "idle", within the interval
    error: str | None = None
    slow: list[str] = field(default_factory=list)  # why: "add p99 250 ms is 40x the others' median 6.2 ms"

    @property
    def read_only(self) -> bool | None:
        return None if self.state is None else self.state == READONLY

    def doc(self) -> dict:
        return {
            "bookieId": self.bookie_id,
            "state": self.state,
            "readOnly": self.read_only,
            "metricsUrl": self.url,
            "addsPerSec": self.adds_per_sec,
            "readsPerSec": self.reads_per_sec,
            "addP50Ms": self.add_p50_ms,
            "addP99Ms": self.add_p99_ms,
            "readP50Ms": self.read_p50_ms,
            "readP99Ms": self.read_p99_ms,
            "journalFsyncP99Ms": self.fsync_p99_ms,
            "requestsInFlight": self.in_flight,
            "failedRequestsPerSec": self.errors_per_sec,
            "rejectedPerSec": self.rejected_per_sec,
            "diskUsedPercent": self.disk_used_percent,
            "diskFreeBytes": self.disk_free_bytes,
            "gc": self.gc,
            "slow": bool(self.slow),
            "slowReasons": self.slow,
            "error": self.error,
        }


def _quantile(metrics: Metrics, family: str, quantile: str) -> float | None:
    """The largest of the family's successful ``quantile`` samples (one per journal for JOURNAL_SYNC), in ms."""
    values = [s.value for s in metrics.find(family, success="true", quantile=quantile) if not math.isnan(s.value)]
    return round(max(values), 3) if values else None


def _delta(name: str, first: Metrics, second: Metrics, **labels: str) -> float | None:
    before, after = first.sum(name, **labels), second.sum(name, **labels)
    return None if before is None or after is None else max(0.0, after - before)


def _rate(name: str, first: Metrics, second: Metrics, seconds: float, **labels: str) -> float | None:
    delta = _delta(name, first, second, **labels)
    return None if delta is None else round(delta / seconds, 1)


def _gc(first: Metrics, second: Metrics) -> str | None:
    """What the garbage collectors finished between the scrapes, the biggest first."""
    moved = {}
    for name in (MAJOR, MINOR, f"{GC_RUNS}_count"):
        deltas = [d for scope in GC_SCOPES if (d := _delta(scope + name, first, second)) is not None]
        moved[name] = sum(deltas) if deltas else None
    if all(v is None for v in moved.values()):
        return None
    if moved[MAJOR]:
        return "major"
    if moved[MINOR]:
        return "minor"
    return "gc" if moved[f"{GC_RUNS}_count"] else "idle"


def measure(row: BookieRow, first: Metrics | None, second: Metrics, seconds: float) -> BookieRow:
    """Fill ``row`` from two scrapes ``seconds`` apart (without a ``first``: all but the rates and GC)."""
    status = second.sum(SERVER_STATUS)
    if status is not None:
        row.state = STATES.get(int(status), str(status))
    row.add_p50_ms, row.add_p99_ms = _quantile(second, ADDS, "0.5"), _quantile(second, ADDS, "0.99")
    row.read_p50_ms, row.read_p99_ms = _quantile(second, READS, "0.5"), _quantile(second, READS, "0.99")
    row.fsync_p99_ms = _quantile(second, JOURNAL_SYNC, "0.99")
    in_progress = [v for name in (ADDS_IN_PROGRESS, READS_IN_PROGRESS) if (v := second.sum(name)) is not None]
    row.in_flight = int(sum(in_progress)) if in_progress else None
    usage = [s.value for s in second.matching(r"bookie_ledger_dir_.*_usage")]
    row.disk_used_percent = round(max(usage), 1) if usage else None
    if first is not None:
        row.adds_per_sec = _rate(f"{ADDS}_count", first, second, seconds)
        row.reads_per_sec = _rate(f"{READS}_count", first, second, seconds)
        failed = [_rate(f"{name}_count", first, second, seconds, success="false") for name in (ADDS, READS)]
        row.errors_per_sec = None if None in failed else round(sum(f for f in failed if f is not None), 1)
        rejected = [_rate(name, first, second, seconds) for name in (ADDS_REJECTED, READS_REJECTED)]
        row.rejected_per_sec = None if None in rejected else round(sum(r for r in rejected if r is not None), 1)
        row.gc = _gc(first, second)
    return row


def flag_slow(rows: list[BookieRow], factor: float = SLOW_FACTOR, floor_ms: float = SLOW_FLOOR_MS) -> None:
    """Set each row's ``slow`` reasons: its add (read) p99 against the median of the other bookies' add (read)
    p99s, among those that have one."""
    for row in rows:
        row.slow = []
    for what, attribute in (("add", "add_p99_ms"), ("read", "read_p99_ms")):
        for row in rows:
            mine = getattr(row, attribute)
            others = [v for r in rows if r is not row and (v := getattr(r, attribute)) is not None]
            if mine is None or not others:
                continue
            median = statistics.median(others)
            if mine >= floor_ms and mine >= factor * median:
                times = f"{mine / median:.0f}x" if median > 0 else "far above"
                row.slow.append(
                    f"{what} p99 {round(mine, 1):g} ms is {times} the others' median {round(median, 1):g} ms"
                )


class Sampler:
    """Samples all bookies again and again: each sample's rates are against the previous scrape of each bookie.

    ``bookies()`` lists the bookies to show (read again at each sample: one that registers appears);
    ``disk_space(ids)`` asks each GET_BOOKIE_INFO: ``{bookie id: free bytes}`` of those that answer."""

    def __init__(self, bookies, disk_space=None, metrics_port: int | None = None, timeout: float = 10.0):
        self.bookies, self.disk_space = bookies, disk_space
        self.metrics_port, self.timeout = metrics_port, timeout
        self.previous: dict[str, tuple[Metrics, float]] = {}
        self.errors: dict[str, BKError] = {}  # the last sample's, per bookie

    def _scrape(self, bookie: RegisteredBookie) -> tuple[str | None, Metrics | BKError, float]:
        url = None
        try:
            url = bookie.metrics_url(self.metrics_port)
            if url is None:
                raise MetricsAddressMissing(bookie.bookie_id)
            return url, scrape(bookie.bookie_id, url, self.timeout), time.monotonic()
        except BKError as exc:
            return url, exc, time.monotonic()

    def sample(self) -> list[BookieRow]:
        """Scrape every bookie (at once) and compare with its previous scrape: a bookie seen for the first time has
        its state, percentiles and gauges, and no rates yet."""
        bookies: list[RegisteredBookie] = list(self.bookies())
        with ThreadPoolExecutor(max(1, min(16, len(bookies)))) as pool:
            scrapes = list(pool.map(self._scrape, bookies))
        space = self.disk_space([b.bookie_id for b in bookies]) if self.disk_space else {}
        rows, self.errors = [], {}
        for bookie, (url, got, at) in zip(bookies, scrapes, strict=True):
            row = BookieRow(bookie.bookie_id, bookie.state, url)
            if isinstance(got, BKError):
                row.error, self.errors[bookie.bookie_id] = str(got), got
                self.previous.pop(bookie.bookie_id, None)
            else:
                first, then = self.previous.get(bookie.bookie_id, (None, at))  # seen for the first time: no rates
                measure(row, first, got, at - then)
                self.previous[bookie.bookie_id] = (got, at)
                row.disk_free_bytes = space.get(bookie.bookie_id)
            rows.append(row)
        self.previous = {k: v for k, v in self.previous.items() if k in {b.bookie_id for b in bookies}}
        flag_slow(rows)
        return rows

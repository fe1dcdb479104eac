"""A short health summary of bookies from their ``/metrics`` (``bkctl bookie metrics``): BookKeeper's metric names,
so the same on our bookies and on Java ones with the Prometheus provider.

Rates come from two scrapes ``interval`` seconds apart: what a bookie does now, not an average since its start
(BookKeeper exports no start time to divide by). The p99 is the bookie's own, over its last rollover window
(``prometheusStatsLatencyRolloverSeconds``, a minute by default).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass

from admin.bookie_admin import Outcome
from bookie.client.metrics_client import Metrics, scrape
from bookie.errors import BKError, MetricsAddressMissing
from bookie.meta.registration import READONLY, UNREGISTERED, WRITABLE, RegisteredBookie

ADDS, READS = "bookkeeper_server_ADD_ENTRY_REQUEST", "bookkeeper_server_READ_ENTRY_REQUEST"
STATES = {1: WRITABLE, 0: READONLY, -1: UNREGISTERED}  # BookieStateManager's SERVER_STATUS


@dataclass
class BookieHealth:
    url: str
    state: str | None
    adds_per_sec: float | None
    reads_per_sec: float | None
    add_p99_ms: float | None  # NaN in the bookie's text until its first window closes: None
    journal_queue: int | None
    ledger_disk_usage: float | None  # percent, of the fullest ledger directory
    writable_dirs: int | None
    ledger_dirs: int | None
    interval: float

    def doc(self) -> dict:
        return {
            "metricsUrl": self.url,
            "state": self.state,
            "addsPerSec": self.adds_per_sec,
            "readsPerSec": self.reads_per_sec,
            "addLatencyP99Ms": self.add_p99_ms,
            "journalQueue": self.journal_queue,
            "ledgerDiskUsagePercent": self.ledger_disk_usage,
            "writableLedgerDirs": self.writable_dirs,
            "ledgerDirs": self.ledger_dirs,
            "intervalSeconds": self.interval,
        }


def _number(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value


def _whole(value: float | None) -> int | None:
    return None if value is None else int(value)


def _rate(name: str, first: Metrics, second: Metrics, seconds: float) -> float | None:
    """Requests answered per second, successes and failures (``NAME_count`` of a summary)."""
    before, after = first.sum(f"{name}_count"), second.sum(f"{name}_count")
    if before is None or after is None:
        return None
    return round(max(0.0, after - before) / seconds, 1)


def summarize(url: str, first: Metrics, second: Metrics, seconds: float) -> BookieHealth:
    status = second.sum("bookie_SERVER_STATUS")
    p99 = _number(second.sum(ADDS, success="true", quantile="0.99"))
    usage = [s.value for s in second.matching(r"bookie_ledger_dir_.*_usage")]
    return BookieHealth(
        url=url,
        state=STATES.get(int(status), str(status)) if status is not None else None,
        adds_per_sec=_rate(ADDS, first, second, seconds),
        reads_per_sec=_rate(READS, first, second, seconds),
        add_p99_ms=round(p99, 3) if p99 is not None else None,
        journal_queue=_whole(second.sum("bookie_journal_JOURNAL_QUEUE_SIZE")),
        ledger_disk_usage=round(max(usage), 1) if usage else None,
        writable_dirs=_whole(second.sum("bookie_ledger_writable_dirs")),
        ledger_dirs=_whole(second.sum("bookie_ledger_num_dirs")),
        interval=round(seconds, 3),
    )


def health(
    bookies: Iterable[RegisteredBookie], interval: float = 1.0, metrics_port: int | None = None, timeout: float = 10.0
) -> list[Outcome]:
    """Scrape every bookie, wait ``interval`` seconds, scrape again: an Outcome per bookie with its
    :class:`BookieHealth`, or its error (MetricsAddressMissing, ServiceUnavailable...)."""
    firsts: dict[str, tuple[str, Metrics, float]] = {}
    outcomes: dict[str, Outcome] = {}
    bookies = list(bookies)
    for bookie in bookies:
        try:
            url = bookie.metrics_url(metrics_port)
            if url is None:
                raise MetricsAddressMissing(bookie.bookie_id)
            firsts[bookie.bookie_id] = (url, scrape(bookie.bookie_id, url, timeout), time.monotonic())
        except BKError as exc:
            outcomes[bookie.bookie_id] = Outcome(bookie, error=exc)
    if firsts:
        time.sleep(interval)
    for bookie in bookies:
        if bookie.bookie_id in outcomes:
            continue
        url, first, scraped = firsts[bookie.bookie_id]
        try:
            second = scrape(bookie.bookie_id, url, timeout)
        except BKError as exc:
            outcomes[bookie.bookie_id] = Outcome(bookie, error=exc)
            continue
        outcomes[bookie.bookie_id] = Outcome(bookie, summarize(url, first, second, time.monotonic() - scraped))
    return [outcomes[b.bookie_id] for b in bookies]

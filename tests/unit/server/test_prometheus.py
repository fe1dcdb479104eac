"""The text of /metrics, as BookKeeper 4.17.4's Prometheus provider writes it (PrometheusTextFormat)."""

import math

import pytest

from bookie.client.metrics_client import parse
from bookie.server.prometheus import QUANTILES, StatsProvider, java_double, java_float


# Double.toString / Float.toString of Java 17 (java T.java printing both for each value)
@pytest.mark.parametrize(
    "value, double, single",
    [
        (0.0, "0.0", "0.0"),
        (1265.0, "1265.0", "1265.0"),
        (12345678.0, "1.2345678E7", "1.2345678E7"),
        (1e-4, "1.0E-4", "1.0E-4"),
        (0.001, "0.001", "0.001"),
        (1.5e20, "1.5E20", "1.5E20"),
        (42.356781234, "42.356781234", "42.35678"),
        (math.nan, "NaN", "NaN"),
        (100.0, "100.0", "100.0"),
        (-2.5e-7, "-2.5E-7", "-2.5E-7"),
        (1.706, "1.706", "1.706"),
        (0.5, "0.5", "0.5"),
    ],
)
def test_numbers_are_written_as_java_writes_them(value, double, single):
    assert (java_double(value), java_float(value)) == (double, single)


def test_counters_gauges_and_op_stats_are_written_as_bookkeepers_provider_writes_them():
    provider = StatsProvider()
    bookie = provider.logger().scope("bookie")
    journal = bookie.scope("journal").scope_label("journalIndex", "0")
    bookie.gauge("SERVER_STATUS", lambda: 1)
    bookie.scope("ledger").gauge("dir__data_bk_usage", lambda: 42.356781234, float32=True)
    journal.counter("JOURNAL_QUEUE_SIZE").inc(3)
    sync = journal.op_stats("JOURNAL_SYNC")
    sync.event(0.0017061)  # registerSuccessfulEvent: microseconds kept, the sum adds whole milliseconds
    sync.event(0.0108, n=2)
    sync.event(0.5, success=False)
    assert journal.op_stats("JOURNAL_SYNC") is sync and bookie.counter("WRITE_BYTES").get() == 0
    before = provider.text().splitlines()
    assert 'bookie_journal_JOURNAL_SYNC{success="true",quantile="0.99", journalIndex="0"} NaN' in before
    provider.rotate()  # the window closes: its quantiles are written until the next rotation
    sync.event(5.0)
    lines = provider.text().splitlines()
    assert lines[:6] == [
        "# TYPE bookie_SERVER_STATUS gauge",
        "bookie_SERVER_STATUS 1",
        "# TYPE bookie_ledger_dir__data_bk_usage gauge",
        "bookie_ledger_dir__data_bk_usage 42.35678",
        "# TYPE bookie_journal_JOURNAL_QUEUE_SIZE counter",
        'bookie_journal_JOURNAL_QUEUE_SIZE{journalIndex="0"} 3',
    ]
    start = lines.index("# TYPE bookie_journal_JOURNAL_SYNC summary")
    summary = lines[start + 1 : start + 19]
    assert [line.split("{")[0] for line in summary] == ["bookie_journal_JOURNAL_SYNC"] * 7 + [
        "bookie_journal_JOURNAL_SYNC_count",
        "bookie_journal_JOURNAL_SYNC_sum",
    ] + ["bookie_journal_JOURNAL_SYNC"] * 7 + ["bookie_journal_JOURNAL_SYNC_count", "bookie_journal_JOURNAL_SYNC_sum"]
    assert summary[0] == 'bookie_journal_JOURNAL_SYNC{success="false",quantile="0.5", journalIndex="0"} 500.0'
    assert summary[7:9] == [
        'bookie_journal_JOURNAL_SYNC_count{success="false", journalIndex="0"} 1',
        'bookie_journal_JOURNAL_SYNC_sum{success="false", journalIndex="0"} 500.0',
    ]
    assert [line.split("} ")[0].split(",quantile=")[1] for line in summary[9:16]] == [
        f'"{q}", journalIndex="0"' for q in ("0.5", "0.75", "0.95", "0.99", "0.999", "0.9999", "1.0")
    ]
    median, largest = (float(summary[i].rsplit(" ", 1)[1]) for i in (9, 15))
    assert median == pytest.approx(10.8, rel=0.01) and largest == 10.8  # 2 of 3 events took 10.8 ms
    assert summary[16:] == [
        'bookie_journal_JOURNAL_SYNC_count{success="true", journalIndex="0"} 4',
        'bookie_journal_JOURNAL_SYNC_sum{success="true", journalIndex="0"} 5021.0',
    ]


def test_quantiles_are_within_one_percent():
    stats = StatsProvider().logger().op_stats("X")
    for i in range(1, 10_001):
        stats.event(i / 1000)  # 1 ms .. 10 s
    stats.rotate()
    for q in QUANTILES:
        assert stats.quantile(True, q) == pytest.approx(q * 10_000, rel=0.01)
    assert stats.quantile(False, 0.5) != stats.quantile(False, 0.5)  # no failure: NaN


def test_values_count_exactly_and_their_quantiles_are_whole():
    stats = StatsProvider().logger().op_stats("BOOKIE_ADD_ENTRY_BYTES")
    stats.values(1030 * 64, 64)  # 64 entries of one batch
    stats.values(0, 2, success=False)
    stats.rotate()
    assert (stats.count, stats.sum) == ([2, 64], [0, 1030 * 64])
    assert stats.quantile(True, 0.5) == 1030.0 and stats.quantile(False, 1.0) == 0.0


def test_what_we_write_reads_back():
    provider = StatsProvider()
    provider.logger("bookkeeper_server").op_stats("ADD_ENTRY_REQUEST").event(0.002, n=5)
    provider.logger("bookie").scope_label("journalIndex", "0").counter("JOURNAL_QUEUE_SIZE").inc(2)
    got = parse(provider.text())
    assert got.types["bookkeeper_server_ADD_ENTRY_REQUEST"] == "summary"
    assert got.sum("bookkeeper_server_ADD_ENTRY_REQUEST_count") == 5
    assert got.sum("bookkeeper_server_ADD_ENTRY_REQUEST_count", success="true") == 5
    assert got.sum("bookie_JOURNAL_QUEUE_SIZE", journalIndex="0") == 2 and got.sum("nope") is None

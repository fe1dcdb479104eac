"""bkctl top's arithmetic (admin/top.py): rates from two scrapes, percentiles and gauges under BookKeeper's names as
its Prometheus provider writes them, and the slow-bookie rule."""

from __future__ import annotations

from admin.top import BookieRow, flag_slow, measure
from bookie.client.metrics_client import parse


def scrape(adds: int, reads: int, failed: int, gc_runs: int, minor: int = 0, rejected: int = 0) -> str:
    """A bookie's /metrics as BookKeeper 4.17.4's PrometheusTextFormat writes it (its spacing quirks included)."""
    return f"""# TYPE bookie_SERVER_STATUS gauge
bookie_SERVER_STATUS 0
# TYPE bookkeeper_server_ADD_ENTRY_IN_PROGRESS gauge
bookkeeper_server_ADD_ENTRY_IN_PROGRESS 3
# TYPE bookkeeper_server_READ_ENTRY_IN_PROGRESS gauge
bookkeeper_server_READ_ENTRY_IN_PROGRESS 2
# TYPE bookkeeper_server_ADD_ENTRY_REJECTED counter
bookkeeper_server_ADD_ENTRY_REJECTED {rejected}
# TYPE bookkeeper_server_READ_ENTRY_REJECTED counter
bookkeeper_server_READ_ENTRY_REJECTED 1
# TYPE bookie_ledger_dir__data_a_current_usage gauge
bookie_ledger_dir__data_a_current_usage 41.5
# TYPE bookie_ledger_dir__data_b_current_usage gauge
bookie_ledger_dir__data_b_current_usage 63.25
# TYPE bookie_gc_MINOR_COMPACTION_TOTAL counter
bookie_gc_MINOR_COMPACTION_TOTAL {minor}
# TYPE bookie_gc_MAJOR_COMPACTION_TOTAL counter
bookie_gc_MAJOR_COMPACTION_TOTAL 0
# TYPE bookkeeper_server_ADD_ENTRY_REQUEST summary
bookkeeper_server_ADD_ENTRY_REQUEST{{success="false",quantile="0.5",}} NaN
bookkeeper_server_ADD_ENTRY_REQUEST_count{{success="false",}} {failed}
bookkeeper_server_ADD_ENTRY_REQUEST{{success="true",quantile="0.5",}} 1.25
bookkeeper_server_ADD_ENTRY_REQUEST{{success="true",quantile="0.99",}} 7.5
bookkeeper_server_ADD_ENTRY_REQUEST_count{{success="true",}} {adds}
# TYPE bookkeeper_server_READ_ENTRY_REQUEST summary
bookkeeper_server_READ_ENTRY_REQUEST_count{{success="false",}} 0
bookkeeper_server_READ_ENTRY_REQUEST{{success="true",quantile="0.5",}} NaN
bookkeeper_server_READ_ENTRY_REQUEST{{success="true",quantile="0.99",}} NaN
bookkeeper_server_READ_ENTRY_REQUEST_count{{success="true",}} {reads}
# TYPE bookie_journal_JOURNAL_SYNC summary
bookie_journal_JOURNAL_SYNC{{success="true",quantile="0.99", journalIndex="0"}} 4.0
bookie_journal_JOURNAL_SYNC{{success="true",quantile="0.99", journalIndex="1"}} 9.0
# TYPE bookie_gc_THREAD_RUNTIME summary
bookie_gc_THREAD_RUNTIME_count{{success="true",}} {gc_runs}
"""


def test_two_scrapes_give_rates_percentiles_and_gauges():
    first, second = parse(scrape(100, 10, 0, 5)), parse(scrape(300, 50, 4, 6, rejected=3))
    row = measure(BookieRow("b:1", "writable"), first, second, 2.0)
    assert (row.state, row.read_only, row.adds_per_sec, row.reads_per_sec, row.errors_per_sec) == (
        "readonly",
        True,
        102.0,  # both outcomes: 200 successes and 4 failures in 2 s
        20.0,
        2.0,
    )
    assert (row.add_p50_ms, row.add_p99_ms, row.read_p50_ms, row.read_p99_ms) == (1.25, 7.5, None, None)
    assert (row.fsync_p99_ms, row.in_flight, row.disk_used_percent, row.gc) == (9.0, 5, 63.2, "gc")
    assert row.rejected_per_sec == 1.5  # 3 adds rejected in 2 s, reads' unchanged
    assert measure(BookieRow("b:1", None), parse(""), parse(""), 1.0).rejected_per_sec is None  # no such counters


def test_gc_says_the_biggest_thing_the_collectors_finished():
    idle = measure(BookieRow("b:1", None), parse(scrape(0, 0, 0, 5)), parse(scrape(0, 0, 0, 5)), 1.0)
    minor = measure(BookieRow("b:1", None), parse(scrape(0, 0, 0, 5)), parse(scrape(0, 0, 0, 6, minor=1)), 1.0)
    assert (idle.gc, minor.gc) == ("idle", "minor")
    assert measure(BookieRow("b:1", None), parse(""), parse(""), 1.0).gc is None  # no such metrics: not "idle"


def test_a_first_scrape_alone_gives_all_but_rates():
    row = measure(BookieRow("b:1", "writable"), None, parse(scrape(100, 10, 0, 5)), 0.0)
    assert (row.adds_per_sec, row.reads_per_sec, row.errors_per_sec, row.rejected_per_sec, row.gc) == (None,) * 5
    assert (row.state, row.add_p99_ms, row.in_flight, row.disk_used_percent) == ("readonly", 7.5, 5, 63.2)


def rows(*p99s):
    return [BookieRow(f"b:{i}", "writable", add_p99_ms=add, read_p99_ms=read) for i, (add, read) in enumerate(p99s)]


def test_a_bookie_three_times_the_others_median_and_past_the_floor_is_slow():
    cluster = rows((4.0, 2.0), (5.0, 2.5), (6.0, None), (30.0, 9.0))
    flag_slow(cluster)
    assert [bool(r.slow) for r in cluster] == [False, False, False, True]
    assert cluster[3].slow == ["add p99 30 ms is 6x the others' median 5 ms"]  # read 9 ms: 4x, under the floor


def test_idle_bookies_are_not_slow_under_the_floor_nor_alone():
    idle = rows((0.1, 0.1), (0.1, 0.1), (0.4, 0.9))
    flag_slow(idle)
    assert not any(r.slow for r in idle)
    alone = rows((500.0, 500.0), (None, None))
    flag_slow(alone)
    assert not any(r.slow for r in alone)  # nothing to compare with
    short = rows((10.0, None), (29.0, None), (31.0, None))
    flag_slow(short)  # 31 against 19.5: 1.6x
    assert not any(r.slow for r in short)

"""Reading Prometheus text as BookKeeper's provider writes it, quirks included."""

import math

from bookie.client.metrics_client import parse

BOOKKEEPER_4_14 = """\
# TYPE bookie_SERVER_STATUS gauge
bookie_SERVER_STATUS 1
# TYPE bookie_journal_JOURNAL_ADD_ENTRY summary
bookie_journal_JOURNAL_ADD_ENTRY{success="false",quantile="0.5",} NaN
bookie_journal_JOURNAL_ADD_ENTRY_count{success="false",} 0.0
bookie_journal_JOURNAL_ADD_ENTRY{success="true",quantile="0.99", journalIndex="0"} 10.708
bookie_journal_JOURNAL_ADD_ENTRY_count{success="true", journalIndex="0"} 658.0
jvm_memory_direct_bytes_used{} 1.2E7
odd{path="a\\"b\\\\c"} Infinity
not a sample
"""


def test_bookkeepers_quirks_are_read_as_they_mean():
    got = parse(BOOKKEEPER_4_14)
    assert got.types == {"bookie_SERVER_STATUS": "gauge", "bookie_journal_JOURNAL_ADD_ENTRY": "summary"}
    assert got.sum("bookie_SERVER_STATUS") == 1
    assert got.sum("bookie_journal_JOURNAL_ADD_ENTRY_count") == 658
    (p99,) = got.find("bookie_journal_JOURNAL_ADD_ENTRY", quantile="0.99")
    assert p99.value == 10.708 and p99.label("journalIndex") == "0" and p99.label("success") == "true"
    assert math.isnan(got.find("bookie_journal_JOURNAL_ADD_ENTRY", success="false")[0].value)
    assert got.sum("jvm_memory_direct_bytes_used") == 1.2e7
    (odd,) = got.find("odd")
    assert odd.label("path") == 'a"b\\c' and odd.value == math.inf
    assert [s.name for s in got.matching(r"bookie_journal_.*_count")] == ["bookie_journal_JOURNAL_ADD_ENTRY_count"] * 2

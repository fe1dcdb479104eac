"""Planning an export (pure parts) and turning Spark's failures into the core's errors."""

import pytest

from admin.export.job import spark_error
from admin.export.plan import (
    EntryRange,
    PlannedLedger,
    Selection,
    pack,
    parse_custom_metadata,
    parse_selection,
    parse_size,
    split,
)
from admin.export.session import SparkFailed
from bookie.errors import InvalidArgument, NoSuchEntry
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState, Segment


def ledger(lid: int, entries: int, length: int) -> PlannedLedger:
    md = LedgerMetadata(3, 2, 2, (Segment(0, ("a:1", "b:1", "c:1")),), LedgerState.CLOSED, entries - 1, length)
    return PlannedLedger(lid, md, entries - 1, length)


def test_selection_of_ids_and_ranges():
    selection = parse_selection(["1,2, 10-20", "7", "2"])
    assert selection == Selection(ids=(1, 2, 7), ranges=((10, 20),))
    assert [i for i in range(25) if selection.covers(i)] == [1, 2, 7, *range(10, 21)]
    for bad, message in [
        ("x", "invalid ledger id 'x'"),
        ("5-3", "invalid ledger range '5-3'"),
        (",", "no ledger ids given"),
        ("-4", "invalid ledger id ''"),
    ]:
        with pytest.raises(InvalidArgument, match=message):
            parse_selection(bad)


def test_custom_metadata_filter_and_sizes():
    assert parse_custom_metadata(["app=orders,team=x", "empty="]) == {"app": b"orders", "team": b"x", "empty": b""}
    with pytest.raises(InvalidArgument, match="invalid custom metadata filter 'app': expected KEY=VALUE"):
        parse_custom_metadata("app")
    assert [parse_size(s) for s in ("64MB", "512k", "1GiB", "100", " 2 m ")] == [
        64 << 20,
        512 << 10,
        1 << 30,
        100,
        2 << 20,
    ]
    for bad in ("0", "-1", "1.5MB", "64XB", ""):
        with pytest.raises(InvalidArgument, match="invalid size"):
            parse_size(bad)


def test_ledgers_are_cut_into_ranges_of_about_partition_bytes():
    big = ledger(1, 1000, 100_000)  # 100 bytes an entry
    ranges = split(big, 30_000)
    assert [(r.first, r.last, r.bytes) for r in ranges] == [
        (0, 299, 30_000),
        (300, 599, 30_000),
        (600, 899, 30_000),
        (900, 999, 10_000),
    ]
    assert split(ledger(2, 0, 0), 30_000) == []
    assert [(r.first, r.last) for r in split(ledger(3, 3, 0), 30_000)] == [(0, 2)]  # empty payloads: one range
    assert [(r.first, r.last) for r in split(ledger(4, 2, 10**9), 10)] == [(0, 0), (1, 1)]  # huge entries: one each


def test_small_ranges_share_a_partition_and_order_is_kept():
    ranges = [
        *split(ledger(1, 1000, 100_000), 30_000),
        *split(ledger(2, 10, 1_000), 30_000),
        *split(ledger(3, 10, 1_000), 30_000),
    ]
    partitions = pack(ranges, 30_000)
    assert [[(r.ledger.ledger_id, r.first) for r in p.ranges] for p in partitions] == [
        [(1, 0)],
        [(1, 300)],
        [(1, 600)],
        [(1, 900), (2, 0), (3, 0)],
    ]
    assert [p.index for p in partitions] == [0, 1, 2, 3]
    assert partitions[3].entries == 120 and partitions[3].bytes == 12_000
    tiny = [EntryRange(ledger(i, 1, 1), 0, 0, 1) for i in range(1200)]
    assert [len(p.ranges) for p in pack(tiny, 1 << 20)] == [512, 512, 176]  # a cap on ranges per task


def test_spark_failures_become_the_error_a_task_raised():
    task_failure = Exception(
        "An error occurred while calling o123.save.\n: org.apache.spark.SparkException: Job aborted\n"
        'Traceback (most recent call last):\n  File "reader.py", line 80, in read_entry\n'
        "bookie.errors.NoSuchEntry: ledger 7 entry 3: no readable replica (bookie a:1: status 403)\n"
        "\tat org.apache.spark.api.python.BasePythonRunner..."
    )
    error = spark_error(task_failure)
    assert type(error) is NoSuchEntry and str(error) == "ledger 7 entry 3: no readable replica (bookie a:1: status 403)"
    other = spark_error(Exception("\njava.lang.OutOfMemoryError: Java heap space\n\tat ..."))
    assert type(other) is SparkFailed and str(other) == "Spark failed: java.lang.OutOfMemoryError: Java heap space"
    bug = spark_error(
        Exception(
            "An error occurred while calling o9.save.\n"
            ": org.apache.spark.SparkException: Job aborted due to stage failure\n"
            'Traceback (most recent call last):\n  File "source.py", line 3, in read\n'
            "TypeError: unsupported operand type(s) for +: 'int' and 'str'\n\tat org.apache.spark..."
        )
    )
    assert str(bug) == "Spark failed: TypeError: unsupported operand type(s) for +: 'int' and 'str'"
    jvm = spark_error(Exception("An error occurred while calling o9.save.\n: java.io.IOException: No space left"))
    assert str(jvm) == "Spark failed: java.io.IOException: No space left"

"""The `bookkeeper` data source used directly from a PySpark session."""

import pytest

from bookie.client import BookKeeper


def test_read_from_a_pyspark_session(spark, three_bookies, mixed_ledgers):
    uri = three_bookies.service_uri
    ledgers = mixed_ledgers(uri, 6, seed=11)
    with BookKeeper(uri) as bk:
        tagged = bk.create_ledger(3, 2, 2, custom_metadata={"team": b"ledgers"})
        tagged.add_entries(b"tagged %d" % i for i in range(300))
        tagged.close()
    ids = sorted(ledgers)
    frame = (
        spark.read.format("bookkeeper")
        .option("serviceUri", uri)
        .option("ledgers", f"{ids[0]},{ids[1]}-{ids[-1]},{tagged.ledger_id}")
        .option("partitionBytes", "1k")
        .load()
    )
    assert frame.schema.simpleString() == (
        "struct<ledgerId:bigint,entryId:bigint,payload:binary,length:bigint,lastAddConfirmed:bigint>"
    )
    assert frame.rdd.getNumPartitions() > len(ids)  # the 1 KiB partitions cut ledgers into entry ranges
    rows = frame.collect()
    ledgers[tagged.ledger_id] = [b"tagged %d" % i for i in range(300)]
    assert [(r.ledgerId, r.entryId, bytes(r.payload)) for r in rows] == [
        (lid, eid, p) for lid in sorted(ledgers) for eid, p in enumerate(ledgers[lid])
    ]

    only_tagged = (
        spark.read.format("bookkeeper")
        .option("serviceUri", uri)
        .option("customMetadata", "team=ledgers")
        .load()
        .groupBy("ledgerId")
        .count()
        .collect()
    )
    assert [(r.ledgerId, r["count"]) for r in only_tagged] == [(tagged.ledger_id, 300)]


def test_bad_options_and_missing_ledgers_fail_the_read_naming_them(spark, three_bookies):
    from admin.export.job import spark_error
    from bookie.errors import InvalidArgument, NoSuchLedger

    uri = three_bookies.service_uri

    def failure(**options):
        reader = spark.read.format("bookkeeper")
        for key, value in options.items():
            reader = reader.option(key, value)
        with pytest.raises(Exception) as caught:
            reader.load().collect()
        return spark_error(caught.value)

    missing = failure(serviceUri=uri, ledgers="987654")
    assert isinstance(missing, NoSuchLedger) and str(missing) == "ledger 987654 does not exist"
    bad_size = failure(serviceUri=uri, partitionBytes="lots")
    assert isinstance(bad_size, InvalidArgument) and "invalid size 'lots'" in str(bad_size)
    no_uri = failure(ledgers="1")
    assert isinstance(no_uri, InvalidArgument) and "needs option serviceUri" in str(no_uri)

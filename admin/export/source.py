"""The ``bookkeeper`` Spark data source (PySpark's Python Data Source API, Spark 4+)::

    from admin.export.source import BookKeeperDataSource

    spark.dataSource.register(BookKeeperDataSource)
    df = (spark.read.format("bookkeeper")
          .option("serviceUri", "zk+hierarchical://zk1:2181/ledgers")
          .option("ledgers", "1,2,10-20")          # default: every ledger
          .option("customMetadata", "app=orders")  # KEY=VALUE[,KEY=VALUE]: ledgers carrying all of them
          .option("includeOpen", "true")           # open ledgers too, up to their LAC, never fenced (default false)
          .option("partitionBytes", "64MB")        # about this much per task (default 64MB)
          .option("skipMissing", "true")           # leave out named ledgers that are gone (default false: fail)
          .load())

Rows: ``ledgerId``, ``entryId``, ``payload`` (the entry's bytes), ``length`` (the payload's size) and
``lastAddConfirmed`` (the writer's LAC when it wrote the entry), in ledger and entry order within each partition.

``partitions()`` runs on the driver and plans from metadata (:mod:`admin.export.plan`). ``read()`` runs in the
tasks: each streams its ranges with the client's striped range reads (every bookie of the ensemble sends its
stripe; an entry a bookie cannot give comes from another replica of its write set), digests checked, and yields
Arrow record batches; small ranges (small ledgers) are read several at once. The client is created inside the
task's Python worker and kept for the worker's later tasks. The driver's and the tasks' clients take TLS and the
protocol from bkctl's variables (``BKCTL_TLS_*``, ``BKCTL_USE_V2_WIRE_PROTOCOL``), which bkctl sets for the workers.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
from collections import OrderedDict
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from admin.export.plan import (
    DEFAULT_PARTITION_BYTES,
    EntryRange,
    Partition,
    parse_custom_metadata,
    parse_selection,
    parse_size,
    plan_export,
)
from bookie.client.bookkeeper import BookKeeper, ReadHandle
from bookie.client.config import ClientConfig
from bookie.client.reader import LedgerReader
from bookie.errors import InvalidArgument

log = logging.getLogger(__name__)
SCHEMA = "ledgerId long, entryId long, payload binary, length long, lastAddConfirmed long"
ARROW_SCHEMA = pa.schema(
    [
        ("ledgerId", pa.int64()),
        ("entryId", pa.int64()),
        ("payload", pa.binary()),
        ("length", pa.int64()),
        ("lastAddConfirmed", pa.int64()),
    ]
)
# A backup's files (admin/backup) add the entry's stored ledger-length field: with lastAddConfirmed, all it stored.
BACKUP_ARROW_SCHEMA = ARROW_SCHEMA.append(pa.field("ledgerLength", pa.int64()))
BATCH_ROWS = 8192
BATCH_BYTES = 8 << 20
SMALL_RANGE_BYTES = 256 << 10  # below this, a range's round trips cost more than its bytes
READ_TOGETHER = 32  # small ranges in flight at once: 500 ledgers of 5 entries took 1.3 s one by one, 0.6 s so


def _flag(options, name: str) -> bool:
    value = str(options.get(name, "false")).strip().lower()
    if value not in ("true", "false"):
        raise InvalidArgument(f"option {name} must be true or false, got {value!r}")
    return value == "true"


_clients: OrderedDict[str, BookKeeper] = OrderedDict()
CLIENTS_KEPT = 4  # clusters a long-lived worker keeps a client of (tests export from many)


def _close_clients() -> None:
    while _clients:
        _clients.popitem()[1].close()


def _config() -> ClientConfig:
    """bkctl's TLS and protocol, from the variables bkctl gives the Spark workers it starts (``worker_environment``)."""
    return ClientConfig.from_environment(os.environ)


def task_client(service_uri: str) -> BookKeeper:
    """This worker process's client of the cluster: Spark reuses Python workers, so later tasks find it open."""
    client = _clients.get(service_uri)
    if client is None:
        if not _clients:
            atexit.register(_close_clients)
        client = _clients[service_uri] = BookKeeper(service_uri, _config())
        while len(_clients) > CLIENTS_KEPT:
            _clients.popitem(last=False)[1].close()
    _clients.move_to_end(service_uri)
    return client


def _batch(
    ledger_ids: list[int],
    entry_ids: list[int] | range,
    payloads: list[bytes],
    lacs: list[int],
    lengths: list[int] | None = None,
) -> pa.RecordBatch:
    """A batch of the export's schema; with ``lengths`` (the entries' ledger-length fields), of the backup's."""
    payload = pa.array(payloads, pa.binary())
    columns = [
        pa.array(ledger_ids, pa.int64()),
        pa.array(entry_ids, pa.int64()),
        payload,
        pc.binary_length(payload).cast(pa.int64()),
        pa.array(lacs, pa.int64()),
    ]
    if lengths is None:
        return pa.RecordBatch.from_arrays(columns, schema=ARROW_SCHEMA)
    return pa.RecordBatch.from_arrays([*columns, pa.array(lengths, pa.int64())], schema=BACKUP_ARROW_SCHEMA)


def _reader(bk: BookKeeper, entry_range: EntryRange) -> LedgerReader:
    ledger = entry_range.ledger
    return LedgerReader(bk.core, ledger.ledger_id, ledger.metadata, ledger.password, ledger.last_entry_id)


def _warn(reader: LedgerReader) -> None:
    for message in reader.corruptions:
        log.warning("%s (read from another replica)", message)


def _stream(bk: BookKeeper, entry_range: EntryRange, ledger_length: bool) -> Iterator[pa.RecordBatch]:
    """A large range, streamed: the client reads ahead while batches are built and handed to Spark."""
    reader = _reader(bk, entry_range)
    lid, first, size = entry_range.ledger.ledger_id, entry_range.first, 0
    payloads: list[bytes] = []
    lacs: list[int] = []
    lengths: list[int] | None = [] if ledger_length else None
    for entry in ReadHandle(bk, reader).iter_entries(entry_range.first, entry_range.last):
        payloads.append(entry.payload)
        lacs.append(entry.last_add_confirmed)
        if lengths is not None:
            lengths.append(entry.length)
        size += len(entry.payload)
        if len(payloads) >= BATCH_ROWS or size >= BATCH_BYTES:
            yield _batch([lid] * len(payloads), range(first, first + len(payloads)), payloads, lacs, lengths)
            first, payloads, lacs, size = first + len(payloads), [], [], 0
            lengths = [] if ledger_length else None
    if payloads:
        yield _batch([lid] * len(payloads), range(first, first + len(payloads)), payloads, lacs, lengths)
    _warn(reader)


def _read_together(bk: BookKeeper, ranges: list[EntryRange], ledger_length: bool) -> pa.RecordBatch:
    """Small ranges read at once (each costs round trips more than bytes), as one batch."""
    readers = [_reader(bk, r) for r in ranges]

    async def read_all():
        return await asyncio.gather(*(reader.read(r.first, r.last) for reader, r in zip(readers, ranges, strict=True)))

    results = bk.run(read_all())
    ledger_ids: list[int] = []
    entry_ids: list[int] = []
    payloads: list[bytes] = []
    lacs: list[int] = []
    lengths: list[int] = []
    for entry_range, entries in zip(ranges, results, strict=True):
        ledger_ids += [entry_range.ledger.ledger_id] * len(entries)
        entry_ids += range(entry_range.first, entry_range.last + 1)
        payloads += [e.payload for e in entries]
        lacs += [e.last_add_confirmed for e in entries]
        if ledger_length:
            lengths += [e.length for e in entries]
    for reader in readers:
        _warn(reader)
    return _batch(ledger_ids, entry_ids, payloads, lacs, lengths if ledger_length else None)


def read_partition(bk: BookKeeper, partition: Partition, ledger_length: bool = False) -> Iterator[pa.RecordBatch]:
    """The partition's entries in order, as record batches of up to ``BATCH_ROWS`` rows or about ``BATCH_BYTES``:
    large ranges streamed one after the other, small ones read ``READ_TOGETHER`` at once. With ``ledger_length``,
    in the backup's schema (``BACKUP_ARROW_SCHEMA``)."""
    ranges, start = partition.ranges, 0
    while start < len(ranges):
        if ranges[start].bytes >= SMALL_RANGE_BYTES:
            yield from _stream(bk, ranges[start], ledger_length)
            start += 1
            continue
        end, size = start, 0
        while (
            end < len(ranges)
            and end - start < READ_TOGETHER
            and ranges[end].bytes < SMALL_RANGE_BYTES
            and size + ranges[end].bytes <= BATCH_BYTES
        ):
            size += ranges[end].bytes
            end += 1
        end = max(end, start + 1)
        if any(r.last >= r.first for r in ranges[start:end]):
            yield _read_together(bk, list(ranges[start:end]), ledger_length)
        start = end


class BookKeeperReader(DataSourceReader):
    def __init__(self, options):
        self.service_uri = options.get("serviceUri")
        if not self.service_uri:
            raise InvalidArgument(
                'the bookkeeper data source needs option serviceUri, e.g. "zk+hierarchical://zk1:2181/ledgers"'
            )
        ledgers = options.get("ledgers")
        self.selection = parse_selection(ledgers) if ledgers else None
        meta = options.get("customMetadata")
        self.custom_metadata = parse_custom_metadata(meta) if meta else {}
        self.include_open = _flag(options, "includeOpen")
        self.skip_missing = _flag(options, "skipMissing")
        self.partition_bytes = parse_size(options.get("partitionBytes", str(DEFAULT_PARTITION_BYTES)))

    def partitions(self) -> list[InputPartition]:
        with BookKeeper(self.service_uri, _config()) as bk:
            plan = plan_export(
                bk, self.selection, self.custom_metadata, self.include_open, self.partition_bytes, self.skip_missing
            )
        return [InputPartition(p) for p in plan.partitions] or [InputPartition(Partition(0, ()))]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(task_client(self.service_uri), partition.value)


class BookKeeperDataSource(DataSource):
    """Ledgers as a DataFrame: ``spark.read.format("bookkeeper")``, once registered."""

    @classmethod
    def name(cls) -> str:
        return "bookkeeper"

    def schema(self) -> str:
        return SCHEMA

    def reader(self, schema) -> BookKeeperReader:
        return BookKeeperReader(self.options)

"""The export's files, written and read back by Spark's Python tasks with pyarrow.

Why the tasks write the files themselves rather than handing rows to Spark's writer: on a 2-core machine that also
runs the bookies, Spark's JVM path (Arrow batches to rows, rows to Parquet) took ~5.3 CPU-seconds per 537 MB —
more than the bookies' reads — and held the export to ~0.6x a raw client read; pyarrow writes the same Parquet
from the Arrow batches the reader already has in ~0.3 s.

Formats: Parquet (``ledgerId, entryId, payload, length, lastAddConfirmed``), or JSON lines with the payload in
base64, as Spark's own JSON writer renders binary columns.

Outputs are on any file system pyarrow opens: local paths, ``hdfs://``, ``s3://`` (``s3a://`` is read as
``s3://``), ``gs://``, ``abfs://``.

The checksum ties the files to what was read from the bookies: XOR over entries of an 8-byte BLAKE2b of
``ledgerId | entryId | payload``. XOR keeps it independent of file and row order; hashing the ids with the payload
catches an entry moved or repeated.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from admin.export.source import ARROW_SCHEMA
from bookie.errors import InvalidArgument

SUFFIX = {"parquet": "parquet", "json": "json"}
IDS = struct.Struct(">qq")


def filesystem(path: str, verb: str = "write to"):
    """``(pyarrow file system, path on it)`` for a location; ``verb`` says what was to be done there when the
    location is not one pyarrow opens."""
    from pyarrow import fs

    if "://" not in path or path.startswith("file://"):
        return fs.LocalFileSystem(), os.path.abspath(path.removeprefix("file://"))
    uri = "s3://" + path[len("s3a://") :] if path.startswith("s3a://") else path
    try:
        return fs.FileSystem.from_uri(uri)
    except (pa.ArrowException, ValueError, OSError) as exc:
        raise InvalidArgument(f"cannot {verb} {path}: {exc}") from None


def is_empty_or_missing(path: str) -> bool:
    from pyarrow import fs

    filesystem_, root = filesystem(path)
    info = filesystem_.get_file_info(root)
    if info.type == fs.FileType.NotFound:
        return True
    if info.type != fs.FileType.Directory:
        return False
    return not filesystem_.get_file_info(fs.FileSelector(root))


@dataclass
class LedgerStats:
    """Per ledger: entries, payload bytes, first and last entry id, checksum."""

    ledgers: dict[int, list[int]] = field(default_factory=dict)  # ledgerId -> [entries, bytes, first, last, xor]

    def add(self, batch: pa.RecordBatch) -> None:
        ids, entry_ids, payloads = (batch.column(i).to_pylist() for i in range(3))
        pack, blake = IDS.pack, hashlib.blake2b
        for ledger_id, entry_id, payload in zip(ids, entry_ids, payloads, strict=True):
            stats = self.ledgers.get(ledger_id)
            if stats is None:
                stats = self.ledgers[ledger_id] = [0, 0, entry_id, entry_id, 0]
            stats[0] += 1
            stats[1] += len(payload)
            stats[2] = min(stats[2], entry_id)
            stats[3] = max(stats[3], entry_id)
            stats[4] ^= int.from_bytes(blake(pack(ledger_id, entry_id) + payload, digest_size=8).digest(), "big")

    def merge(self, other: LedgerStats) -> None:
        for ledger_id, (entries, size, first, last, xor) in other.ledgers.items():
            mine = self.ledgers.setdefault(ledger_id, [0, 0, first, last, 0])
            mine[0] += entries
            mine[1] += size
            mine[2], mine[3] = min(mine[2], first), max(mine[3], last)
            mine[4] ^= xor

    @property
    def checksum(self) -> int:
        result = 0
        for stats in self.ledgers.values():
            result ^= stats[4]
        return result


def _json_lines(batch: pa.RecordBatch) -> bytes:
    columns = [batch.column(i).to_pylist() for i in range(5)]
    return "".join(
        f'{{"ledgerId":{lid},"entryId":{eid},"payload":"{base64.b64encode(p).decode()}","length":{n},'
        f'"lastAddConfirmed":{lac}}}\n'
        for lid, eid, p, n, lac in zip(*columns, strict=True)
    ).encode()


class HashingStream:
    """An output stream that hashes (SHA-256) and counts what goes through it on its way to ``stream``: a file's
    checksum as it is written, without reading it again."""

    def __init__(self, stream):
        self._stream = stream
        self._sha256 = hashlib.sha256()
        self.size = 0
        self.closed = False

    def write(self, data) -> int:
        self._sha256.update(data)
        self.size += len(data)
        self._stream.write(data)
        return len(data)

    def tell(self) -> int:
        return self.size

    def flush(self) -> None:
        self._stream.flush()

    def close(self) -> None:  # the caller closes the stream it opened
        self.closed = True

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    @property
    def sha256(self) -> str:
        return self._sha256.hexdigest()


def write_file(
    stream,
    fmt: str,
    batches: Iterable[pa.RecordBatch],
    stats: LedgerStats | None,
    schema: pa.Schema = ARROW_SCHEMA,
) -> tuple[int, int]:
    """Write the batches to an open output stream; returns (rows, payload bytes)."""
    rows = size = 0
    writer = pq.ParquetWriter(stream, schema, use_dictionary=["ledgerId"]) if fmt == "parquet" else None
    try:
        for batch in batches:
            if writer is not None:
                writer.write_batch(batch)
            else:
                stream.write(_json_lines(batch))
            rows += batch.num_rows
            size += pc.sum(batch.column(3)).as_py() or 0
            if stats is not None:
                stats.add(batch)
    finally:
        if writer is not None:
            writer.close()
    return rows, size


def read_file(filesystem_, path: str, fmt: str) -> Iterator[pa.RecordBatch]:
    """The rows of one export file, as record batches of the export's schema."""
    if fmt == "parquet":
        with filesystem_.open_input_file(path) as f:
            yield from pq.ParquetFile(f).iter_batches(columns=["ledgerId", "entryId", "payload"])
        return
    with filesystem_.open_input_stream(path) as f:
        rows = [json.loads(line) for line in f.read().splitlines() if line.strip()]
    yield pa.RecordBatch.from_pylist(
        [{"ledgerId": r["ledgerId"], "entryId": r["entryId"], "payload": base64.b64decode(r["payload"])} for r in rows],
        schema=pa.schema(list(ARROW_SCHEMA)[:3]),
    )

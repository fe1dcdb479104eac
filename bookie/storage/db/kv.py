"""The RocksDB databases of DbLedgerStorage, opened as BookKeeper opens them (``KeyValueStorageRocksDB``).

Two databases per index directory, ``<indexDir>/current/locations`` and ``<indexDir>/current/ledgers``, each in the
default column family only, with RocksDB's bytewise comparator (keys are big-endian, so they sort as numbers).
What matters for the two implementations to open each other's files, as BookKeeper 4.17.4 sets it
(``bookkeeper-server/src/main/java/org/apache/bookkeeper/bookie/storage/ldb/KeyValueStorageRocksDB.java``,
``initializeRocksDBWithBookieConf``): block-based tables of ``format_version`` 5 (``dbStorage_rocksDB_format_version``)
with kxxHash checksums (``dbStorage_rocksDB_checksum_type``); the locations database LZ4-compressed
(``dbStorage_rocksDB_lz4CompressionEnabled``), with a full bloom filter, the ledgers database with RocksDB's
default (Snappy). Every other option is tuning, and is BookKeeper's too. Batches are written with ``sync``.

The binding is rocksdict: a maintained binding that installs as a wheel (RocksDB 10.4 compiled in, with LZ4 and
Snappy; no compiler needed), and that opens databases rocksdbjni (BookKeeper's, 9.x) wrote, and writes ones rocksdbjni
opens (tested both ways: tests/interop/test_db_storage.py::test_rocksdbjni_and_rocksdict_open_each_others_databases).
rocksdict leaves a ``rocksdict-config.json`` of its own in the database directory; RocksDB ignores it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from bookie.errors import BKError, NotFound
from bookie.files import PRIVATE_DIR, PRIVATE_FILE, private_dirs

if TYPE_CHECKING:
    from rocksdict import Options, Rdict

LOCATIONS, LEDGERS = "locations", "ledgers"
MB = 1024 * 1024


class RocksDbMissing(BKError):
    """The RocksDB binding is not installed."""


@dataclass(frozen=True)
class RocksDbConfig:
    """BookKeeper's ``dbStorage_rocksDB_*`` keys that shape the databases (defaults: BookKeeper's)."""

    block_cache_size: int = 64 * MB  # dbStorage_rocksDB_blockCacheSize, per ledger directory
    write_buffer_size_mb: int = 64
    sst_size_mb: int = 64
    block_size: int = 64 * 1024
    bloom_filter_bits_per_key: int = 10
    num_levels: int = -1
    num_files_in_level0: int = 4
    max_size_in_level1_mb: int = 256
    lz4_compression: bool = True
    format_version: int = 5
    checksum_type: str = "kxxHash"  # kNoChecksum, kCRC32c, kxxHash, kxxHash64, kXXH3


def _rocksdict() -> ModuleType:
    try:
        import rocksdict
    except ImportError:
        raise RocksDbMissing(
            "DbLedgerStorage needs the RocksDB binding rocksdict, which is not installed: pip install rocksdict"
        ) from None
    return rocksdict


def _options(kind: str, config: RocksDbConfig) -> Options:
    rd = _rocksdict()
    options: Options = rd.Options(raw_mode=True)
    options.create_if_missing(True)
    table = rd.BlockBasedOptions()
    table.set_format_version(config.format_version)
    checksums = {
        "knochecksum": rd.ChecksumType.no_checksum,
        "kcrc32c": rd.ChecksumType.crc32c,
        "kxxhash": rd.ChecksumType.xxhash,
        "kxxhash64": rd.ChecksumType.xxhash64,
        "kxxh3": rd.ChecksumType.xxh3,
    }
    table.set_checksum_type(checksums[config.checksum_type.lower()]())
    if kind == LOCATIONS:
        if config.lz4_compression:
            options.set_compression_type(rd.DBCompressionType.lz4())
        options.set_write_buffer_size(config.write_buffer_size_mb * MB)
        options.set_max_write_buffer_number(4)
        if config.num_levels > 0:
            options.set_num_levels(config.num_levels)
        options.set_level_zero_file_num_compaction_trigger(config.num_files_in_level0)
        options.set_max_bytes_for_level_base(config.max_size_in_level1_mb * MB)
        # BookKeeper asks for 32 background jobs; a bookie here shares its cores with Python's work
        options.set_max_background_jobs(max(2, os.cpu_count() or 2))
        options.set_max_total_wal_size(512 * MB)
        options.set_max_open_files(-1)
        options.set_target_file_size_base(config.sst_size_mb * MB)
        options.set_delete_obsolete_files_period_micros(3600 * 1_000_000)
        table.set_block_size(config.block_size)
        table.set_block_cache(rd.Cache(config.block_cache_size))
        if config.bloom_filter_bits_per_key > 0:
            table.set_bloom_filter(config.bloom_filter_bits_per_key, False)
        table.set_cache_index_and_filter_blocks(True)
        options.set_level_compaction_dynamic_level_bytes(True)
    options.set_block_based_table_factory(table)
    options.set_keep_log_file_num(30)
    options.set_log_file_time_to_roll(24 * 3600)
    return options


class _PrivateUmask:
    """Umask 077 added to the process's while any database is open (and the one before restored after the last).

    RocksDB creates its files itself (SSTs, which hold the ledgers' master keys, the write-ahead log, MANIFEST,
    LOG, OPTIONS), from its background threads as well as at open, always with mode 0644 less the umask: neither
    RocksDB nor rocksdict has an option for the mode, so the umask is the only way to make them 0600 (bookie/files.py
    does it by mode and chmod for the files we create). Only bits are added, never taken away, so no other file of
    the process becomes less private. A bookie started by bkctl's sandbox already runs under 077
    (bookie/local/process.py) and so does the systemd unit of ``bkctl bookie service``; ``bkctl bookie run`` from a
    shell, and the offline commands, run under the user's."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.open = 0
        self.before = 0

    def __enter__(self) -> None:
        with self.lock:
            if self.open == 0:
                self.before = os.umask(0o077)
                os.umask(self.before | 0o077)
            self.open += 1

    def release(self) -> None:
        with self.lock:
            self.open -= 1
            if self.open == 0:
                os.umask(self.before)

    def __exit__(self, *exc: object) -> None:
        if exc[0] is not None:  # the database did not open
            self.release()


_umask = _PrivateUmask()


def _make_private(path: Path) -> None:
    """A database made before (by a bookie under a laxer umask, or a Java one) made 0700 and its files 0600."""
    private_dirs(path)
    for entry in os.scandir(path):
        if entry.is_file(follow_symlinks=False) and (entry.stat().st_mode & 0o777) != PRIVATE_FILE:
            os.chmod(entry.path, PRIVATE_FILE)
        elif entry.is_dir(follow_symlinks=False) and (entry.stat().st_mode & 0o777) != PRIVATE_DIR:
            os.chmod(entry.path, PRIVATE_DIR)


def has_database(index_dir: str | os.PathLike[str], kind: str) -> bool:
    """Whether ``<index_dir>/current/<kind>`` holds a RocksDB database (its CURRENT file)."""
    return (Path(index_dir) / "current" / kind / "CURRENT").exists()


class KeyValueStorage:
    """One RocksDB database: ``<indexDir>/current/<kind>``. ``read_only`` for offline tools (nothing is written,
    not even the recovery of the write-ahead log)."""

    def __init__(self, index_dir: Path, kind: str, config: RocksDbConfig | None = None, read_only: bool = False):
        rd = _rocksdict()
        self.path = Path(index_dir) / "current" / kind
        if read_only and not has_database(index_dir, kind):
            raise NotFound(f"{self.path}: no RocksDB database there (not a DbLedgerStorage directory?)")
        if not read_only:
            _make_private(self.path)  # and its parents, when missing
        access = rd.AccessType.read_only(False) if read_only else rd.AccessType.read_write()
        try:
            with _umask:
                self.db: Rdict = rd.Rdict(str(self.path), _options(kind, config or RocksDbConfig()), access_type=access)
        except Exception as exc:  # noqa: BLE001 (rocksdict raises a bare Exception with RocksDB's message)
            if "LOCK" in str(exc):
                raise BKError(f"{self.path} is open in another process (a running bookie?): {exc}") from None
            raise BKError(f"cannot open RocksDB database {self.path}: {exc}") from None
        self._closed = False
        self._sync = rd.WriteOptions()
        self._sync.sync = True

    def get(self, key: bytes) -> bytes | None:
        with self._disk():
            value = self.db.get(key)
        return value if isinstance(value, bytes) else None

    def put(self, key: bytes, value: bytes) -> None:
        """Not synced: :meth:`sync` (or a synced batch) makes it durable."""
        with self._disk():
            self.db.put(key, value)

    def delete(self, key: bytes) -> None:
        with self._disk():
            self.db.delete(key)

    @contextlib.contextmanager
    def _disk(self) -> Iterator[None]:
        """RocksDB's I/O errors as OSError, what the bookie takes for its disk failing (rocksdict raises a bare
        Exception with RocksDB's status: "IO error: No space left on device: ...")."""
        try:
            yield
        except OSError:
            raise
        except Exception as exc:
            message = str(exc)
            if not message.startswith("IO error"):
                raise
            code = errno.ENOSPC if "No space left" in message else errno.EIO
            raise OSError(code, f"RocksDB {self.path}: {message}") from None

    def write(self, puts: Iterable[tuple[bytes, bytes]], delete_ranges: Iterable[tuple[bytes, bytes]] = ()) -> None:
        """Apply puts and range deletes (``[begin, end)``) as one synced batch."""
        batch = _rocksdict().WriteBatch(raw_mode=True)
        for begin, end in delete_ranges:
            batch.delete_range(begin, end)
        for key, value in puts:
            batch.put(key, value)
        with self._disk():
            self.db.write(batch, self._sync)

    def sync(self) -> None:
        """Make the puts and deletes before it durable (BookKeeper writes an empty synced batch)."""
        with self._disk():
            self.db.write(_rocksdict().WriteBatch(raw_mode=True), self._sync)

    def floor(self, key: bytes) -> tuple[bytes, bytes] | None:
        """The record with the greatest key <= ``key``."""
        it = self.db.iter()
        it.seek_for_prev(key)
        if not it.valid():
            return None
        return it.key(), it.value()

    def items(self, first: bytes = b"", end: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        """Records with ``first <= key < end``, in key order."""
        it = self.db.iter()
        if first:
            it.seek(first)
        else:
            it.seek_to_first()
        while it.valid():
            key = it.key()
            if end is not None and key >= end:
                return
            yield key, it.value()
            it.next()

    def count(self) -> int:
        """RocksDB's estimate of the number of keys."""
        return self.db.property_int_value("rocksdb.estimate-num-keys") or 0

    def compact(self) -> None:
        self.db.compact_range(None, None)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.db.close()
            _umask.release()

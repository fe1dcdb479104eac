"""Bookie configuration: a ``bk_server.conf`` properties file with Apache BookKeeper's key names and defaults
(BookKeeper: conf/ServerConfiguration.java), overridden by flags. One file serves both kinds of bookie: a key this
bookie does not use is listed in ``BookieConfig.unused_keys`` (the bookie warns once per key at start), and a key whose
value asks for something this bookie cannot do (``HONOURED_VALUES``) is refused, in one line, rather than run with a
configuration other than the one written."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import ClassVar

from bookie import daemon
from bookie.conf import load_properties, metadata_service_uri
from bookie.errors import InvalidArgument
from bookie.meta.bookie_id import check_bookie_id
from bookie.meta.security import KEYS as ZK_SECURITY_KEYS
from bookie.meta.security import ZkSecurity
from bookie.server.auth import BOOKIE_AUTHZ_FACTORY, Authorizer
from bookie.storage.config import StorageConfig
from bookie.storage.db import DB_LEDGER_STORAGE
from bookie.storage.db.kv import RocksDbConfig
from bookie.storage.db.storage import DbConfig
from bookie.storage.dirs import DiskThresholds
from bookie.storage.gc import GcConfig
from bookie.tls import KEYS as TLS_KEYS
from bookie.tls import TLS_CONTEXT_FACTORY, Tls, TlsSettings


def _bool(text: str) -> bool:
    value = text.strip().lower()
    if value not in ("true", "false"):
        raise ValueError("expected true or false")
    return value == "true"


CONVERTERS: dict[str, Callable[[str], object]] = {"int": int, "float": float, "bool": _bool, "str": str}


# What BookKeeper's caches default to: a share of the JVM's direct memory, which is by default its heap, by default a
# quarter of the machine's memory (PlatformDependent.estimateMaxDirectMemory).
DEFAULT_DIRECT_MEMORY = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4
MB = 1024 * 1024
# BookKeeper keys whose value this bookie must honour or refuse: key -> (values it honours, compared without case,
# and what it does instead). Their BookKeeper defaults are among the values honoured.
HONOURED_VALUES: dict[str, tuple[frozenset[str], str]] = {
    "ledgerStorageClass": (
        frozenset(
            {
                "org.apache.bookkeeper.bookie.sortedledgerstorage",
                "org.apache.bookkeeper.bookie.interleavedledgerstorage",
                DB_LEDGER_STORAGE.lower(),
            }
        ),
        "this bookie keeps entries as InterleavedLedgerStorage/SortedLedgerStorage or DbLedgerStorage do",
    ),
    "dbStorage_directIOEntryLogger": (
        frozenset({"false"}),
        "this bookie's entry logs are written through the page cache",
    ),
    "entryLogPerLedgerEnabled": (frozenset({"false"}), "this bookie interleaves every ledger in one entry log"),
    "bookieAuthProviderFactoryClass": (
        frozenset({"", BOOKIE_AUTHZ_FACTORY.lower()}),
        f"this bookie authenticates clients with {BOOKIE_AUTHZ_FACTORY} (certificate roles) only",
    ),
}
# Read from the file by someone else than the fields below (bookie.conf.metadata_service_uri, bookie.meta.security,
# bookie.tls).
READ_ELSEWHERE = frozenset({"zkServers", "zkLedgersRootPath"}) | ZK_SECURITY_KEYS | TLS_KEYS


@dataclass
class BookieConfig:
    metadataServiceUri: str = "zk+hierarchical://localhost:2181/ledgers"
    bookiePort: int = 3181
    # who the bookie is and where it listens, as in BookKeeper (bookie/server/network.py)
    bookieId: str = ""
    advertisedAddress: str = ""
    listeningInterface: str = ""  # a network interface name (eth0); none: listen on every interface
    useHostNameAsBookieID: bool = False
    useShortHostName: bool = False
    allowLoopback: bool = False
    # ours: the port of the gRPC admin service, advertised in the registration (0: bookiePort + 1, -1: none)
    bkctlAdminPort: int = 0
    bookieRack: str = ""  # ours: published in the registration for rack-aware placement
    # comma-separated lists, as BookKeeper reads them: one journal (and group-commit thread) per journal directory,
    # entry logs spread over the ledger directories, index files over the index directories
    journalDirectories: str = "/tmp/bk-txn"
    ledgerDirectories: str = "/tmp/bk-data"
    indexDirectories: str = ""  # = ledgerDirectories
    allowStorageExpansion: bool = False  # ledger and index directories may be added to a bookie's cookie
    journalSyncData: bool = True
    journalMaxGroupWaitMSec: float = 2.0
    journalFlushWhenQueueEmpty: bool = False
    journalBufferedWritesThreshold: int = 524288
    journalMaxSizeMB: int = 2048
    journalPreAllocSizeMB: int = 16
    journalMaxBackups: int = 5
    skipReplayJournalInvalidRecord: bool = False  # BookKeeper's key; here it skips only the damaged records
    logSizeLimit: int = 1073741824
    flushInterval: int = 10000
    flushEntrylogBytes: int = 0
    pageLimit: int = -1
    openFileLimit: int = 20000
    nettyMaxFrameSizeBytes: int = 5242880
    diskUsageThreshold: float = 0.95
    diskUsageWarnThreshold: float = 0.90
    diskUsageLwmThreshold: float = -1.0  # -1: diskUsageThreshold
    minUsableSizeForEntryLogCreation: int = -1  # -1: logSizeLimit (BookKeeper's "(long) 1.2 * logSizeLimit")
    minUsableSizeForIndexFileCreation: int = 100 * 1024 * 1024
    diskCheckInterval: int = 10000
    readOnlyModeEnabled: bool = True
    prometheusStatsHttpPort: int = 8000
    prometheusStatsHttpAddress: str = "0.0.0.0"
    prometheusStatsLatencyRolloverSeconds: int = 60  # the window of the quantiles in /metrics
    httpServerEnabled: bool = False  # BookKeeper's HTTP admin API (bookie/server/http/)
    httpServerPort: int = 8080
    httpServerHost: str = "0.0.0.0"
    # HTTPS for the HTTP admin API, as BookKeeper's (a client certificate required; key stores PKCS12 here)
    httpServerTlsEnable: bool = False
    httpServerKeyStorePath: str = ""
    httpServerKeyStorePassword: str = ""
    httpServerTrustStorePath: str = ""
    httpServerTrustStorePassword: str = ""
    # who may connect (BookieAuthZFactory and its authorizedRoles) and, ours, who may administer (bookie/server/auth.py)
    bookieAuthProviderFactoryClass: str = ""
    authorizedRoles: str = ""
    bkctlAdminRoles: str = ""
    # ours, off by default: a role without admin rights reads only the ledgers whose master key its connection showed
    # (an add, a fencing read, WRITE_LAC, or a v3 read carrying the key). It breaks the plain reads of every
    # BookKeeper client (the Java client, Pulsar brokers) and of ours, which never carry the key: with it on, such a
    # role reads a ledger only on the connection that wrote or recovered it (bookie/server/auth.py)
    bkctlReadRequiresMasterKey: bool = False
    # ours: this many I/O errors reading the ledger disks within a minute declare them failed and stop the bookie, as
    # BookKeeper's disk checker does for a directory it cannot use (0: never; each read still answers EIO)
    bkctlDiskReadErrorsToFail: int = 10
    gcWaitTime: int = 600000
    minorCompactionThreshold: float = 0.2
    minorCompactionInterval: int = 3600
    majorCompactionThreshold: float = 0.8
    majorCompactionInterval: int = 86400
    compactionRate: int = 1000
    gcOverreplicatedLedgerWaitTime: int = 86400000  # ms; <= 0: never (bookie/server/overreplication.py)
    zkTimeout: int = 10000
    zkEnableSecurity: bool = False  # ZooKeeper ACLs and credentials: bookie.meta.security
    ledgerStorageClass: str = "org.apache.bookkeeper.bookie.SortedLedgerStorage"
    # DbLedgerStorage (-1: BookKeeper's automatic size, a share of DEFAULT_DIRECT_MEMORY)
    dbStorage_writeCacheMaxSizeMb: int = -1
    dbStorage_readAheadCacheMaxSizeMb: int = -1
    dbStorage_readAheadCacheBatchSize: int = 100
    dbStorage_readAheadCacheBatchBytesSize: int = -1
    dbStorage_maxThrottleTimeMs: int = 10000
    dbStorage_rocksDB_blockCacheSize: int = -1
    # the others' defaults are RocksDbConfig's (BookKeeper's), which the storage also uses without a bookie
    dbStorage_rocksDB_writeBufferSizeMB: int = RocksDbConfig.write_buffer_size_mb
    dbStorage_rocksDB_sstSizeInMB: int = RocksDbConfig.sst_size_mb
    dbStorage_rocksDB_blockSize: int = RocksDbConfig.block_size
    dbStorage_rocksDB_bloomFilterBitsPerKey: int = RocksDbConfig.bloom_filter_bits_per_key
    dbStorage_rocksDB_numLevels: int = RocksDbConfig.num_levels
    dbStorage_rocksDB_numFilesInLevel0: int = RocksDbConfig.num_files_in_level0
    dbStorage_rocksDB_maxSizeInLevel1MB: int = RocksDbConfig.max_size_in_level1_mb
    dbStorage_rocksDB_lz4CompressionEnabled: bool = RocksDbConfig.lz4_compression
    dbStorage_rocksDB_format_version: int = RocksDbConfig.format_version
    dbStorage_rocksDB_checksum_type: str = RocksDbConfig.checksum_type

    ALIASES: ClassVar[dict[str, str]] = {
        "entryLogSizeLimit": "logSizeLimit",
        "journalDirectory": "journalDirectories",
        "ledgerDirectory": "ledgerDirectories",
    }

    def __post_init__(self) -> None:
        # Set by load, and no configuration keys themselves (so not fields):
        self.unused_keys: list[str] = []  # keys of the file and overrides that this bookie does not use
        self.properties: dict[str, str] = {}  # every key of the file and overrides, as written (never changed)
        self.zk_security = ZkSecurity()  # how the bookie authenticates to ZooKeeper (its credentials read at load)
        self.tls: Tls | None = None  # the bookie port's TLS (and the gRPC admin port's), from the tls* keys
        self.authorizer = Authorizer()

    @classmethod
    def load(cls, path: str | None = None, overrides: dict[str, str] | None = None) -> BookieConfig:
        """Defaults, then the file, then ``overrides`` (flags and ``--set KEY=VALUE``)."""
        props = load_properties(path) if path else {}
        if uri := metadata_service_uri(props):
            props["metadataServiceUri"] = uri
        props.update(overrides or {})
        config = cls()
        known = {f.name: f for f in fields(cls)}
        where = f" in {path}" if path else ""
        config.properties = {k: v.strip() for k, v in props.items()}
        config.unused_keys = sorted(
            k
            for k in props
            if cls.ALIASES.get(k, k) not in known and k not in HONOURED_VALUES and k not in READ_ELSEWHERE
        )
        for key, (honoured, instead) in HONOURED_VALUES.items():
            if key in props and props[key].strip().lower() not in honoured:
                raise InvalidArgument(f"{key}={props[key].strip()}{where} cannot be honoured: {instead}")
        for raw_key, text in props.items():
            key = cls.ALIASES.get(raw_key, raw_key)
            field = known.get(key)
            if field is None:
                continue
            convert = CONVERTERS[str(field.type)]  # a field's type is its annotation's text (future annotations)
            try:
                setattr(config, key, convert(text.strip()))
            except ValueError:
                raise InvalidArgument(f"bad value for {raw_key}{where}: {text!r} is not a valid {field.type}") from None
        config.validate()
        # read now: a missing or readable-by-others credentials file stops the start before anything is claimed
        config.zk_security = ZkSecurity.from_settings(config.properties, where=where)
        # read now: a missing or readable-by-others key file stops the start before anything is claimed
        settings = TlsSettings.from_properties(config.properties, "server", where)
        config.tls = Tls(settings, "server") if settings else None
        config.authorizer = Authorizer.from_config(
            config.bookieAuthProviderFactoryClass, config.authorizedRoles, config.bkctlAdminRoles
        )
        if config.authorizer.enabled and config.tls is None:
            # a Java bookie starts, then answers every request EUA (no TLS, so no certificate): refused instead
            raise InvalidArgument(
                f"bookieAuthProviderFactoryClass=BookieAuthZFactory{where} needs TLS, to read client certificates: "
                f"set tlsProviderFactoryClass={TLS_CONTEXT_FACTORY} and its keys"
            )
        if config.authorizer.enabled and config.tls is not None and not config.tls.settings.client_authentication:
            raise InvalidArgument(
                f"bookieAuthProviderFactoryClass=BookieAuthZFactory{where} needs tlsClientAuthentication=true: "
                "without it no client presents a certificate, and every request is refused"
            )
        return config

    def validate(self) -> None:
        if self.bookieId:
            check_bookie_id(self.bookieId)
        if not 0 < self.bookiePort < 65536:
            raise InvalidArgument(f"bookiePort {self.bookiePort} is not a port number")
        if not -1 <= self.bkctlAdminPort < 65536 or self.admin_port in (self.bookiePort, 65536):
            raise InvalidArgument(f"bkctlAdminPort {self.bkctlAdminPort} is not a port number other than bookiePort")
        for key in ("journalDirectories", "ledgerDirectories", "indexDirectories"):
            dirs = self.dirs(key)
            if len(set(map(os.path.normpath, dirs))) != len(dirs):
                raise InvalidArgument(f"{key} names a directory twice: {getattr(self, key)!r}")
        if not self.journal_dirs or not self.ledger_dirs:
            raise InvalidArgument("journalDirectories and ledgerDirectories must each name a directory")
        for kind in ("minor", "major"):
            interval = getattr(self, f"{kind}CompactionInterval")
            if 0 < interval * 1000 < self.gcWaitTime:
                raise InvalidArgument(
                    f"{kind}CompactionInterval {interval} s is shorter than gcWaitTime {self.gcWaitTime} ms"
                )
        checksums = ("knochecksum", "kcrc32c", "kxxhash", "kxxhash64", "kxxh3")
        if self.dbStorage_rocksDB_checksum_type.lower() not in checksums:
            raise InvalidArgument(
                f"dbStorage_rocksDB_checksum_type {self.dbStorage_rocksDB_checksum_type!r} is not "
                "one of kNoChecksum, kCRC32c, kxxHash, kxxHash64, kXXH3"
            )
        if self.prometheusStatsLatencyRolloverSeconds <= 0:
            raise InvalidArgument("prometheusStatsLatencyRolloverSeconds must be at least 1")
        if not 0 < self.diskUsageWarnThreshold <= self.diskUsageThreshold <= 1:
            raise InvalidArgument("need 0 < diskUsageWarnThreshold <= diskUsageThreshold <= 1")
        if self.diskUsageLwmThreshold != -1 and not 0 < self.diskUsageLwmThreshold <= self.diskUsageThreshold:
            raise InvalidArgument("need 0 < diskUsageLwmThreshold <= diskUsageThreshold")

    def gc(self) -> GcConfig:
        return GcConfig(
            gc_wait_ms=self.gcWaitTime,
            minor_threshold=self.minorCompactionThreshold,
            minor_interval_s=self.minorCompactionInterval,
            major_threshold=self.majorCompactionThreshold,
            major_interval_s=self.majorCompactionInterval,
            compaction_rate=self.compactionRate,
            overreplicated_wait_ms=self.gcOverreplicatedLedgerWaitTime,
        )

    @property
    def db_storage(self) -> bool:
        """Whether ledgerStorageClass asks for DbLedgerStorage."""
        return self.ledgerStorageClass.strip().lower() == DB_LEDGER_STORAGE.lower()

    def db(self) -> DbConfig:
        """DbLedgerStorage's settings: BookKeeper's dbStorage_* keys with BookKeeper's defaults (DbLedgerStorage,
        KeyValueStorageRocksDB)."""

        def mb(value: int, share: float) -> int:
            return value * MB if value >= 0 else int(share * DEFAULT_DIRECT_MEMORY)

        ledger_dirs = self.dirs("ledgerDirectories")
        block_cache = self.dbStorage_rocksDB_blockCacheSize
        return DbConfig(
            write_cache_size=mb(self.dbStorage_writeCacheMaxSizeMb, 0.25),
            read_cache_size=mb(self.dbStorage_readAheadCacheMaxSizeMb, 0.25),
            read_ahead_batch_size=self.dbStorage_readAheadCacheBatchSize,
            read_ahead_batch_bytes=self.dbStorage_readAheadCacheBatchBytesSize,
            max_throttle_ms=self.dbStorage_maxThrottleTimeMs,
            rocksdb=RocksDbConfig(
                block_cache_size=block_cache if block_cache >= 0 else DEFAULT_DIRECT_MEMORY // len(ledger_dirs) // 10,
                write_buffer_size_mb=self.dbStorage_rocksDB_writeBufferSizeMB,
                sst_size_mb=self.dbStorage_rocksDB_sstSizeInMB,
                block_size=self.dbStorage_rocksDB_blockSize,
                bloom_filter_bits_per_key=self.dbStorage_rocksDB_bloomFilterBitsPerKey,
                num_levels=self.dbStorage_rocksDB_numLevels,
                num_files_in_level0=self.dbStorage_rocksDB_numFilesInLevel0,
                max_size_in_level1_mb=self.dbStorage_rocksDB_maxSizeInLevel1MB,
                lz4_compression=self.dbStorage_rocksDB_lz4CompressionEnabled,
                format_version=self.dbStorage_rocksDB_format_version,
                checksum_type=self.dbStorage_rocksDB_checksum_type,
            ),
        )

    def dirs(self, key: str) -> list[str]:
        """A directory list as written (the cookie records these strings)."""
        return [d.strip() for d in getattr(self, key).split(",") if d.strip()]

    @property
    def journal_dirs(self) -> tuple[Path, ...]:
        return tuple(map(Path, self.dirs("journalDirectories")))

    @property
    def ledger_dirs(self) -> tuple[Path, ...]:
        return tuple(map(Path, self.dirs("ledgerDirectories")))

    @property
    def index_dirs(self) -> tuple[Path, ...]:
        """The index directories: the ledger directories unless indexDirectories is set."""
        return tuple(map(Path, self.dirs("indexDirectories"))) or self.ledger_dirs

    @property
    def all_dirs(self) -> list[Path]:
        """Every directory of the bookie, each once, journals first (Main.storageDirectoriesFromConf's order)."""
        return list(dict.fromkeys([*self.journal_dirs, *self.ledger_dirs, *self.index_dirs]))

    def disk_thresholds(self) -> DiskThresholds:
        min_for_log = self.minUsableSizeForEntryLogCreation
        return DiskThresholds(
            threshold=self.diskUsageThreshold,
            warn=self.diskUsageWarnThreshold,
            lwm=None if self.diskUsageLwmThreshold == -1 else self.diskUsageLwmThreshold,
            min_usable_for_new_log=self.logSizeLimit if min_for_log < 0 else min_for_log,
            min_usable_for_new_index=self.minUsableSizeForIndexFileCreation,
        )

    @property
    def admin_port(self) -> int | None:
        """Where the gRPC admin service listens (None: nowhere)."""
        if self.bkctlAdminPort < 0:
            return None
        return self.bkctlAdminPort or self.bookiePort + 1

    def client_tls(self) -> TlsSettings | None:
        """The TLS of the bookie's own client (the HTTP admin API's recover and decommission, autorecovery run with this
        file): this configuration read as a client's, as BookKeeper builds their ClientConfiguration from the bookie's
        (its client* keys first, then tls*), so other bookies see this bookie's certificate and role. A bookie with
        TLS but no trust store serves plaintext clients (BookieAuthZFactory needs one), and its client goes in
        plaintext too; the bookie reads no bkctl variable."""
        if self.tls is None or not self.tls.settings.trust_store:
            return None
        return TlsSettings.from_properties(self.properties, "client", " (the bookie's own client)")

    def storage(self) -> StorageConfig:
        return StorageConfig(
            journal_dirs=self.journal_dirs,
            ledger_dirs=self.ledger_dirs,
            index_dirs=self.index_dirs,
            disk=self.disk_thresholds(),
            journal_sync_data=self.journalSyncData,
            journal_max_group_wait_ms=self.journalMaxGroupWaitMSec,
            journal_flush_when_queue_empty=self.journalFlushWhenQueueEmpty,
            journal_buffered_writes_threshold=self.journalBufferedWritesThreshold,
            journal_max_size_mb=self.journalMaxSizeMB,
            journal_prealloc_mb=self.journalPreAllocSizeMB,
            journal_max_backups=self.journalMaxBackups,
            journal_skip_corruption=self.skipReplayJournalInvalidRecord,
            entry_log_size_limit=self.logSizeLimit,
            entry_log_flush_bytes=self.flushEntrylogBytes,
            flush_interval_ms=self.flushInterval,
            page_limit=self.pageLimit if self.pageLimit > 0 else 65536,  # automatic: 512 MB of index pages
            open_file_limit=min(self.openFileLimit, daemon.index_file_budget()),
            max_entry_size=self.nettyMaxFrameSizeBytes,
            read_errors_to_fail=self.bkctlDiskReadErrorsToFail,
        )

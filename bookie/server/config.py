"""Bookie configuration: a ``bk_server.conf`` properties file with Apache BookKeeper's key names and defaults
(BookKeeper: conf/ServerConfiguration.java), overridden by flags. One file serves both kinds of bookie: a key this
bookie does not use is listed in ``BookieConfig.unused_keys`` (the bookie warns once per key at start), and a key whose
value asks for something this bookie cannot do (``HONOURED_VALUES``) is refused, in one line, rather than run with a
configuration other than the one written."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import ClassVar

from bookie.conf import load_properties, metadata_service_uri
from bookie.errors import InvalidArgument
from bookie.meta.security import KEYS as ZK_SECURITY_KEYS
from bookie.meta.security import ZkSecurity
from bookie.server.network import check_bookie_id
from bookie.storage.gc import GcConfig
from bookie.storage.ledger_storage import StorageConfig


def _bool(text: str) -> bool:
    value = text.strip().lower()
    if value not in ("true", "false"):
        raise ValueError("expected true or false")
    return value == "true"


CONVERTERS: dict[str, Callable[[str], object]] = {"int": int, "float": float, "bool": _bool, "str": str}


# BookKeeper keys whose value this bookie must honour or refuse: key -> (values it honours, compared without case,
# and what it does instead). Their BookKeeper defaults are among the values honoured.
HONOURED_VALUES: dict[str, tuple[frozenset[str], str]] = {
    "ledgerStorageClass": (
        frozenset(
            {
                "org.apache.bookkeeper.bookie.sortedledgerstorage",
                "org.apache.bookkeeper.bookie.interleavedledgerstorage",
            }
        ),
        "this bookie keeps entries as InterleavedLedgerStorage/SortedLedgerStorage do (entry logs and index files)",
    ),
    "entryLogPerLedgerEnabled": (frozenset({"false"}), "this bookie interleaves every ledger in one entry log"),
    "bookieAuthProviderFactoryClass": (frozenset({""}), "this bookie does not authenticate clients yet"),
}
# Read from the file by someone else than the fields below (bookie.conf.metadata_service_uri, bookie.meta.security).
READ_ELSEWHERE = frozenset({"zkServers", "zkLedgersRootPath"}) | ZK_SECURITY_KEYS


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
    journalDirectories: str = "/tmp/bk-txn"
    ledgerDirectories: str = "/tmp/bk-data"
    indexDirectories: str = ""  # = ledgerDirectories
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
    nettyMaxFrameSizeBytes: int = 5242880
    diskUsageThreshold: float = 0.95
    diskUsageWarnThreshold: float = 0.90
    diskCheckInterval: int = 10000
    readOnlyModeEnabled: bool = True
    prometheusStatsHttpPort: int = 8000
    prometheusStatsHttpAddress: str = "0.0.0.0"
    prometheusStatsLatencyRolloverSeconds: int = 60  # the window of the quantiles in /metrics
    httpServerEnabled: bool = False  # BookKeeper's HTTP admin API (bookie/server/http/)
    httpServerPort: int = 8080
    httpServerHost: str = "0.0.0.0"
    gcWaitTime: int = 600000
    minorCompactionThreshold: float = 0.2
    minorCompactionInterval: int = 3600
    majorCompactionThreshold: float = 0.8
    majorCompactionInterval: int = 86400
    compactionRate: int = 1000
    zkTimeout: int = 10000
    zkEnableSecurity: bool = False  # ZooKeeper ACLs and credentials: bookie.meta.security

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
        return config

    def validate(self) -> None:
        if self.bookieId:
            check_bookie_id(self.bookieId)
        if not 0 < self.bookiePort < 65536:
            raise InvalidArgument(f"bookiePort {self.bookiePort} is not a port number")
        if not -1 <= self.bkctlAdminPort < 65536 or self.admin_port in (self.bookiePort, 65536):
            raise InvalidArgument(f"bkctlAdminPort {self.bkctlAdminPort} is not a port number other than bookiePort")
        for key in ("journalDirectories", "ledgerDirectories", "indexDirectories"):
            if len(self.dirs(key)) > 1:
                raise InvalidArgument(f"{key}: this bookie supports one directory, got {getattr(self, key)!r}")
        for kind in ("minor", "major"):
            interval = getattr(self, f"{kind}CompactionInterval")
            if 0 < interval * 1000 < self.gcWaitTime:
                raise InvalidArgument(
                    f"{kind}CompactionInterval {interval} s is shorter than gcWaitTime {self.gcWaitTime} ms"
                )
        if self.prometheusStatsLatencyRolloverSeconds <= 0:
            raise InvalidArgument("prometheusStatsLatencyRolloverSeconds must be at least 1")
        if not 0 < self.diskUsageWarnThreshold <= self.diskUsageThreshold <= 1:
            raise InvalidArgument("need 0 < diskUsageWarnThreshold <= diskUsageThreshold <= 1")

    def gc(self) -> GcConfig:
        return GcConfig(
            gc_wait_ms=self.gcWaitTime,
            minor_threshold=self.minorCompactionThreshold,
            minor_interval_s=self.minorCompactionInterval,
            major_threshold=self.majorCompactionThreshold,
            major_interval_s=self.majorCompactionInterval,
            compaction_rate=self.compactionRate,
        )

    def dirs(self, key: str) -> list[str]:
        return [d.strip() for d in getattr(self, key).split(",") if d.strip()]

    @property
    def journal_dir(self) -> Path:
        return Path(self.dirs("journalDirectories")[0])

    @property
    def ledger_dir(self) -> Path:
        return Path(self.dirs("ledgerDirectories")[0])

    @property
    def index_dir(self) -> Path:
        return Path((self.dirs("indexDirectories") or self.dirs("ledgerDirectories"))[0])

    @property
    def admin_port(self) -> int | None:
        """Where the gRPC admin service listens (None: nowhere)."""
        if self.bkctlAdminPort < 0:
            return None
        return self.bkctlAdminPort or self.bookiePort + 1

    def storage(self) -> StorageConfig:
        return StorageConfig(
            journal_dir=self.journal_dir,
            ledger_dir=self.ledger_dir,
            index_dir=self.index_dir,
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
            max_entry_size=self.nettyMaxFrameSizeBytes,
        )

import pytest

from bookie.conf import load_properties, metadata_service_uri, parse_properties, read_secret_file
from bookie.errors import InvalidArgument
from bookie.server.config import BookieConfig


def test_java_properties_forms():
    text = (
        "# comment\n! also a comment\n\nmetadataServiceUri=zk+hierarchical://a:1/ledgers\n"
        "bookiePort : 3181\njournalDirectories /data/j1,\\\n    /data/j2\nescaped\\=key=x\\ty\nempty=\n"
    )
    assert parse_properties(text) == {
        "metadataServiceUri": "zk+hierarchical://a:1/ledgers",
        "bookiePort": "3181",
        "journalDirectories": "/data/j1,/data/j2",
        "escaped=key": "x\ty",
        "empty": "",
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [  # as java.util.Properties reads them (tests/interop/test_properties.py compares a file of them with Java)
        ("a\\\\=b\n", {"a\\": "b"}),
        ("\\u0041\\u00e9=\\u20ac and \\u00FF\n", {"Aé": "€ and ÿ"}),
        ("key\\:c\\ d = = x\n", {"key:c d": "= x"}),
        ("even=ends\\\\\\\\\nnext=1\n", {"even": "ends\\\\", "next": "1"}),
        ("hash=a\\\n  #not a comment\n", {"hash": "a#not a comment"}),
        ("# comment \\\nafter=1\n", {"after": "1"}),
        ("blank=x\\\n\nafter=y\n", {"blank": "x", "after": "y"}),
        ("crlf=1\r\ncr=2\rlf=3\n", {"crlf": "1", "cr": "2", "lf": "3"}),
        ("ff\fvalue\nvt\vvalue\n", {"ff": "value", "vt\vvalue": ""}),
        ('esc=\\t\\q\\"\n', {"esc": '\tq"'}),
        ("trimmed=v  \t\nkept=v\\ \n", {"trimmed": "v", "kept": "v "}),
        ("last=end\\", {"last": "end"}),
    ],
)
def test_java_properties_rules(text, expected):
    assert parse_properties(text) == expected


def test_a_malformed_unicode_escape_is_named():
    with pytest.raises(InvalidArgument, match=r"x.conf:2: malformed \\uXXXX escape"):
        parse_properties("a=1\nb=\\u00g1\n", "x.conf")


def test_legacy_zk_servers_keys():
    assert metadata_service_uri({"zkServers": "a:1,b:2", "zkLedgersRootPath": "/bk"}) == "zk+hierarchical://a:1;b:2/bk"
    assert metadata_service_uri({"metadataServiceUri": "zk://x/l", "zkServers": "a:1"}) == "zk://x/l"
    assert metadata_service_uri({}) is None


def test_a_relative_ledgers_root_path_is_named_not_a_bad_port():
    with pytest.raises(InvalidArgument, match=r"bk.conf: zkLedgersRootPath='ledgers' must be an absolute path"):
        metadata_service_uri({"zkServers": "zk1:2181", "zkLedgersRootPath": "ledgers"}, "bk.conf")


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(InvalidArgument, match="does not exist"):
        load_properties(tmp_path / "nope.conf")


def test_binary_file_is_a_clear_error(tmp_path):
    path = tmp_path / "bad.conf"
    path.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(InvalidArgument, match="cannot be read"):
        load_properties(path)


def test_value_without_key(tmp_path):
    with pytest.raises(InvalidArgument, match=r"x.conf:2: a value without a key"):
        parse_properties("a=1\n=2\n", "x.conf")


def test_flush_entrylog_bytes_reaches_storage(tmp_path):
    assert BookieConfig.load().storage().entry_log_flush_bytes == 0  # BookKeeper's default: disabled
    path = tmp_path / "bk_server.conf"
    path.write_text("flushEntrylogBytes=268435456\n")
    assert BookieConfig.load(path).storage().entry_log_flush_bytes == 268435456
    assert BookieConfig.load(path, {"flushEntrylogBytes": "65536"}).storage().entry_log_flush_bytes == 65536
    with pytest.raises(InvalidArgument, match="bad value for flushEntrylogBytes"):
        BookieConfig.load(overrides={"flushEntrylogBytes": "lots"})


def test_a_java_bookies_file_loads_and_names_what_it_sets_that_we_do_not_use(tmp_path):
    path = tmp_path / "bk_server.conf"
    path.write_text(
        "zkServers=zk1:2181\nzkLedgersRootPath=/ledgers\njournalDirectory=/j\nnumAddWorkerThreads=4\n"
        "ledgerStorageClass=org.apache.bookkeeper.bookie.SortedLedgerStorage\nhttpServerEnabled=true\n"
        "journalAdaptiveGroupWrites=true\n"
    )
    config = BookieConfig.load(path)
    assert config.journalDirectories == "/j" and config.metadataServiceUri == "zk+hierarchical://zk1:2181/ledgers"
    assert config.unused_keys == ["journalAdaptiveGroupWrites", "numAddWorkerThreads"]


def test_gc_overreplicated_ledger_wait_time_reaches_the_collectors(tmp_path):
    """One day by default, as BookKeeper's; a Java bookie's file sets it without a warning."""
    assert BookieConfig.load().gc().overreplicated_wait_ms == 86_400_000
    path = tmp_path / "bk_server.conf"
    path.write_text("gcOverreplicatedLedgerWaitTime=3600000\ngcOverreplicatedLedgerMaxConcurrentRequests=10\n")
    config = BookieConfig.load(path)
    assert config.gc().overreplicated_wait_ms == 3_600_000
    assert config.unused_keys == ["gcOverreplicatedLedgerMaxConcurrentRequests"]  # read one ledger at a time


@pytest.mark.parametrize(
    ("key", "value", "instead"),
    [
        ("ledgerStorageClass", "org.example.OtherLedgerStorage", "InterleavedLedgerStorage"),
        ("dbStorage_directIOEntryLogger", "true", "page cache"),
        ("entryLogPerLedgerEnabled", "true", "one entry log"),
        ("bookieAuthProviderFactoryClass", "org.apache.bookkeeper.sasl.SASLBookieAuthProviderFactory", "authenticate"),
    ],
)
def test_a_value_this_bookie_cannot_honour_is_refused_in_one_line(tmp_path, key, value, instead):
    path = tmp_path / "bk_server.conf"
    path.write_text(f"{key}={value}\n")
    with pytest.raises(InvalidArgument, match=f"^{key}={value} in {path} cannot be honoured: .*{instead}") as info:
        BookieConfig.load(path)
    assert "\n" not in str(info.value)


def test_db_ledger_storage_and_its_keys_with_bookkeepers_defaults(tmp_path):
    from bookie.server.config import DEFAULT_DIRECT_MEMORY

    path = tmp_path / "bk_server.conf"
    path.write_text(
        "ledgerStorageClass=org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage\n"
        "dbStorage_writeCacheMaxSizeMb=16\ndbStorage_readAheadCacheBatchSize=50\n"
        "dbStorage_rocksDB_lz4CompressionEnabled=false\n"
    )
    config = BookieConfig.load(path)
    assert config.db_storage and not BookieConfig.load().db_storage and config.unused_keys == []
    db = config.db()
    assert (db.write_cache_size, db.read_ahead_batch_size, db.read_ahead_batch_bytes) == (16 << 20, 50, -1)
    assert db.read_cache_size == DEFAULT_DIRECT_MEMORY // 4  # BookKeeper: a quarter of the direct memory
    assert (db.rocksdb.lz4_compression, db.rocksdb.format_version, db.rocksdb.checksum_type) == (False, 5, "kxxHash")
    with pytest.raises(InvalidArgument, match="dbStorage_rocksDB_checksum_type"):
        BookieConfig.load(overrides={"dbStorage_rocksDB_checksum_type": "md5"})


def test_network_keys_have_bookkeepers_defaults_and_bookie_ids_its_syntax():
    config = BookieConfig.load()
    assert (config.listeningInterface, config.advertisedAddress, config.bookieId) == ("", "", "")
    assert (config.allowLoopback, config.useHostNameAsBookieID, config.useShortHostName) == (False, False, False)
    assert (config.prometheusStatsHttpAddress, config.httpServerHost) == ("0.0.0.0", "0.0.0.0")
    assert BookieConfig.load(overrides={"bookieId": "rack1-bookie_7.example:3181"}).bookieId
    for bad in ("readonly", "has space", "a/b"):
        with pytest.raises(InvalidArgument, match="is not a valid bookie id"):
            BookieConfig.load(overrides={"bookieId": bad})


def test_interfaces_are_listed_with_their_ipv4_address():
    from bookie.server.network import interfaces

    assert interfaces()["lo"] == "127.0.0.1"


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660, 0o610])
def test_a_secret_file_others_may_read_is_refused_naming_the_fix(tmp_path, mode):
    secret = tmp_path / "key"
    secret.write_text("s3cret\n")
    secret.chmod(mode)
    with pytest.raises(InvalidArgument) as raised:
        read_secret_file(secret, "ledger password file")
    assert str(raised.value) == (
        f"ledger password file {secret} is accessible by group or others (mode {mode:04o}): chmod 600 {secret}"
    )
    assert "s3cret" not in str(raised.value)
    secret.chmod(0o600)
    assert read_secret_file(secret, "ledger password file") == b"s3cret\n"
    secret.chmod(0o400)
    assert read_secret_file(secret, "ledger password file") == b"s3cret\n"


def test_a_secret_file_that_is_missing_or_no_file(tmp_path):
    with pytest.raises(InvalidArgument, match=r"^TLS key file .*/none does not exist$"):
        read_secret_file(tmp_path / "none", "TLS key file")
    with pytest.raises(InvalidArgument, match=r"is not a regular file$"):
        read_secret_file(tmp_path, "TLS key file")

"""Our bookies' metrics carry BookKeeper's names, types and labels: checked against a real Java bookie, the way a user
would look, and against what a widely used Grafana dashboard queries.

The oracle has no Prometheus provider, but its Codahale provider writes one CSV file per metric (``name.csv``: a
``count`` column for counters, ``value`` for gauges, timers with ``count,max,mean,...``; an OpStatsLogger is two
timers, ``NAME`` and ``NAME-fail``). Codahale joins scopes with ``.`` and, having no labels, turns a ``scopeLabel`` into
a scope ``label_value`` (StatsLogger's default); the Prometheus provider joins scopes with ``_`` and keeps the label
(PrometheusStatsLogger.completeName / scopeLabel): ``bookie.journal.journalIndex_0.JOURNAL_SYNC`` is
``bookie_journal_JOURNAL_SYNC{journalIndex="0"}``, a summary.

Both bookies get the same workload from the Java client (bin/bk-write, bin/bk-read): adds, plain reads in v3 and
v2, and a recovery (fence reads, recovery adds, LAC reads).
"""

from __future__ import annotations

import contextlib
import csv
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from bookie.storage.db import DB_LEDGER_STORAGE

from interop.oracle import JavaCluster, bk_read, bk_write, require_oracle
from support.checks import write_ledgers
from support.cluster import metrics, shared_cluster
from support.waiting import wait_for

require_oracle()

SCOPES = ("bookie", "bookkeeper_server")  # a bookie's (EmbeddedServer); the JVM's gauges are not BookKeeper's
SCOPE_LABELS = ("journalIndex",)  # the bookie's scopeLabel()s (Journal)
TYPES = {"count": "counter", "value": "gauge", "count,max,mean": "summary"}  # CSV header -> Prometheus type
ENTRIES, RECOVERED = 400, 20

# BookKeeper's metrics for what this bookie does not have, and why; each is checked to exist on the Java bookie and
# not on ours (a name exported for an event that never happens would mislead a dashboard).
NOT_OURS = {
    r"bookkeeper_server_Bookie(HighPriorityThread|ReadThreadPool|WriteThreadPool)_(task_execution|task_queued|"
    r"max_queue_size|threads)|bookkeeper_server_thread_.*|bookkeeper_server_WRITE_THREAD_QUEUED_LATENCY|"
    r"bookkeeper_server_READ_ENTRY_SCHEDULING_DELAY": (
        "thread pools: ours answers requests on its event loop as it decodes them"
    ),
    r"bookkeeper_server_CHANNEL_WRITE": "Netty's write completion: an asyncio transport tells no such moment",
    r"bookie_STORAGE_GET_(OFFSET|ENTRY)": "ours times a read as a whole (BOOKIE_READ_ENTRY), not its two steps",
    r"bookie_STORAGE_SCRUB_PAGE(S_SCANNED|_RETRIES)": "no local scrubber (localScrubPeriod)",
    r"bookie_INDEX_INMEM_ILLEGAL_STATE_(RESET|DELETE)": "page reference-count states of IndexInMemPageMgr",
    r"bookie_(LEDGER_CACHE_NUM_EVICTED_LEDGERS|PENDING_GET_FILE_INFO|(READ|WRITE)_FILE_INFO_CACHE_SIZE)": (
        "IndexPersistenceMgr's FileInfo caches: ours keeps one index handle per ledger, never evicted"
    ),
    r"bookie_JOURNAL_QUEUE_MAX_SIZE|bookie_journal_JOURNAL_MEMORY_(MAX|USED)": (
        "journalQueueSize / journalMaxMemorySizeMb: ours bounds what each connection has in flight instead"
    ),
    r"bookie_journal_JOURNAL_FORCE_WRITE_ENQUEUE": "no force-write thread (and 4.17.4 never records it)",
    r"bookie_journal_(callback_time|journal_thread_time|force_write_thread_time)|bookie_sync_thread_time": (
        "CPU time of Java threads (thread-scoped counters)"
    ),
    r"bookie_gc_ENTRY_LOCATION_COMPACTION_TOTAL": (
        "entryLocationCompactionInterval, a timed RocksDB compaction of DbLedgerStorage's locations: ours has none"
    ),
    r"bookie_bookie_zk_.*|bookie_bookie_watcher_state_.*": (
        "BookKeeper's ZooKeeperClient wrapper: our metadata store is kazoo's client, not instrumented"
    ),
}

# The BookKeeper dashboard of streamnative/apache-pulsar-grafana-dashboard, dashboards/bookkeeper.json at commit
# d07bae7804efc1c14a0d3932b42100abb6d1a99d: the 22 metric names its 42 queries use, with the labels they select
# on (job and instance are Prometheus' own), written here as our list. name -> (family, type, labels of the sample).
DASHBOARD = {
    "bookie_SERVER_STATUS": ("bookie_SERVER_STATUS", "gauge", set()),
    "bookie_WRITE_BYTES": ("bookie_WRITE_BYTES", "counter", set()),
    "bookie_READ_BYTES": ("bookie_READ_BYTES", "counter", set()),
    "bookie_ledger_writable_dirs": ("bookie_ledger_writable_dirs", "gauge", set()),
    "bookkeeper_server_ADD_ENTRY_count": ("bookkeeper_server_ADD_ENTRY", "summary", {"success"}),
    "bookkeeper_server_READ_ENTRY_count": ("bookkeeper_server_READ_ENTRY", "summary", {"success"}),
    "bookkeeper_server_ADD_ENTRY_REQUEST": ("bookkeeper_server_ADD_ENTRY_REQUEST", "summary", {"success", "quantile"}),
    "bookkeeper_server_ADD_ENTRY_REQUEST_count": ("bookkeeper_server_ADD_ENTRY_REQUEST", "summary", {"success"}),
    "bookkeeper_server_READ_ENTRY_REQUEST": (
        "bookkeeper_server_READ_ENTRY_REQUEST",
        "summary",
        {"success", "quantile"},
    ),
    "bookkeeper_server_READ_ENTRY_REQUEST_count": ("bookkeeper_server_READ_ENTRY_REQUEST", "summary", {"success"}),
    "bookie_journal_JOURNAL_ADD_ENTRY": (
        "bookie_journal_JOURNAL_ADD_ENTRY",
        "summary",
        {"success", "quantile", "journalIndex"},
    ),
    "bookie_journal_JOURNAL_ADD_ENTRY_count": (
        "bookie_journal_JOURNAL_ADD_ENTRY",
        "summary",
        {"success", "journalIndex"},
    ),
    "bookie_journal_JOURNAL_SYNC": ("bookie_journal_JOURNAL_SYNC", "summary", {"success", "quantile", "journalIndex"}),
    "bookie_journal_JOURNAL_SYNC_count": ("bookie_journal_JOURNAL_SYNC", "summary", {"success", "journalIndex"}),
    "bookie_journal_JOURNAL_QUEUE_SIZE": ("bookie_journal_JOURNAL_QUEUE_SIZE", "counter", {"journalIndex"}),
    "bookie_journal_JOURNAL_FORCE_WRITE_QUEUE_SIZE": (
        "bookie_journal_JOURNAL_FORCE_WRITE_QUEUE_SIZE",
        "counter",
        {"journalIndex"},
    ),
}
# Queried by the dashboard, and served only by a bookie running DbLedgerStorage: gauges registered per ledger
# directory under scopeLabel("ledgerDir", ...).scopeLabel("indexDir", ...), both the directory's current/
# (SingleDirectoryDbLedgerStorage), by DbLedgerStorageStats (the caches), LedgerMetadataIndexStats (ledgers-count) and
# EntryLocationIndexStats (entries-count); the Prometheus provider writes "-" as "_". The Java bookie above runs
# BookKeeper's default storage, so these come from that source (bookie/storage/ldb/ at release-4.17.4).
DASHBOARD_DB = {
    name: (name, "gauge", {"ledgerDir", "indexDir"})
    for name in ("bookie_ledgers_count", "bookie_entries_count", "bookie_write_cache_size", "bookie_read_cache_size")
}
# Queried by the dashboard, and not exported by ours: why (the Java bookie is checked to agree).
DASHBOARD_ABSENT = {
    "bookie_journal_JOURNAL_CB_QUEUE_SIZE": "gone from BookKeeper (4.17.4's Java bookie has none either)",
    "bookie_DELETED_LEDGER_COUNT": "renamed bookie_gc_DELETED_LEDGER_TOTAL by BookKeeper (4.17.4 exports that)",
}
DB_ENTRIES = 10


def prometheus_name(codahale: str) -> tuple[str, dict[str, str]]:
    """A Codahale metric name as the Prometheus provider names it: ``_``-joined scopes, scope labels as labels."""
    scopes, labels = [], {}
    for part in codahale.split("."):
        label = next((n for n in SCOPE_LABELS if part.startswith(n + "_")), None)
        if label:
            labels[label] = part[len(label) + 1 :]
        else:
            scopes.append(part)
    return re.sub(r"[^a-zA-Z0-9:_]", "_", "_".join(scopes)), labels


def usage_gauge(name: str) -> str:
    """LedgerDirsManager names a directory's usage gauge after its path."""
    return re.sub(r"^(bookie_(ledger|index))_dir_.*_usage$", r"\1_dir_<path>_usage", name)


def java_metrics(directory: Path) -> dict[str, tuple[str, dict[str, str], Path]]:
    """name -> (type, labels, CSV file) of the Java bookie's metrics under a bookie scope."""
    found = {}
    for path in directory.glob("*.csv"):
        codahale = path.name[: -len(".csv")]
        if codahale.endswith("-fail") or not codahale.startswith(tuple(s + "." for s in SCOPES)):
            continue
        with open(path, newline="") as f:
            header = ",".join(next(csv.reader(f))[1:4])
        name, labels = prometheus_name(codahale)
        found[usage_gauge(name)] = (TYPES[header if header in TYPES else header.split(",")[0]], labels, path)
    return found


def csv_count(path: Path) -> int:
    """The last reported count of a Codahale counter or timer."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return int(rows[-1]["count"]) if rows else 0


def ours_by_family(got) -> dict[str, tuple[str, set[str]]]:
    """family -> (type, label names of its samples, success and quantile left out)."""
    families = {}
    for sample in got.samples:
        family = re.sub(r"_(count|sum)$", "", sample.name) if got.types.get(sample.name) is None else sample.name
        names = {k for k, _ in sample.labels} - {"success", "quantile"}
        families[usage_gauge(family)] = (got.types[family], names)
    return families


def workload(zk: str, root: str) -> None:
    """The Java client on one bookie: a closed ledger written and read back in v2, and a ledger left open (one add
    at a time: the bookie's LAC is one behind) recovered by a v3 reader (fence reads, a recovery add)."""
    args = ["--root", root, "--ensemble", "1", "--write-quorum", "1", "--ack-quorum", "1"]
    closed = bk_write(zk, *args, "--n", str(ENTRIES), "--text", "entry", "--suffix-index")
    assert len(bk_read(zk, closed, "--root", root, "--no-recovery", "--v2")) == ENTRIES
    left_open = bk_write(zk, *args, "--n", str(RECOVERED), "--text", "open", "--no-close", "--window", "1")
    assert len(bk_read(zk, left_open, "--root", root)) == RECOVERED


@pytest.fixture(scope="module")
def bookies(zookeeper, tmp_path_factory):
    """A Java bookie with the Codahale provider writing its CSV files every second, and one of ours, after the same
    workload (run on both at once): the Java bookie's metrics from its files, ours from its /metrics."""
    reports = tmp_path_factory.mktemp("codahale")
    with contextlib.ExitStack() as stack:
        java = JavaCluster.start(
            tmp_path_factory.mktemp("java"),
            1,
            "enableStatistics=true",
            "statsProviderClass=org.apache.bookkeeper.stats.codahale.CodahaleMetricsProvider",
            f"codahaleStatsCSVEndpoint={reports}",
            "codahaleStatsOutputFrequencySeconds=1",
            zk=zookeeper.address,
            ledgers_root="/java-metrics",
        )
        stack.callback(java.stop)
        ours = stack.enter_context(shared_cluster(zookeeper, tmp_path_factory.mktemp("ours"), bookies=1))
        roots = ["/java-metrics", "/" + ours.service_uri.split("://", 1)[1].split("/", 1)[1]]
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda root: workload(zookeeper.address, root), roots))
        found = java_metrics(reports)
        wait_for(
            lambda: csv_count(found["bookkeeper_server_ADD_ENTRY_REQUEST"][2]) == ENTRIES + RECOVERED + 1,
            "the Java bookie's report of the adds (and the recovery add)",
        )
        yield found, metrics(ours.bookies[0])


@pytest.fixture(scope="module")
def db_bookie(zookeeper, tmp_path_factory):
    """One of our bookies running DbLedgerStorage, in a cluster of its own, with a ledger of DB_ENTRIES written by
    our client: the bookie, and its /metrics."""
    with shared_cluster(
        zookeeper, tmp_path_factory.mktemp("ours-db"), bookies=1, ledgerStorageClass=DB_LEDGER_STORAGE
    ) as harness:
        write_ledgers(harness.service_uri, 1, quorum=(1, 1, 1), entries=DB_ENTRIES)
        yield harness.bookies[0], metrics(harness.bookies[0])


@pytest.fixture(scope="module")
def java(bookies):
    return bookies[0]


@pytest.fixture(scope="module")
def ours(bookies):
    return bookies[1]


def test_every_bookkeeper_metric_of_an_event_we_have_is_ours_with_its_type_and_labels(java, ours):
    families = ours_by_family(ours)
    assert len(java) > 100  # the CSV files were read (331 files, the JVM's included)
    for pattern, reason in NOT_OURS.items():
        not_ours = [name for name in java if re.fullmatch(pattern, name)]
        assert not_ours, f"no Java metric is {pattern} any more: drop it from NOT_OURS"
        assert not [name for name in not_ours if name in families], f"exported without the event ({reason})"
    missing = []
    for name, (kind, labels, _) in sorted(java.items()):
        if any(re.fullmatch(p, name) for p in NOT_OURS):
            continue
        if name not in families:
            missing.append(name)
            continue
        assert families[name] == (kind, set(labels)), name
    assert not missing, f"BookKeeper metrics missing on ours: {missing}"


def test_every_metric_bkctl_top_reads_is_a_java_bookies_and_ours_of_the_same_type(java, ours):
    """`bkctl top` and `cluster check`'s slow bookies read these names only: what ties them to Java bookies, whose
    Prometheus provider is not at hand here."""
    from admin.top import FAMILIES

    families = ours_by_family(ours)
    for family in FAMILIES:
        assert family in java and family in families, family
        assert java[family][0] == families[family][0], family


def test_the_same_workload_counts_the_same_on_both(java, ours):
    """Counted per request and per entry as BookKeeper counts them, whatever batching ours does: successes and
    failures (a fence read past the end), entries and bytes."""
    for family in (
        "bookkeeper_server_ADD_ENTRY_REQUEST",
        "bookkeeper_server_ADD_ENTRY",
        "bookie_BOOKIE_ADD_ENTRY",
        "bookie_BOOKIE_RECOVERY_ADD_ENTRY",
        "bookie_BOOKIE_ADD_ENTRY_BYTES",
        "bookkeeper_server_READ_ENTRY_REQUEST",
        "bookkeeper_server_READ_ENTRY",
        "bookkeeper_server_READ_ENTRY_FENCE_REQUEST",
        "bookkeeper_server_READ_ENTRY_FENCE_READ",
        "bookie_BOOKIE_READ_ENTRY",
        "bookie_BOOKIE_READ_ENTRY_BYTES",
    ):
        path = java[family][2]
        for success, csv_file in (("true", path), ("false", path.with_name(path.stem + "-fail.csv"))):
            assert ours.sum(f"{family}_count", success=success) == csv_count(csv_file), (family, success)
    for family in ("bookie_WRITE_BYTES", "bookie_READ_BYTES"):
        assert ours.sum(family) == csv_count(java[family][2]) > 0, family
    assert csv_count(java["bookkeeper_server_READ_ENTRY_FENCE_REQUEST"][2]) > 0


def test_the_dashboards_metrics_are_ours_with_their_types_and_labels(java, ours):
    for name, (family, kind, labels) in DASHBOARD.items():
        samples = ours.find(name)
        assert samples, f"{name}: not exported"
        assert ours.types[family] == kind and all({k for k, _ in s.labels} == labels for s in samples), name
        assert java[family][0] == kind, f"{name}: not a {kind} on the Java bookie"
    assert len(DASHBOARD) + len(DASHBOARD_DB) + len(DASHBOARD_ABSENT) == 22
    for name in DASHBOARD_ABSENT:
        assert not ours.find(name) and name not in java, name
    assert "bookie_gc_DELETED_LEDGER_TOTAL" in java and ours.find("bookie_gc_DELETED_LEDGER_TOTAL")


def test_the_dashboards_db_ledger_storage_metrics_are_served_by_a_db_ledger_storage_bookie(java, ours, db_bookie):
    bookie, got = db_bookie
    current = f"{bookie.ledger_dir}/current"
    for name, (family, kind, labels) in DASHBOARD_DB.items():
        samples = got.find(name)
        assert samples, f"{name}: not exported by a DbLedgerStorage bookie"
        assert got.types[family] == kind and [dict(s.labels) for s in samples] == [dict.fromkeys(labels, current)], (
            name,
            samples,
        )
        # a bookie without that storage has no such event: nothing exported (nor by the Java bookie's)
        assert not ours.find(name) and name not in java, name
    assert got.sum("bookie_ledgers_count") == 1  # the ledger written
    assert got.sum("bookie_write_cache_size") + got.sum("bookie_entries_count") > 0  # in the cache, or flushed

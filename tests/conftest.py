"""Shared fixtures: one real ZooKeeper for the session (the embedded one), a fresh cluster root per test; and the
tiers: every test is marked with what it needs by the folder it lives in (``TIERS``).

As in kazoo's harness, each test gets its own namespace (``/t<N>/ledgers``), and ZooKeeper's log is attached to
the report of a failing test.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from bkctl.cli import cli
from bookie.client.config import TLS_VARIABLES
from bookie.local.process import free_port, stop_process_group, tail
from bookie.local.zookeeper import EmbeddedZooKeeper
from bookie.meta.store import MetadataStore
from bookie.meta.uri import parse_service_uri

from support.cluster import BookieHarness
from support.security import (
    DIGEST_PASSWORD,
    DIGEST_USER,
    LEDGER_PASSWORD,
    SASL_PASSWORD,
    SASL_USER,
    jaas_client,
    private_file,
)

_namespaces = itertools.count(1)

# Every machine runs the suite on one ZooKeeper, the one the `test` extra brings (PySpark's jars, 3.9), whatever the
# host has installed (the sandbox prefers a host's own: Debian's package is 3.8); processes the tests start inherit it.
if "ZOOKEEPER_PATH" not in os.environ and (spec := importlib.util.find_spec("pyspark")) is not None:
    os.environ["ZOOKEEPER_PATH"] = str(Path(next(iter(spec.submodule_search_locations or ()))) / "jars")

# What the tests of a folder need (the longest folder that holds a test wins); pyproject.toml describes the markers
# ([tool.pytest.ini_options] markers). A new test gets its folder's markers: put it where it belongs.
TIERS = {
    "unit": ("pure",),
    "cli/unit": ("pure",),
    "cli/cluster": ("zookeeper", "bookies"),
    "integration/meta": ("zookeeper",),
    "integration": ("zookeeper", "bookies"),
    "interop": ("zookeeper", "bookies", "oracle"),
    "spark": ("zookeeper", "bookies", "spark"),
    "faults": ("zookeeper", "bookies", "faults"),
}
# Markers a test may carry itself, when it needs what its folder's other tests do not: ``root``, ``slow``, or a need
# of another tier (then its folder's ``pure`` does not apply).
NEEDS = ("zookeeper", "bookies", "oracle", "spark", "faults")
TEST_MARKERS = ("root", "slow", *NEEDS)
TESTS = Path(__file__).parent


def tier(path: Path) -> tuple[str, ...]:
    """The markers of the folder of ``path`` (a test file or folder under tests/)."""
    try:
        where = path.relative_to(TESTS).as_posix()
    except ValueError:
        return ()
    for folder in sorted(TIERS, key=len, reverse=True):
        if where == folder or where.startswith(folder + "/"):
            return TIERS[folder]
    return ()


# With pytest-xdist (`-n 2 --dist loadgroup`, as tests/run runs the suite), the order in which the modules are handed
# out: the longest first (a module's tests run on one worker, sharing its clusters), the many short ones last to fill.
LONGEST_FIRST = ("faults", "oracle", "spark", "bookies", "zookeeper", "pure")


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    for item in items:
        own = {mark.name for mark in item.iter_markers()}
        for name in tier(item.path):
            if not (name == "pure" and own.intersection(NEEDS)):
                item.add_marker(name)
        if item.get_closest_marker("root") and os.geteuid() != 0:
            item.add_marker(pytest.mark.skip(reason="needs root to mount filesystems or set firewall rules"))
    # xdist's workers, which collect what runs, see `--dist loadgroup` as option.loadgroup (their own dist is "no")
    if config.getoption("dist", "no") == "loadgroup" or getattr(config.option, "loadgroup", False):
        for item in items:
            # a module is one unit of work; Spark's modules are one, so that one worker starts a Spark session
            group = "spark" if "spark" in tier(item.path) else item.path
            item.add_marker(pytest.mark.xdist_group(str(group)))

        def rank(item):
            return next(i for i, name in enumerate(LONGEST_FIRST) if name == "pure" or item.get_closest_marker(name))

        items.sort(key=rank)  # stable: the order within a rank is the collection's


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    """Stop when xdist will not keep a module on one worker (its tests' ids carry no group): the modules would split
    across both workers and start their clusters twice. pytest 9.2 did so silently (pytest-xdist#1386)."""
    if node.config.getoption("dist", "no") == "loadgroup" and ids and not any("@" in i for i in ids):
        pytest.exit("pytest-xdist does not group the tests by module with this pytest (pytest-xdist#1386)", 4)


def pytest_ignore_collect(collection_path: Path, config):
    """With ``-m``, a folder none of whose tests can match is not even imported: ``-m pure`` imports no module that
    needs Spark or the oracle. A test's own markers (TEST_MARKERS) may make it match, so they count too."""
    expression = config.option.markexpr
    if not expression or not tier(collection_path):
        return None
    where = collection_path.relative_to(TESTS).as_posix()
    if any(folder.startswith(where + "/") for folder in TIERS):  # a folder below has a tier of its own
        return None
    from _pytest.mark.expression import Expression

    compiled = Expression.compile(expression)
    folder = set(tier(collection_path))
    for marks in (folder, folder | set(TEST_MARKERS)):
        if compiled.evaluate(marks.__contains__):
            return None
    return True


@pytest.fixture(autouse=True)
def _pure_starts_no_process(request, monkeypatch):
    """A ``pure`` test runs nothing but this Python (and bash, which click's completion asks for its version): it
    fails when it starts any other program (a ZooKeeper, a JVM, a service manager), which would make
    ``tests/run --fast`` need more than a fresh clone has."""
    if request.node.get_closest_marker("pure") is None:
        return
    popen_init = subprocess.Popen.__init__

    def guarded(self, args, *rest, **kwargs):
        program = args if isinstance(args, (str, bytes, os.PathLike)) else args[0]
        if kwargs.get("shell") or (os.fspath(program) != sys.executable and Path(os.fspath(program)).name != "bash"):
            pytest.fail(f"a pure test started {args!r}: move it to a folder whose tier runs processes (conftest TIERS)")
        popen_init(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", guarded)


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory):
    """The ZooKeeper of the tests' clusters. It grants sessions up to 120 s (ZooKeeper's default caps them at 20
    ticks, 20 s): a test whose killed or paused process must keep its lock or registration through several bkctl
    runs asks for a session that outlasts them under load."""
    zk = EmbeddedZooKeeper(tmp_path_factory.mktemp("zookeeper"), free_port(), max_session_ms=120_000)
    pid = zk.start()
    yield zk
    stop_process_group(pid)


@pytest.fixture(scope="session")
def secure_zookeeper(tmp_path_factory):
    """A ZooKeeper that also accepts SASL DIGEST-MD5 logins of support.security.SASL_USER (digest needs nothing).
    It answers `dump` too: the oracle's bk-cluster waits for Java bookies' registrations with it, or else with an
    unauthenticated ZooKeeper shell that a secure cluster refuses."""
    zk = EmbeddedZooKeeper(
        tmp_path_factory.mktemp("secure-zk"),
        free_port(),
        sasl_users={SASL_USER: SASL_PASSWORD},
        four_letter_words=("ruok", "srvr", "conf", "cons", "dump"),
    )
    pid = zk.start()
    yield zk
    stop_process_group(pid)


@pytest.fixture
def credentials(tmp_path):
    """ZooKeeper credentials of both kinds (a JAAS Client section, a digest file) and a ledger password file,
    each 0600."""
    return {
        "jaas": jaas_client(tmp_path / "jaas.conf"),
        "digest": private_file(tmp_path / "zk-digest", f"{DIGEST_USER}:{DIGEST_PASSWORD}\n"),
        "ledger": private_file(tmp_path / "ledger-password", LEDGER_PASSWORD + "\n"),
    }


@pytest.fixture
def service_uri(zookeeper) -> str:
    """A metadata service URI with a root of its own, not yet initialised."""
    return f"zk+hierarchical://{zookeeper.address}/t{next(_namespaces)}/ledgers"


@pytest.fixture
def store(service_uri):
    with MetadataStore(parse_service_uri(service_uri)) as s:
        yield s


@pytest.fixture
def cluster(store):
    """An initialised cluster: the store, after ``init_cluster``."""
    from bookie.meta.layout import init_cluster

    init_cluster(store)
    return store


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path):
    """No test reaches a sandbox, contexts or configuration of the machine it runs on."""
    monkeypatch.setenv("BKCTL_SANDBOX_DIR", str(tmp_path / "sandbox-state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # bkctl's contexts file, in bkctl/config.yaml
    for name in (
        "BKCTL_SERVICE_URI",
        "BKCTL_CONF",
        "BKCTL_CONTEXT",
        "BKCTL_LOG_FORMAT",
        "BKCTL_LEDGER_PASSWORD",
        *TLS_VARIABLES,
    ):
        monkeypatch.delenv(name, raising=False)
    for name in (
        "BKCTL_ZK_ENABLE_SECURITY",
        "BKCTL_ZK_DIGEST_AUTH_FILE",
        "BKCTL_ZK_JAAS_CONFIG",
        "BKCTL_ZK_SASL_CLIENTCONFIG",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "80")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    zk = item.funcargs.get("zookeeper") if hasattr(item, "funcargs") else None
    if report.failed and zk is not None:
        report.sections.append(("zookeeper log (tail)", tail(Path(zk.log_path), 40)))


def pytest_configure(config):
    os.environ.setdefault("PYTHONUNBUFFERED", "1")


@pytest.fixture
def harness(cluster, service_uri, tmp_path):
    bookies = BookieHarness(cluster, service_uri, tmp_path)
    yield bookies
    bookies.close()


@pytest.fixture
def bkctl():
    """Run bkctl in-process, as a user would type it; exit code, stdout and stderr apart."""
    runner = CliRunner()

    def run(*args: str, input: str | None = None):
        return runner.invoke(cli, list(args), input=input, catch_exceptions=False)

    return run

"""The output contract, over the whole command tree: every command with -o json|yaml prints one document on stdout
(or nothing), never a sentence; every time in milliseconds since the epoch has its ISO-8601 twin.

Each command runs in-process against a real cluster of its own (two bookies up, a third stopped, a Pulsar topic, an
auditor standing, a ledger marked under-replicated); destructive ones run with --dry-run or on a throwaway ledger.
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner
from pulsar_broker import Broker

from bkctl.cli import cli
from bookie.client import BookKeeper
from bookie.meta.racks import update_mapping
from bookie.meta.registration import BookieRegistry
from bookie.meta.store import MetadataStore
from bookie.meta.underreplication import UnderReplicationManager
from bookie.meta.uri import parse_service_uri
from bookie.storage.config import StorageConfig
from bookie.storage.db.storage import DbLedgerStorage

from support.backups import write_backup
from support.cli import WITHOUT_OUTPUT_OPTION, command_tree
from support.cluster import shared_cluster
from support.storage import add
from support.waiting import wait_for

# Arguments of each command after `bkctl -u URI` (unless they start with -u) and before `-o FORMAT`, and the exit
# codes the run may end with. {L}: a closed ledger (password pw); {T}: a new throwaway ledger; {B}: a writable
# bookie; {GONE}: the stopped bookie; {GONE_JOURNAL}, {GONE_LOG}, {GONE_INDEX}, {GONE_DIR}: its files;
# {FRESH}: the URI of a root with no cluster yet ({FRESH_IID}: the same root initialised, its instance id); {TMP}: an
# empty directory; {GONE_CONF}, {GONE_JDIR}: the stopped bookie's bk_server.conf and journal directory; {GONE_COOKIE},
# {COOKIE}: its cookie and a new bookie's, as `cookie generate` writes them; {IP_CONF}: a bk_server.conf whose bookie
# id is its IP address; {DB_JDIR}, {DB_DIR}: a stopped DbLedgerStorage bookie's directories.
# {BACKUP}: a backup of {L} made without Spark (support/backups.py).
OK = (0,)
RUNS: dict[tuple[str, ...], tuple[list[str], tuple[int, ...]]] = {
    ("autorecovery", "disable"): (["--dry-run"], OK),
    ("autorecovery", "enable"): ([], OK),
    ("autorecovery", "list-under-replicated"): (["--fix", "--dry-run"], (3,)),  # its rows with --explain's reasons
    ("autorecovery", "lost-bookie-recovery-delay"): (["--set", "0"], OK),
    ("autorecovery", "status"): ([], OK),
    ("autorecovery", "trigger-audit"): ([], OK),
    ("autorecovery", "who-is-auditor"): ([], OK),
    ("bench", "bookie"): (["--bookie", "{B}", "--entries", "200", "--batch", "50", "--raw-dir", "{TMP}"], OK),
    ("bench", "read"): (["-e", "2", "-w", "2", "-a", "2", "--entries", "100"], OK),
    ("bench", "write"): (["-e", "2", "-w", "2", "-a", "2", "--entries", "100"], OK),
    ("bookie", "check-db-index"): (["--journal-dir", "{DB_JDIR}", "--ledger-dir", "{DB_DIR}", "--verify-entries"], OK),
    ("bookie", "check-local"): (["--journal-dir", "{GONE_JDIR}", "--ledger-dir", "{GONE_DIR}"], OK),
    ("bookie", "convert-storage"): (
        ["--to", "interleaved", "--journal-dir", "{DB_JDIR}", "--ledger-dir", "{DB_DIR}", "--dry-run"],
        OK,
    ),
    ("bookie", "format"): (["-u", "{URI}", "-c", "{GONE_CONF}", "bookie", "format", "--dry-run"], OK),
    ("bookie", "init"): (["-u", "{URI}", "-c", "{GONE_CONF}", "bookie", "init", "--journal-dir", "{TMP}/j"], (0, 3)),
    ("bookie", "inspect", "ledgers"): (["{DB_DIR}"], OK),
    ("bookie", "inspect", "locations"): (["{DB_DIR}"], OK),
    ("bookie", "list-files"): (["--journal-dir", "{GONE_JDIR}", "--ledger-dir", "{GONE_DIR}"], OK),
    ("bookie", "rebuild-db-index"): (
        ["locations", "--journal-dir", "{DB_JDIR}", "--ledger-dir", "{DB_DIR}", "--dry-run"],
        OK,
    ),
    ("bookie", "rebuild-index"): (
        ["{L}", "--password", "pw", "--journal-dir", "{GONE_JDIR}", "--ledger-dir", "{GONE_DIR}", "--dry-run"],
        OK,
    ),
    ("bookie", "replace-in-ledgers"): (["{GONE}", "127.0.0.1:1", "--dry-run"], OK),
    ("cluster", "format"): (["-u", "{FRESH}", "cluster", "format", "--dry-run"], OK),
    ("cluster", "nuke"): (["-u", "{FRESH}", "cluster", "nuke", "--instance-id", "{FRESH_IID}", "--dry-run"], OK),
    ("cookie", "create"): (["127.0.0.1:1", "--cookie-file", "{COOKIE}", "--dry-run"], (0, 2)),
    ("cookie", "delete"): (["{GONE}", "--dry-run"], OK),
    ("cookie", "generate"): (
        ["{GONE}", "--journal-dirs", "{TMP}/j", "--ledger-dirs", "{TMP}/l", "--output-file", "{TMP}/c"],
        OK,
    ),
    ("cookie", "get"): (["{B}"], OK),
    ("cookie", "update"): (["{GONE}", "--cookie-file", "{GONE_COOKIE}", "--dry-run"], OK),
    ("ledger", "update"): (
        ["-u", "{URI}", "-c", "{IP_CONF}", "ledger", "update", "--bookie-id", "ip", "--dry-run"],
        OK,
    ),
    ("bookie", "compaction", "resume"): (["{B}"], OK),
    ("bookie", "compaction", "run"): (["{B}", "--ledger", "{L}", "--dry-run"], OK),
    ("bookie", "compaction", "suspend"): (["{B}", "--major"], OK),
    ("bookie", "decommission"): (["{GONE}", "--dry-run"], OK),
    ("bookie", "drain"): (["{B}", "--dry-run"], (0, 3)),
    ("bookie", "expand-storage"): (["-u", "{URI}", "-c", "{GONE_CONF}", "bookie", "expand-storage", "--dry-run"], OK),
    ("bookie", "gc"): (["{B}", "--wait", "--timeout", "60"], OK),
    ("bookie", "gc-status"): (["--all"], OK),
    ("bookie", "info"): (["--all"], OK),
    ("bookie", "inspect", "entrylog"): (["{GONE_LOG}"], OK),
    ("bookie", "inspect", "index"): (["{GONE_INDEX}"], OK),
    ("bookie", "inspect", "journal"): (["{GONE_JOURNAL}"], OK),
    ("bookie", "inspect", "lastmark"): (["{GONE_DIR}"], OK),
    ("bookie", "metrics"): (["{B}", "--interval", "0.1"], OK),
    ("bookie", "readonly"): (["{B}", "--off"], OK),
    ("bookie", "recover"): (["{GONE}", "--dry-run"], OK),
    ("bookie", "usage"): (["{B}", "--logs", "3"], OK),
    ("bookies", "list"): (["--all"], OK),
    ("bookies", "racks", "delete"): (["127.0.0.1:1", "--dry-run"], OK),
    ("bookies", "racks", "get"): ([], OK),
    ("bookies", "racks", "set"): (["{B}", "--rack", "/rack-a", "--dry-run"], OK),
    ("cluster", "backup"): (["{L}", "--to", "{TMP}/backup"], OK),
    ("cluster", "check"): (["--recheck-delay", "0", "--latency"], (0, 3)),
    ("cluster", "check-impact"): (["--bookie", "{B}"], (0, 3)),
    ("cluster", "info"): ([], OK),
    ("cluster", "usage"): (["--logs", "1"], OK),
    ("cluster", "rebalance"): (["--dry-run"], (0, 3)),
    ("cluster", "repair-placement"): (["--dry-run"], (0, 3)),
    ("cluster", "restore"): (["--from", "{BACKUP}", "--dry-run"], OK),  # {L}, restored already
    ("cluster", "init"): (["-u", "{FRESH}", "cluster", "init", "--dry-run"], OK),
    ("config", "current-context"): ([], OK),
    ("config", "delete-context"): (["other"], OK),
    ("config", "get-contexts"): ([], OK),
    ("config", "set-context"): (["other", "--timeout", "3"], OK),
    ("config", "use-context"): (["other"], OK),
    ("ledger", "copy"): (["--meta", "no=such", "--to-cluster", "{FRESH}", "--dry-run"], OK),  # {FRESH} has no bookie
    ("ledger", "create"): (["-e", "1", "-w", "1", "-a", "1", "--meta", "purpose=test"], OK),
    ("ledger", "delete"): (["{T}", "--yes"], OK),
    ("ledger", "export"): (["{L}", "--to", "{TMP}/out", "--dry-run"], OK),
    ("ledger", "list"): (["--meta"], OK),
    ("ledger", "metadata"): (["{L}"], OK),
    ("ledger", "read"): (["{L}", "--password", "pw"], OK),
    ("ledger", "recover"): (["{L}", "--password", "pw", "--dry-run"], OK),
    ("ledger", "simpletest"): (["-e", "2", "-w", "2", "-a", "2", "-n", "10"], OK),
    ("pulsar", "missing"): (["--recheck-delay", "0"], (1, 3)),  # 1: ledgers on the stopped bookie not checked
    ("pulsar", "orphans"): (["--min-age", "0s"], (0, 3)),
    ("pulsar", "owners"): ([], OK),
    ("pulsar", "usage"): ([], OK),
    ("top",): (["--once", "--interval", "0.1"], OK),
}
# The sandbox's commands start and stop processes of their own: one scenario runs them all (below).
SANDBOX = {("sandbox", verb) for verb in ("start", "status", "stop", "stop-bookie", "start-bookie")}

LEAVES = {path: command for path, command in command_tree().items() if not isinstance(command, click.Group)}
TIME = re.compile(r"(^|[a-z])[tT]ime$")  # ctime, startTime, lastMajorCompactionTime: not timeout, seconds, ...


def test_every_command_is_run_below():
    assert set(LEAVES) == set(RUNS) | SANDBOX | set(WITHOUT_OUTPUT_OPTION)


def assert_times_have_iso_twins(doc, where: str) -> None:
    """Every epoch-milliseconds time (a key ending in time/Time with an int value) has ``<key>Iso`` beside it."""
    if isinstance(doc, list):
        for item in doc:
            assert_times_have_iso_twins(item, where)
    elif isinstance(doc, dict):
        for key, value in doc.items():
            if TIME.search(key) and isinstance(value, int) and not isinstance(value, bool):
                assert f"{key}Iso" in doc, f"{where}: {key} has no {key}Iso"
                iso = doc[f"{key}Iso"]
                assert iso is None if value <= 0 else re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", iso)
            assert_times_have_iso_twins(value, where)


def parse(stdout: str, fmt: str):
    return json.loads(stdout) if fmt == "json" else yaml.safe_load(stdout)


def check_output(args: list[str], fmt: str, codes: tuple[int, ...]):
    """Run ``bkctl ARGS -o FMT``: an exit code of ``codes``, and stdout one document of FMT."""
    result = CliRunner().invoke(cli, [*args, "-o", fmt], catch_exceptions=False)
    where = f"bkctl {' '.join(args)} -o {fmt}: exit {result.exit_code}, stderr {result.stderr!r}"
    assert result.exit_code in codes, where
    assert result.stdout, f"{where}: nothing on stdout"
    try:
        doc = parse(result.stdout, fmt)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise AssertionError(f"{where}: stdout is not {fmt}: {exc}\n{result.stdout}") from None
    assert isinstance(doc, (dict, list)), f"{where}: stdout is a bare {type(doc).__name__}: {result.stdout!r}"
    assert_times_have_iso_twins(doc, where)
    return doc


@pytest.fixture(scope="module")
def live(zookeeper, tmp_path_factory):
    """Two bookies up and a third stopped (named by a Pulsar topic's ledger), an auditor standing, a ledger marked
    under-replicated, and {L}: a closed ledger of 5 entries on the two (password pw), in a sealed entry log of {B}."""
    directory = tmp_path_factory.mktemp("output")
    with shared_cluster(zookeeper, directory, 3) as harness:
        uri = parse_service_uri(harness.service_uri)
        with MetadataStore(uri) as store, BookKeeper(harness.service_uri) as bk:
            broker = Broker(store, uri.root.rsplit("/", 1)[0], bk)
            topic = "public/default/persistent/orders"
            on_gone = broker.data_ledger(topic)
            broker.managed_ledger(topic, [on_gone])
            gone = harness.bookies[2]
            gone.stop()
            wait_for(lambda: len(BookieRegistry(store).list()) == 2, "the stopped bookie unregistered")
            ledger = bk.create_ledger(2, 2, 2, password=b"pw")
            ledger.add_entries(b"entry-%d" % i for i in range(5))
            ledger.close()
            writable = harness.bookies[0]
            writable.stop()  # restarted: the entry log holding {L} is sealed, for `compaction run --ledger`
            harness.restart(writable)
            ur = UnderReplicationManager(store)
            ur.mark(on_gone, [gone.bookie_id])
            ur.vote("127.0.0.1:3181")  # an auditor standing, for as long as this session lives
            update_mapping(store, lambda m: m.updated("default", "127.0.0.1:1", "/rack-z"))  # for `racks delete`
            current = Path(gone.ledger_dir, "current")
            write_backup(directory / "backup", bk, [ledger.ledger_id])
            values = {
                "{L}": str(ledger.ledger_id),
                "{B}": harness.bookies[0].bookie_id,
                "{GONE}": gone.bookie_id,
                "{GONE_DIR}": gone.ledger_dir,
                "{GONE_LOG}": str(sorted(current.glob("*.log"))[0]),
                "{GONE_INDEX}": str(sorted(current.glob("*/*/*.idx"))[0]),
                "{GONE_JOURNAL}": str(sorted(Path(gone.journal_dir, "current").glob("*.txn"))[0]),
                "{GONE_JDIR}": gone.journal_dir,
                "{GONE_CONF}": str(gone.conf_path),
                "{IP_CONF}": ip_conf(directory),
                "{URI}": harness.service_uri,
                "{COOKIE}": cookie_file(harness.service_uri, "127.0.0.1:1", directory, [directory / "new"] * 2),
                "{GONE_COOKIE}": cookie_file(
                    harness.service_uri, gone.bookie_id, directory, [gone.journal_dir, gone.ledger_dir]
                ),
                "{BACKUP}": str(directory / "backup"),
                **db_bookie(directory / "db"),
            }
            yield harness.service_uri, values, bk


def cookie_file(uri: str, bookie_id: str, directory: Path, dirs: list) -> str:
    """The cookie of a bookie with these journal and ledger directories, written by `cookie generate`."""
    path = directory / f"{bookie_id}.cookie"
    dirs = ["--journal-dirs", str(dirs[0]), "--ledger-dirs", str(dirs[1])]
    done = CliRunner().invoke(cli, ["-u", uri, "cookie", "generate", bookie_id, *dirs, "--output-file", str(path)])
    assert done.exit_code == 0, done.output
    return str(path)


def ip_conf(directory: Path) -> str:
    """A bk_server.conf whose bookie id is its IP address and port (BookKeeper's default)."""
    path = directory / "ip.conf"
    path.write_text(
        f"bookiePort=3181\nallowLoopback=true\njournalDirectories={directory}/j\nledgerDirectories={directory}/l\n"
    )
    return str(path)


def db_bookie(root: Path) -> dict[str, str]:
    """A stopped DbLedgerStorage bookie's directories, with ledger 1's entries 0-9."""
    ledgers = (root / "ledgers",)
    storage = DbLedgerStorage(StorageConfig((root / "journal",), ledgers, ledgers))
    storage.start()
    add(storage, 1, 0, 10)
    storage.shutdown()
    return {"{DB_JDIR}": str(root / "journal"), "{DB_DIR}": str(ledgers[0])}


def initialised(uri: str) -> str:
    """Initialise the cluster at ``uri``; its instance id."""
    assert CliRunner().invoke(cli, ["-u", uri, "cluster", "init"]).exit_code == 0
    info = CliRunner().invoke(cli, ["-u", uri, "cluster", "info", "-o", "json"])
    return str(json.loads(info.stdout)["instanceId"])


@pytest.mark.parametrize("fmt", ["json", "yaml"])
@pytest.mark.parametrize("path", sorted(RUNS), ids=" ".join)
def test_every_command_prints_one_document_or_nothing(live, path, fmt, tmp_path, zookeeper):
    uri, values, bk = live
    args, codes = RUNS[path]
    if not args or args[0] != "-u":
        args = ["-u", uri, *path, *args]
    if path[0] == "config":  # contexts of this test's own contexts file
        for setup in (["config", "set-context", "other", "--service-uri", uri], ["config", "use-context", "other"]):
            assert CliRunner().invoke(cli, setup).exit_code == 0
    throwaway = bk.create_ledger(1, 1, 1).ledger_id if "{T}" in args else None
    fresh = f"zk+hierarchical://{zookeeper.address}/f{uuid.uuid4().hex[:8]}/ledgers"
    values = {**values, "{T}": str(throwaway), "{FRESH}": fresh, "{TMP}": str(tmp_path)}
    if path in (("cluster", "format"), ("cluster", "nuke"), ("ledger", "copy")):  # a cluster of their own
        values["{FRESH_IID}"] = initialised(fresh)
    args = [re.sub(r"\{[A-Z_]+\}", lambda m: values[m.group(0)], arg) for arg in args]
    check_output(args, fmt, codes)


def test_the_sandbox_commands_print_one_document(tmp_path):
    state = ["--dir", str(tmp_path / "sandbox")]
    started = check_output(["sandbox", "start", "--bookies", "1", *state], "json", OK)
    try:
        (bookie,) = started["bookies"]
        assert check_output(["sandbox", "status", *state], "yaml", OK)["serviceUri"] == started["serviceUri"]
        stopped = check_output(["sandbox", "stop-bookie", "1", *state], "json", OK)
        assert stopped == {"bookieId": bookie["bookieId"], "state": "stopped"}
        again = check_output(["sandbox", "start-bookie", "1", *state], "yaml", OK)
        assert again["bookieId"] == bookie["bookieId"] and again["state"] == "started" and again["pid"]
    finally:
        done = check_output(["sandbox", "stop", *state], "json", OK)
    assert done == {"stateDir": str(tmp_path / "sandbox"), "stopped": True}
    assert check_output(["sandbox", "stop", *state], "yaml", OK)["stopped"] is False

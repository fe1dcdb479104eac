"""No traceback from any command on any input, against a live cluster: bad inputs of each command group end in
exactly one line on stderr starting ``error:`` and an exit code from the documented table (bkctl/errors.py).
In-process with CliRunner (exceptions caught, so a traceback fails the test instead of escaping it).
"""

from __future__ import annotations

import pytest

from bookie.client import BookKeeper

from support.cli import (
    EVERY_GROUP,
    FAILED,
    NOT_FOUND,
    PROBLEMS,
    UNAUTHORIZED,
    USAGE,
    assert_one_line_error,
    invoke,
)
from support.cluster import shared_cluster


@pytest.fixture(scope="module")
def live(zookeeper, tmp_path_factory):
    """One bookie, a closed ledger of 5 entries (E1 W1 A1), and a file of random bytes."""
    directory = tmp_path_factory.mktemp("bad-input")
    garbage = directory / "garbage"
    garbage.write_bytes(bytes(range(256)) * 8)
    with shared_cluster(zookeeper, directory, 1) as harness:
        with BookKeeper(harness.service_uri) as bk:
            ledger = bk.create_ledger(1, 1, 1, password=b"pw")
            ledger.add_entries(b"entry-%d" % i for i in range(5))
            ledger.close()
        yield harness.service_uri, {"{L}": str(ledger.ledger_id), "{G}": str(garbage), "{O}": str(directory / "out")}


# Arguments after `bkctl -u URI`; {L} is the live ledger (password pw), {G} a file of random bytes, {O} a
# path that does not exist (an export that went ahead would write it). Expected exit code per the documented table.
BAD_INPUTS = {
    "root": [
        (["--bogus", "ledger", "list"], USAGE),
        (["--timeout", "0", "ledger", "list"], USAGE),
        (["--timeout", "soon", "ledger", "list"], USAGE),
        (["-c", "/nonexistent/bk.conf", "ledger", "list"], USAGE),
        (["-c", "{G}", "ledger", "list"], USAGE),
        (["nope"], USAGE),
    ],
    "ledger": [
        (["ledger", "list", "--bogus"], USAGE),
        (["ledger", "list", "--meta", "novalue"], USAGE),
        (["ledger", "read"], USAGE),
        (["ledger", "read", "x"], USAGE),
        (["ledger", "read", "-3"], USAGE),
        (["ledger", "read", "424242"], NOT_FOUND),
        (["ledger", "read", "{L}", "--password", "wrong"], UNAUTHORIZED),
        (["ledger", "read", "{L}", "--password", "pw", "--from", "9"], USAGE),
        (["ledger", "read", "{L}", "--password", "pw", "--from", "3", "--to", "1"], USAGE),
        (["ledger", "read", "{L}", "--from", "-1"], USAGE),
        (["ledger", "read", "{L}", "--format", "xml"], USAGE),
        (["ledger", "read", "{L}", "--password", "a", "--password-file", "/etc/hostname"], USAGE),
        (["ledger", "metadata", "424242"], NOT_FOUND),
        (["ledger", "metadata", "1e3"], USAGE),
        (["ledger", "create", "-e", "0"], USAGE),
        (["ledger", "create", "--input", "/"], USAGE),
        (["ledger", "create", "--password-file", "/"], USAGE),
        (["ledger", "create", "--meta", "novalue"], USAGE),
        (["ledger", "create", "--digest", "md5"], USAGE),
        (["ledger", "create", "-e", "1", "-w", "2"], USAGE),
        (["ledger", "create", "--input", "/nonexistent/file"], USAGE),
        (["ledger", "delete", "424242", "--yes"], NOT_FOUND),
        (["ledger", "delete"], USAGE),
        (["ledger", "delete", "x", "--yes"], USAGE),
        (["ledger", "metadata", "99999999999999999999999"], USAGE),
        (["ledger", "recover", "424242"], NOT_FOUND),
        (["ledger", "export", "9-3", "--to", "{O}"], USAGE),
        (["ledger", "export", "40-90", "--to", "{O}"], NOT_FOUND),
        (["ledger", "export", "{L}", "--to", "{O}", "--partition-bytes", "lots"], USAGE),
        (["ledger", "simpletest", "-n", "x"], USAGE),
        (["ledger", "update"], USAGE),
        (["ledger", "update", "--bookie-id", "ip"], USAGE),  # no -c naming the bookie
    ],
    "pulsar": [  # the live cluster has no Pulsar metadata: a command that needs it is refused (exit 5)
        (["pulsar", "missing"], NOT_FOUND),
        (["pulsar", "missing", "--verify-entries", "101"], USAGE),
        (["pulsar", "orphans"], NOT_FOUND),
        (["pulsar", "orphans", "--min-age", "soon"], USAGE),
        (["pulsar", "orphans", "--min-age", "-1h"], USAGE),
        (["pulsar", "orphans", "--pulsar-zk", ""], USAGE),
        (["pulsar", "orphans", "--pulsar-zk", "[::1:2181"], USAGE),
        (["pulsar", "orphans", "--pulsar-zk", "h:99999"], USAGE),
        (["pulsar", "orphans", "--pulsar-zk", "h:1//x"], USAGE),
        (["pulsar", "owners", "x"], USAGE),
        (["pulsar", "owners", "424242"], NOT_FOUND),
        (["pulsar", "usage", "--by", "cluster"], USAGE),
        (["ledger", "list", "--owner"], NOT_FOUND),
    ],
    "cluster": [
        (["cluster", "check", "--ledger", "424242"], NOT_FOUND),
        (["cluster", "check", "--concurrency", "0"], USAGE),
        (["cluster", "check", "--verify-entries", "101"], USAGE),
        (["cluster", "check", "--prometheus-file", "/nonexistent/dir/check.prom"], USAGE),
        (["cluster", "check", "--allow-under-replicated", "--under-replicated-grace", "5"], USAGE),
        (["cluster", "check-impact"], USAGE),
        (["cluster", "check-impact", "--bookie", "nope:1"], NOT_FOUND),
        (["cluster", "check-impact", "--bookie", "nope:1", "--allow", "data-loss,nope"], USAGE),
        (["cluster", "check-impact", "--bookie", "nope:1", "--for", "reboot"], USAGE),
        (["cluster", "init"], FAILED),
        (["cluster", "info", "extra"], USAGE),
        (["cluster", "nuke"], USAGE),
        (["cluster", "nuke", "--instance-id", "not-it", "--yes"], PROBLEMS),
        (["cluster", "format", "--yes"], PROBLEMS),  # the live bookie is registered
    ],
    "cookie": [
        (["cookie", "get", "nope:1"], NOT_FOUND),
        (["cookie", "get"], USAGE),
        (["cookie", "create", "nope:1", "--cookie-file", "{G}"], USAGE),
        (["cookie", "create", "nope:1", "--cookie-file", "/nonexistent"], USAGE),
        (["cookie", "update", "nope:1", "--cookie-file", "{G}", "--yes"], USAGE),
        (["cookie", "delete", "nope:1", "--yes"], NOT_FOUND),
        (["cookie", "generate", "nope:1", "--output-file", "{O}"], USAGE),
        (
            ["cookie", "generate", "bad id", "--journal-dirs", "/j", "--ledger-dirs", "/l", "--output-file", "{O}"],
            USAGE,
        ),
        (["cookie", "generate", "a:1", "--journal-dirs", "/j", "--ledger-dirs", "/l", "--output-file", "/"], USAGE),
    ],
    "bookies": [
        (["bookies", "list", "-o", "xml"], USAGE),
        (["bookies", "list", "extra"], USAGE),
    ],
    "bookie": [
        (["bookie", "info", "nope:1"], NOT_FOUND),
        (["bookie", "info"], USAGE),
        (["bookie", "readonly"], USAGE),
        (["bookie", "gc", "--all", "nope:1"], USAGE),
        (["bookie", "gc", "nope:1"], NOT_FOUND),
        (["bookie", "gc-status"], USAGE),
        (["bookie", "metrics"], USAGE),
        (["bookie", "metrics", "nope:1"], NOT_FOUND),
        (["bookie", "metrics", "--all", "--interval", "0"], USAGE),
        (["bookie", "metrics", "--all", "--metrics-port", "0"], USAGE),
        (["bookie", "readonly", "nope:1", "--on"], NOT_FOUND),
        (["bookie", "compaction", "suspend"], USAGE),
        (["bookie", "compaction", "run"], USAGE),
        (["bookie", "compaction", "run", "nope:1", "--log", "zz"], USAGE),
        (["bookie", "compaction", "run", "nope:1", "--log", "1f"], NOT_FOUND),
        (["bookie", "decommission", "127.0.0.1:9999", "--yes"], NOT_FOUND),
        (["bookie", "decommission", "127.0.0.1:9999", "--stall-after", "0"], USAGE),
        (["bookie", "decommission", "127.0.0.1:9999", "--stall-after", "nan"], USAGE),
        (["bookie", "decommission", "127.0.0.1:9999", "--timeout", "nan"], USAGE),
        (["bookie", "drain"], USAGE),
        (["bookie", "drain", "127.0.0.1:9999", "--yes"], NOT_FOUND),
        (["bookie", "drain", "127.0.0.1:9999", "--rate", "0"], USAGE),
        (["bookie", "drain", "127.0.0.1:9999", "--wait-writers", "nan"], USAGE),
        (["bookie", "recover", "9.9.9.9:3181", "--dry-run"], NOT_FOUND),
        (["bookie", "recover", ",", "--dry-run"], USAGE),
        (["bookie", "recover", "1.2.3.4:5", "--ledger", "x"], USAGE),
        (["bookie", "inspect", "journal", "/nonexistent/1.txn"], USAGE),
        (["bookie", "inspect", "entrylog", "/"], USAGE),
        (["bookie", "inspect", "lastmark", "/"], NOT_FOUND),
        (["bookie", "inspect", "journal", "{G}"], FAILED),
        (["bookie", "inspect", "entrylog", "{G}"], FAILED),
        (["bookie", "inspect", "entrylog", "{G}", "--map"], FAILED),
        (["bookie", "inspect", "index", "{G}"], FAILED),
        (["bookie", "inspect", "lastmark", "{G}"], USAGE),
        (["bookie", "run", "--port", "0"], USAGE),
        (["bookie", "run", "--set", "novalue"], USAGE),
        (["bookie", "run", "--conf", "{G}"], USAGE),
        (
            ["bookie", "run", "--set", "ledgerStorageClass=org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage"],
            USAGE,
        ),
        (["bookie", "run", "--set", "httpServerPort=http"], USAGE),
        (["bookie", "list-files"], USAGE),
        (["bookie", "list-files", "--journal-dir", "/j"], USAGE),
        (["bookie", "check-local", "--journal-dir", "{O}", "--ledger-dir", "{O}"], NOT_FOUND),
        (["bookie", "rebuild-index"], USAGE),
        (["bookie", "rebuild-index", "x", "--password", "pw"], USAGE),
        (["bookie", "rebuild-index", "1", "--journal-dir", "{O}", "--ledger-dir", "{O}"], USAGE),
        (["bookie", "rebuild-index", "1", "--b64-password", "*", "--journal-dir", "{O}", "--ledger-dir", "{O}"], USAGE),
        (["bookie", "format", "--journal-dir", "{O}", "--ledger-dir", "{O}", "--set", "x"], USAGE),
        (["bookie", "init"], USAGE),
        (["bookie", "replace-in-ledgers", "a:1"], USAGE),
        (["bookie", "replace-in-ledgers", "a:1", "a:1", "--yes"], USAGE),
        (["bookie", "replace-in-ledgers", "a:1", "b:1", "--rate", "0"], USAGE),
        (["bookie", "replace-in-ledgers", "a:1", "b:1", "--limit", "0"], USAGE),
    ],
    "autorecovery": [
        (["autorecovery", "lost-bookie-recovery-delay", "--set", "-5"], USAGE),
        (["autorecovery", "lost-bookie-recovery-delay", "--set", "2147483648"], USAGE),  # a Java int in BookKeeper
        (["autorecovery", "run", "--poll", "x"], USAGE),
        (["autorecovery", "list-under-replicated", "--dry-run"], USAGE),  # what --fix would do: --fix is needed
        (["autorecovery", "list-under-replicated", "--count", "--explain"], USAGE),
        (["autorecovery", "status", "--bogus"], USAGE),
    ],
    "bench": [
        (["bench", "write", "--entries", "0"], USAGE),
        (["bench", "read", "--ledger", "424242"], NOT_FOUND),
        (["bench", "bookie", "--raw-dir", "{G}"], USAGE),
        (["bench", "bookie", "--entry-size", "0"], USAGE),
    ],
    "sandbox": [
        (["sandbox", "start", "--bookies", "99"], USAGE),
        (["sandbox", "start", "--zk-port", "0"], USAGE),
        (["sandbox", "stop-bookie"], USAGE),
    ],
    "completion": [
        (["completion", "tcsh"], USAGE),
        (["completion"], USAGE),
    ],
    "config": [  # the contexts file is the test's own, empty (tests/conftest.py)
        (["config", "use-context", "nope"], NOT_FOUND),
        (["config", "delete-context", "nope", "--dry-run"], NOT_FOUND),
        (["config", "current-context"], NOT_FOUND),
        (["config", "get-contexts", "-o", "xml"], USAGE),
        (["config", "set-context", "x"], USAGE),
        (["config", "set-context", "x", "--timeout", "3"], USAGE),
        (["config", "set-context", "x", "--http-port", "65536"], USAGE),
        (["config", "set-context", "x", "--timeout", "nan"], USAGE),
        (["config", "set-context", "x y", "--service-uri", "zk://h/l"], USAGE),
        (["config", "set-context", "x", "--service-uri", "zk://[::1:2181/ledgers"], USAGE),
        (["config", "use-context"], USAGE),
    ],
}
CASES = [(group, args, code) for group, cases in BAD_INPUTS.items() for args, code in cases]


@pytest.mark.parametrize(("group", "args", "code"), CASES, ids=[f"{g}: {' '.join(a)}" for g, a, _ in CASES])
def test_bad_input_is_one_line_and_a_documented_exit_code(live, group, args, code):
    uri, names = live
    full = ["-u", uri, *(names.get(a, a) for a in args)]
    assert_one_line_error(invoke(*full), code, full)


@pytest.mark.parametrize("args", EVERY_GROUP, ids=" ".join)
def test_a_root_without_a_cluster_is_not_found(live, args):
    full = ["-u", live[0].replace("/ledgers", "/nope"), *args]
    result = invoke(*full)
    assert_one_line_error(result, NOT_FOUND, full)
    assert "/nope" in result.stderr

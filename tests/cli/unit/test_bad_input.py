"""No traceback from any command on any input, with no cluster: every command's --help works (the whole click tree,
lazily loaded groups included); a malformed or unreachable service ends in exactly one line on stderr starting
``error:`` and an exit code from the documented table (bkctl/errors.py). In-process with CliRunner (exceptions
caught, so a traceback fails the test instead of escaping it), and a few through a real process. The bad inputs of
each command group against a live cluster are in tests/cli/cluster/test_bad_input.py.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from support.cli import (
    EVERY_GROUP,
    UNREACHABLE,
    USAGE,
    assert_one_line_error,
    command_tree,
    invoke,
)


def command_paths() -> list[tuple[str, ...]]:
    """Every group and command under `bkctl`, as argument paths."""
    return list(command_tree())


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p) or "bkctl")
def test_every_command_has_help(path):
    result = invoke(*path, "--help")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout.startswith("Usage: ") and "Options:" in result.stdout


def test_the_walk_reaches_every_group_and_leaf():
    paths = set(command_paths())
    assert {("ledger", "read"), ("bookie", "inspect", "entrylog"), ("sandbox", "stop"), ("completion",)} <= paths
    assert len(paths) > 40


@pytest.fixture(scope="module")
def dead():
    from bookie.local.process import free_port

    return f"zk+hierarchical://127.0.0.1:{free_port()}/ledgers"


MALFORMED_URIS = [
    "not-a-uri",
    "zk://[::1:2181/ledgers",
    "zk://[::1]:x/ledgers",
    "zk+weird://h:1/ledgers",
    "zk://h:2181",
    "zk://h:99999/ledgers",
]


@pytest.mark.parametrize("uri", MALFORMED_URIS)
@pytest.mark.parametrize("args", EVERY_GROUP, ids=" ".join)
def test_a_malformed_service_uri_is_a_usage_error(uri, args):
    full = ["-u", uri, *args]
    assert_one_line_error(invoke(*full), USAGE, full)


@pytest.mark.parametrize("args", EVERY_GROUP[:3], ids=" ".join)
def test_a_dead_service_with_a_short_timeout_is_unreachable(dead, args):
    full = ["--timeout", "0.5", "-u", dead, *args]
    result = invoke(*full)
    assert_one_line_error(result, UNREACHABLE, full)
    assert dead.split("//")[1].split("/")[0] in result.stderr


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["--bogus"], USAGE),
        (["ledger", "read", "x"], USAGE),
        (["-u", "zk://[::1:2181/ledgers", "ledger", "list"], USAGE),
        (["--timeout", "1", "-u", "{dead}", "ledger", "list"], UNREACHABLE),
    ],
)
def test_in_a_real_process(dead, args, code):
    args = [a.replace("{dead}", dead) for a in args]
    proc = subprocess.run([sys.executable, "-m", "bkctl", *args], capture_output=True, text=True, timeout=30)
    assert "Traceback" not in proc.stderr
    assert proc.returncode == code and proc.stdout == ""
    assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1, proc.stderr

"""What every command shares: service URI resolution, configuration, errors and exit codes (with no cluster)."""

import time

import pytest

from bkctl import __version__

from support.cli import dead_uri


def test_help_lists_the_command_groups(bkctl):
    result = bkctl("--help")
    assert result.exit_code == 0
    section = result.stdout.split("Commands:\n")[1].split("\n\n")[0].splitlines()  # up to the examples
    assert [line.split()[0] for line in section if line.startswith("  ") and not line.startswith("   ")] == [
        "autorecovery",
        "bench",
        "bookie",
        "bookies",
        "cluster",
        "completion",
        "config",
        "cookie",
        "ledger",
        "pulsar",
        "sandbox",
        "top",
    ]


def test_version(bkctl):
    assert bkctl("--version").stdout == f"bkctl, version {__version__}\n"


@pytest.mark.parametrize("uri", ["not-a-uri", "zk+hierarchical://h:2181", "zk+weird://h:1/ledgers"])
def test_malformed_uri_exits_2(bkctl, uri):
    result = bkctl("-u", uri, "ledger", "list")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1


def test_unreachable_zookeeper_exits_6_within_10_seconds(bkctl):
    from bookie.local.process import free_port

    started = time.monotonic()
    result = bkctl("-u", f"zk+hierarchical://127.0.0.1:{free_port()}/ledgers", "cluster", "info")
    assert time.monotonic() - started < 10
    assert result.exit_code == 6
    assert result.stderr.startswith("error: cannot reach ZooKeeper at 127.0.0.1:") and result.stderr.count("\n") == 1


@pytest.mark.parametrize("how", ["flag", "env", "zkTimeout"])
def test_timeout_bounds_the_wait_for_an_unreachable_zookeeper(bkctl, monkeypatch, tmp_path, how):
    uri = dead_uri()
    args = ["-u", uri]
    if how == "flag":
        args = ["--timeout", "1", *args]
    elif how == "env":
        monkeypatch.setenv("BKCTL_TIMEOUT", "1")
    else:
        (tmp_path / "bk.conf").write_text(f"metadataServiceUri={uri}\nzkTimeout=1000\n")
        args = ["-c", str(tmp_path / "bk.conf")]
    started = time.monotonic()
    result = bkctl(*args, "ledger", "list")
    assert time.monotonic() - started < 5  # 8 s before
    address = uri.split("//")[1].split("/")[0]
    assert (result.exit_code, result.stderr) == (6, f"error: cannot reach ZooKeeper at {address} (gave up after 1 s)\n")


@pytest.mark.parametrize("value", ["0", "-1", "soon", "inf", "nan", "1e999", "100000000000"])
def test_a_bad_timeout_is_a_usage_error(bkctl, value, tmp_path):
    result = bkctl("--timeout", value, "-u", dead_uri(), "ledger", "list")
    assert result.exit_code == 2 and result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    (tmp_path / "bk.conf").write_text(f"metadataServiceUri={dead_uri()}\nzkTimeout={value}\n")
    result = bkctl("-c", str(tmp_path / "bk.conf"), "ledger", "list")
    assert (result.exit_code, result.stderr) == (
        2,
        f"error: configuration file {tmp_path / 'bk.conf'}: zkTimeout={value!r} is not a positive number of "
        "milliseconds (up to a day)\n",
    )


def test_no_service_and_no_sandbox_exits_6(bkctl, tmp_path):
    result = bkctl("ledger", "list")
    assert result.exit_code == 6
    assert "no metadata service given and no sandbox running" in result.stderr
    assert "bkctl sandbox start" in result.stderr


def test_missing_conf_file_exits_2(bkctl, tmp_path):
    result = bkctl("-c", str(tmp_path / "nope.conf"), "cluster", "info")
    assert (result.exit_code, result.stderr) == (
        2,
        f"error: configuration file {tmp_path / 'nope.conf'} does not exist\n",
    )


def test_unknown_option_exits_2(bkctl):
    assert bkctl("ledger", "list", "--bogus").exit_code == 2
    assert bkctl("ledger", "list", "-o", "xml").exit_code == 2


@pytest.mark.parametrize(
    ("args", "stderr"),
    [
        (["ledger", "list", "--bogus"], "error: No such option '--bogus'.\n"),
        (["--bogus", "ledger", "list"], "error: No such option '--bogus'. Did you mean '--verbose'?\n"),
        (["ledger", "read"], "error: Missing argument 'ID'.\n"),
        (["ledger", "nope"], "error: No such command 'nope'.\n"),
        (
            ["ledger", "list", "-o", "xml"],
            "error: Invalid value for '-o' / '--output': 'xml' is not one of 'table', 'wide', 'json', 'yaml'.\n",
        ),
    ],
)
def test_usage_errors_are_one_line(bkctl, args, stderr):
    result = bkctl(*args)
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", stderr)
    # --help keeps click's full usage (CliRunner names the program "cli")
    assert bkctl("ledger", "read", "--help").stdout.startswith("Usage: cli ledger read [OPTIONS] ID\n")


@pytest.mark.parametrize(
    "shell,marker", [("bash", "complete -o"), ("zsh", "compdef"), ("fish", "function _bkctl_completion")]
)
def test_completion_scripts(bkctl, shell, marker):
    result = bkctl("completion", shell)
    assert result.exit_code == 0
    assert marker in result.stdout and "_BKCTL_COMPLETE" in result.stdout


def test_the_help_gives_the_exit_codes_of_the_one_table(bkctl):
    """bkctl --help lists every code of bkctl.errors' table (docs/cli.md's copy: tests/unit/test_docs_links.py)."""
    from bkctl.errors import EXIT_CODE_MEANINGS, ExitCode

    assert list(EXIT_CODE_MEANINGS) == list(ExitCode)
    help_text = " ".join(bkctl("--help").stdout.split())
    assert all(f"{code.value} {code.name.lower().replace('_', ' ')}" in help_text for code in ExitCode)


def test_every_exit_code_a_command_help_names_is_one_of_the_table():
    """Commands say in their help which codes they exit with in their own cases ("Exit 6 when a bookie does not
    answer"): each must be a code of bkctl.errors' table, where the error that leads to it is mapped."""
    import re

    import click

    from bkctl.errors import ExitCode

    from support.cli import command_tree

    named = {}
    for path, command in command_tree().items():
        texts = [command.help or ""] + [p.help or "" for p in command.params if isinstance(p, click.Option)]
        for text in texts:
            for code in re.findall(r"\bexits? (\d+)", text, flags=re.IGNORECASE):
                named.setdefault(int(code), []).append(" ".join(path))
    assert len(named) >= 5  # the pattern finds them: Exit 2, 3, 5, 6, 7 at least
    assert {code: where for code, where in named.items() if code not in set(ExitCode)} == {}

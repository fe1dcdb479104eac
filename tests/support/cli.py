"""Driving bkctl as a user would: the command tree, in-process calls, completion requests, usage errors."""

from __future__ import annotations

import os
import subprocess
import sys

import click

from bkctl.errors import ExitCode

# The exit codes the bad-input tests expect, by the names they read best under
FAILED, USAGE, PROBLEMS, UNAUTHORIZED, NOT_FOUND, UNREACHABLE = (
    ExitCode.FAILED,
    ExitCode.USAGE,
    ExitCode.PROBLEMS,
    ExitCode.UNAUTHORIZED,
    ExitCode.NOT_FOUND,
    ExitCode.UNREACHABLE,
)


def command_tree() -> dict[tuple[str, ...], click.Command]:
    """Every group and command under `bkctl` by its argument path, loading lazy groups as a user's call would."""
    from bkctl.cli import cli

    commands = {}

    def walk(command: click.Command, path: tuple[str, ...], ctx: click.Context) -> None:
        commands[path] = command
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                walk(sub, (*path, name), click.Context(sub, info_name=name, parent=ctx))

    walk(cli, (), click.Context(cli, info_name="bkctl"))
    return commands


# Commands without -o, each with why: what they print is not data about the cluster.
WITHOUT_OUTPUT_OPTION = {
    ("bookie", "run"): "a daemon: logs on stderr; --print-systemd-unit/--print-dockerfile print a file as it is",
    ("autorecovery", "run"): "a daemon: logs on stderr, nothing on stdout",
    ("completion",): "prints a shell script for eval",
}
# A command of each group that reaches the cluster.
EVERY_GROUP = [
    ["ledger", "list"],
    ["bookies", "list"],
    ["cluster", "info"],
    ["autorecovery", "status"],
    ["bookie", "info", "--all"],
    ["bench", "read", "--ledger", "1"],
]


def invoke(*args: str, input: str | None = None):
    """bkctl in-process, failing the test if an exception escapes (a traceback the user would see)."""
    from click.testing import CliRunner

    from bkctl.cli import cli

    result = CliRunner().invoke(cli, list(args), input=input, catch_exceptions=True)
    escaped = result.exception if not isinstance(result.exception, SystemExit) else None
    assert escaped is None, f"bkctl {' '.join(args)} raised {escaped!r}"
    return result


def assert_one_line_error(result, code: int, args) -> None:
    from bkctl.errors import ExitCode

    where = f"bkctl {' '.join(args)}: exit {result.exit_code}, stderr {result.stderr!r}"
    assert "Traceback" not in result.output, where
    assert result.exit_code in list(ExitCode), where
    assert result.exit_code == code, where
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, where


def complete(*words: str, env: dict | None = None) -> list[tuple[str, str]]:
    """What bkctl offers for the last of ``words`` (the one being typed), asked as bash asks a bkctl process:
    ``(type, value)`` pairs."""
    line = ["bkctl", *words]
    proc = subprocess.run(
        [sys.executable, "-m", "bkctl"],
        capture_output=True,
        text=True,
        timeout=30,
        env={
            **os.environ,
            **(env or {}),
            "_BKCTL_COMPLETE": "bash_complete",
            "COMP_WORDS": " ".join(line),
            "COMP_CWORD": str(len(line) - 1),
        },
    )
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
    return [tuple(item.split(",", 1)) for item in proc.stdout.splitlines() if item]  # nothing: one empty line


def values(*words: str, env: dict | None = None) -> list[str]:
    return [value for kind, value in complete(*words, env=env) if kind == "plain"]


def dead_uri() -> str:
    """A service URI whose ZooKeeper port has nothing listening."""
    from bookie.local.process import free_port

    return f"zk+hierarchical://127.0.0.1:{free_port()}/ledgers"

"""The one table from errors to exit codes. Documented in bkctl(1) from the same table."""

from __future__ import annotations

import enum

from bookie import errors as bk
from bookie.daemon import Terminated  # SIGTERM, as the core's own processes take it (bookie/daemon.py)


class CheckFailed(bk.BKError):
    """A check found problems, or an action would be unsafe."""


class ExitCode(enum.IntEnum):
    OK = 0
    FAILED = 1
    USAGE = 2
    PROBLEMS = 3
    UNAUTHORIZED = 4
    NOT_FOUND = 5
    UNREACHABLE = 6
    UNSUPPORTED = 7
    INTERRUPTED = 130
    TERMINATED = 143


EXIT_CODE_MEANINGS = {
    ExitCode.OK: "success",
    ExitCode.FAILED: "the operation failed (also when it needs an optional part of bkctl that is not installed: "
    "the message names the pip command)",
    ExitCode.USAGE: "bad usage or input: an unknown option, a malformed service URI, configuration or argument",
    ExitCode.PROBLEMS: "a check found problems, or the action would be unsafe",
    ExitCode.UNAUTHORIZED: "unauthorized: wrong ledger password, or ZooKeeper refused the login or denied access",
    ExitCode.NOT_FOUND: "not found: no such ledger, entry, bookie or cluster",
    ExitCode.UNREACHABLE: "a service (ZooKeeper, a bookie) could not be reached",
    ExitCode.UNSUPPORTED: "the bookie serves the operation on no admin service it publishes (neither bkctl's, "
    "or an older bkctl's without it, nor BookKeeper's HTTP admin API)",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C)",
    ExitCode.TERMINATED: "terminated (SIGTERM)",
}


def exit_codes_summary() -> str:
    """``0 ok, 1 failed, ...``: the codes in a line, for the root command's help."""
    return ", ".join(f"{code.value} {code.name.lower().replace('_', ' ')}" for code in ExitCode)


# First match wins: subclasses before their bases.
EXIT_CODES: tuple[tuple[type[BaseException], ExitCode], ...] = (
    (CheckFailed, ExitCode.PROBLEMS),
    (bk.Unsafe, ExitCode.PROBLEMS),
    (bk.InvalidArgument, ExitCode.USAGE),
    (bk.Unauthorized, ExitCode.UNAUTHORIZED),
    (bk.NoSuchLedger, ExitCode.NOT_FOUND),
    (bk.NoSuchEntry, ExitCode.NOT_FOUND),
    (bk.NotFound, ExitCode.NOT_FOUND),
    (bk.ClusterNotInitialised, ExitCode.NOT_FOUND),
    (bk.ServiceUnavailable, ExitCode.UNREACHABLE),
    (bk.AdminServiceMissing, ExitCode.UNSUPPORTED),
    (Terminated, ExitCode.TERMINATED),
    (KeyboardInterrupt, ExitCode.INTERRUPTED),
    (bk.BKError, ExitCode.FAILED),
)


def exit_code_for(exc: BaseException) -> ExitCode:
    for cls, code in EXIT_CODES:
        if isinstance(exc, cls):
            return code
    return ExitCode.FAILED


def exit_for_errors(errors) -> None:
    """After a command that went on past per-bookie errors (each already reported): exit with the code of the
    first, or return when there were none."""
    for exc in errors:
        if exc is not None:
            import click

            raise click.exceptions.Exit(exit_code_for(exc))

import click

from bkctl.bookie.targets import bookies_argument
from bkctl.options import dry_run_option


@click.group()
def compaction():
    """Suspend or resume a bookie's major and minor compaction"""


def _kinds_options(command):
    command = click.option("--minor", is_flag=True, help="Minor compaction (without --major/--minor: both).")(command)
    return click.option("--major", is_flag=True, help="Major compaction (without --major/--minor: both).")(command)


def _set(app, bookie_ids, all_bookies, major, minor, dry_run, suspended: bool) -> None:
    from bkctl.bookie.targets import admin_call, target_bookies
    from bkctl.errors import ExitCode
    from bookie._proto import bookie_admin_pb2 as pb
    from bookie.errors import BKError

    bookies = target_bookies(app, bookie_ids, all_bookies)
    kinds = " and ".join(k for k, asked in (("major", major), ("minor", minor)) if asked) or "major and minor"
    verb = "suspended" if suspended else "resumed"
    failed = False
    for bookie in bookies:
        if dry_run:
            app.terminal.line(f"bookie/{bookie.bookie_id} {kinds} compaction would be {verb} (dry run)")
            continue
        try:
            admin_call(bookie, "SetCompactionSuspended",
                       pb.SetCompactionSuspendedRequest(suspended=suspended, major=major, minor=minor), "compaction")
        except BKError as exc:
            app.terminal.warn(str(exc))
            failed = True
            continue
        app.terminal.line(f"bookie/{bookie.bookie_id} {kinds} compaction {verb}")
    if failed:
        raise click.exceptions.Exit(ExitCode.UNREACHABLE)


@compaction.command()
@bookies_argument
@_kinds_options
@dry_run_option
@click.pass_obj
def suspend(app, bookie_ids, all_bookies, major, minor, dry_run):
    """Stop bookies from starting major and/or minor compactions (scheduled or forced) until resumed

    A compaction in progress stops after the log it is copying. The setting lasts until resume or a restart.
    Exit 6 when a bookie does not answer.
    """
    _set(app, bookie_ids, all_bookies, major, minor, dry_run, suspended=True)


@compaction.command()
@bookies_argument
@_kinds_options
@dry_run_option
@click.pass_obj
def resume(app, bookie_ids, all_bookies, major, minor, dry_run):
    """Let bookies run major and/or minor compactions again. Exit 6 when a bookie does not answer"""
    _set(app, bookie_ids, all_bookies, major, minor, dry_run, suspended=False)

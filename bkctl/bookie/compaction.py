import click

from bkctl.bookie._targets import bookies_argument
from bkctl.bookie.compaction_run import run
from bkctl.options import dry_run_option, output_option


@click.group()
def compaction():
    """Compact chosen entry logs of a bookie, or suspend or resume its major and minor compaction"""


def _kinds_options(command):
    command = click.option("--minor", is_flag=True, help="Minor compaction (without --major/--minor: both).")(command)
    return click.option("--major", is_flag=True, help="Major compaction (without --major/--minor: both).")(command)


def _set(app, bookie_ids, all_bookies, major, minor, dry_run, suspended: bool) -> None:
    from admin.bookie_admin import Outcome, fan_out
    from bkctl.bookie._targets import outcome_docs, target_bookies
    from bkctl.errors import exit_for_errors

    bookies = target_bookies(app, bookie_ids, all_bookies)
    kinds = " and ".join(k for k, asked in (("major", major), ("minor", minor)) if asked) or "major and minor"
    verb = "suspended" if suspended else "resumed"
    both = not (major or minor)
    done = {"major": major or both, "minor": minor or both, "suspended": suspended, "dryRun": dry_run}
    outcomes = (
        [Outcome(b) for b in bookies]
        if dry_run
        else fan_out(
            bookies,
            "compaction",
            lambda admin: admin.set_compaction_suspended(suspended, major, minor),
            tls=app.client_tls,
        )
    )
    after = f"would be {verb} (dry run)" if dry_run else verb
    app.terminal.outcomes(
        outcome_docs(app, outcomes, lambda _: done),
        lambda doc: doc,
        lambda doc: f"bookie/{doc['bookieId']} {kinds} compaction {after}",
    )
    exit_for_errors(o.error for o in outcomes)


@compaction.command()
@bookies_argument
@_kinds_options
@dry_run_option
@output_option
@click.pass_obj
def suspend(app, bookie_ids, all_bookies, major, minor, dry_run):
    """Stop bookies from starting major and/or minor compactions (scheduled or forced) until resumed

    A compaction in progress stops after the log it is copying. The setting lasts until resume or a restart.
    Exit 6 when a bookie does not answer, 7 when it publishes no admin service.
    """
    _set(app, bookie_ids, all_bookies, major, minor, dry_run, suspended=True)


@compaction.command()
@bookies_argument
@_kinds_options
@dry_run_option
@output_option
@click.pass_obj
def resume(app, bookie_ids, all_bookies, major, minor, dry_run):
    """Let bookies run major and/or minor compactions again

    Exit 6 when a bookie does not answer, 7 when it publishes no admin service.
    """
    _set(app, bookie_ids, all_bookies, major, minor, dry_run, suspended=False)


compaction.add_command(run)

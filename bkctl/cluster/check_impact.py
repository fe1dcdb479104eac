import click

from admin.check.impact import DEFAULT_PROFILE, EXAMPLES, LEVELS, PROFILES
from bkctl.completers import complete_known_bookie_ids
from bkctl.options import output_option


def _complete_levels(_ctx, _param, incomplete: str) -> list[str]:
    """Levels for ``--allow``, after the ones already typed before a comma."""
    typed, comma, last = incomplete.rpartition(",")
    return [typed + comma + level for level in LEVELS if level.startswith(last)]


def _levels(_ctx, _param, values: tuple[str, ...]) -> frozenset[str]:
    """``--allow`` values, each a level or a comma-separated list of them."""
    chosen = {level.strip() for value in values for level in value.split(",")} - {""}
    unknown = sorted(chosen - set(LEVELS))
    if unknown:
        raise click.BadParameter(f"not a level: {', '.join(map(repr, unknown))} (levels: {', '.join(LEVELS)})")
    return frozenset(chosen)


@click.command("check-impact")
@click.option(
    "--bookie",
    "bookie_ids",
    multiple=True,
    required=True,
    metavar="BOOKIE",
    shell_complete=complete_known_bookie_ids,
    help="A bookie that would go away (repeatable: a rack at once).",
)
@click.option(
    "--for",
    "profile",
    type=click.Choice(sorted(PROFILES)),
    default=DEFAULT_PROFILE,
    show_default=True,
    help="The maintenance: restart allows below-ack-quorum and under-replicated, decommission only under-replicated.",
)
@click.option(
    "--allow",
    multiple=True,
    callback=_levels,
    shell_complete=_complete_levels,
    metavar="LEVEL[,LEVEL]",
    help="Levels that pass the gate on top of --for's (repeatable).",
)
@output_option
@click.pass_obj
def check_impact(app, bookie_ids, profile, allow):
    """Say what losing these bookies now would cost, and exit 3 when it is more than the maintenance allows

    \b
    Levels, most severe first; a ledger counts in each it reaches, but only
    in the worst of data-loss, below-ack-quorum and under-replicated:
      data-loss          an entry with no replica left
      read-unavailable   an open ledger no reader could recover (fence, close):
                         AQ or more of a write set of its last ensemble gone
      write-unavailable  an open ledger with fewer writable bookies left
                         than its ensemble size
      below-ack-quorum   an entry with fewer than AQ replicas left
      under-replicated   an entry with fewer than WQ replicas left

    Bookies already gone from the cluster count as gone too; read-only ones serve reads but take no writes. The
    first line is the verdict. JSON: bookies, alreadyGone, readOnly, writableBookiesLeft, largestOpenEnsemble, for,
    allowed, safe, failedLevels, verdict; levels (each level: ledgers, allowed, examples: up to 5 ledger ids); and
    ledgers (each: ledgerId, state, levels, category, segment, bookies).
    """
    from admin.check.impact import Gate, assess
    from bkctl.errors import ExitCode
    from bookie.errors import NotFound
    from bookie.meta.cookies import CookieStore
    from bookie.meta.registration import BookieRegistry

    registry = BookieRegistry(app.metadata)
    writable = {b.bookie_id for b in registry.list(writable=True)}
    read_only = {b.bookie_id for b in registry.list(writable=False, readonly=True)} - writable
    report, named = assess(app.ledgers.iter_ledgers(), bookie_ids, writable, read_only, Gate(profile, allow))
    # checked on the same pass over the ledgers: "safe" about a bookie that does not exist is a typo's answer
    unknown = set(bookie_ids) - writable - read_only - named - set(CookieStore(app.metadata).list())
    if unknown:
        raise NotFound(f"no bookie {', '.join(sorted(unknown))}: not registered, no cookie, and no ledger names it")

    def table():
        app.terminal.line(report.verdict())
        app.terminal.table(
            ["LEVEL", "LEDGERS", "GATE", "EXAMPLES"],
            [
                [level, len(ids), "allowed" if level in report.gate.allowed else "fails", ids[:EXAMPLES] or None]
                for level, ids in report.by_level.items()
            ],
        )
        app.terminal.line(
            f"Writable bookies left: {report.writable_left}"
            + (f" (open ledgers need up to {report.largest_open_ensemble})" if report.largest_open_ensemble else "")
        )
        if report.already_gone:
            app.terminal.line(f"Already gone, counted as gone: {', '.join(report.already_gone)}")
        if app.terminal.output == "wide" and report.impacts:
            app.terminal.table(
                ["LEDGER", "STATE", "LEVELS", "SEGMENT", "BOOKIES"],
                [
                    [i.ledger_id, "open" if i.is_open else "closed", ",".join(i.levels), i.segment, i.lost_bookies]
                    for i in report.impacts
                ],
            )

    app.terminal.document(report.doc(), table)
    if not report.safe:
        raise click.exceptions.Exit(ExitCode.PROBLEMS)

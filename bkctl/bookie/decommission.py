import click

from bkctl.completers import complete_known_bookie_ids
from bkctl.options import dry_run_option, finite_seconds, output_option, yes_option
from bkctl.terminal import format_bytes

STALL_AFTER = 60.0  # seconds without a byte copied or a ledger done before the blockers are reported


@click.command()
@click.argument("bookie_id", metavar="BOOKIE", shell_complete=complete_known_bookie_ids)
@click.option(
    "--timeout",
    type=click.FloatRange(1),
    default=3600,
    show_default=True,
    metavar="SECONDS",
    callback=finite_seconds,
    help="Stop waiting then: exit 3 with the ledgers that blocked it.",
)
@click.option(
    "--stall-after",
    type=click.FloatRange(0, min_open=True),
    default=STALL_AFTER,
    show_default=True,
    metavar="SECONDS",
    callback=finite_seconds,
    help="Once nothing has moved for that long, list the ledgers that block it and why.",
)
@yes_option
@dry_run_option
@output_option
@click.pass_obj
def decommission(app, bookie_id, timeout, stall_after, yes, dry_run):
    """Retire a bookie that is down: re-replicate everything it held, then remove its cookie

    Refuses while the bookie is still registered (stop it first). On a terminal, shows the ledgers and bytes
    left, the rate and the time left. A ledger that fails is tried again; once nothing has moved for --stall-after
    seconds, the ledgers that block it are listed on stderr, each with its reason and fix (the reasons of
    `autorecovery list-under-replicated --explain`), and it goes on waiting. Exit 0 when no ledger names the bookie
    (its cookie is removed then), 3 at --timeout, with the blockers (-o json: "blockers"). --dry-run lists the
    ledgers that would be re-replicated, and changes nothing.
    """

    from admin.decommission import Decommission
    from bkctl.bookie._targets import require_known_bookies
    from bkctl.bookie.recover import list_affected
    from bkctl.errors import ExitCode
    from bkctl.move_progress import move_progress
    from bookie.client.rereplication import delete_cookies, require_stopped
    from bookie.daemon import interruption

    require_stopped(app.metadata, bookie_id)
    require_known_bookies(app, [bookie_id])
    if dry_run:
        list_affected(app, {bookie_id}, dry_run_verb="re-replicated, then its cookie removed")
        return
    app.terminal.confirm(f"Decommission {bookie_id}?", "decommission", yes)
    job = Decommission(app.client.core, bookie_id, stall_after, on_stall=lambda r: show_blockers(app, r, stall_after))
    ledgers = job.affected()
    report = job.report
    bar = move_progress(app, "re-replicating", report.ledgers, report.estimated_bytes, "ledgers", "recovered")
    try:
        with bar as (job.progress, _):
            app.client.run(job.run(ledgers, timeout))
    except KeyboardInterrupt as exc:
        if job.recovery is not None:
            job.recovery.settled.wait(10)  # the fragments being copied keep what the target acknowledged
        raise type(exc)(f"{interruption(exc)} ({left(report)}: run it again to go on)") from None
    if report.done:
        delete_cookies(app.metadata, [bookie_id])
    app.terminal.document(report.doc(), lambda: show(app, report))
    if not report.done:
        raise click.exceptions.Exit(ExitCode.PROBLEMS)


def left(report) -> str:
    doc = report.doc()
    return (
        f"{len(doc['recovered'])} of {doc['ledgers']} ledgers re-replicated, {format_bytes(doc['bytes'])} of about "
        f"{format_bytes(doc['estimatedBytes'])} copied"
    )


def show_blockers(app, report, stall_after: float) -> None:
    """On stderr, while it waits: what has not moved for ``stall_after`` seconds, and why."""
    count = len(report.blockers)
    block = "ledger blocks" if count == 1 else "ledgers block"
    app.terminal.warn(  # one write: it comes from the client's thread, beside the main thread's lines
        f"nothing moved for {stall_after:g} s ({left(report)}); {count} {block} the decommission of {report.bookie_id}:"
        + "".join(f"\n  {line}" for line in blocker_lines(report))
    )


def blocker_lines(report) -> list[str]:
    lines = []
    for stuck in report.blockers:
        error = report.errors.get(stuck.ledger_id)
        lines.append(
            f"ledger/{stuck.ledger_id} {stuck.reason}: {stuck.detail}"
            + (f" (last error: {error})" if error and error not in stuck.detail else "")
            + f"; fix: {stuck.fix}"
        )
    return lines


def show(app, report) -> None:
    doc = report.doc()
    seconds = sum(r.seconds for r in report.rounds)
    app.terminal.fields(
        [
            ("Ledgers", f"{len(doc['recovered'])} of {doc['ledgers']} re-replicated"),
            ("Copied", f"{doc['entries']} entries, {format_bytes(doc['bytes'])} in {seconds:.1f} s"),
            ("Passes", len(report.rounds)),
        ]
    )
    if report.done:
        app.terminal.line(f"bookie/{report.bookie_id} decommissioned: no ledger names it, cookie removed")
        return
    app.terminal.line(f"bookie/{report.bookie_id} kept: not done within the timeout; blocked by:")
    for line in blocker_lines(report):
        app.terminal.line(f"  {line}")

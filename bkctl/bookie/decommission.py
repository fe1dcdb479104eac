import click

from bkctl.completers import complete_known_bookie_ids
from bkctl.options import dry_run_option, output_option, yes_option


@click.command()
@click.argument("bookie_id", metavar="BOOKIE", shell_complete=complete_known_bookie_ids)
@click.option(
    "--timeout",
    type=click.FloatRange(1),
    default=3600,
    show_default=True,
    metavar="SECONDS",
    help="Give up (exit 1) if not done by then.",
)
@yes_option
@dry_run_option
@output_option
@click.pass_obj
def decommission(app, bookie_id, timeout, yes, dry_run):
    """Retire a bookie that is down: re-replicate everything it held, then remove its cookie

    Refuses while the bookie is still registered (stop it first). Ends with no ledger naming it, or exit 1 with
    what is left. --dry-run lists the ledgers that would be re-replicated, and changes nothing.
    """

    from bkctl.bookie._targets import require_known_bookies
    from bkctl.bookie.recover import list_affected, show_report
    from bookie.client.rereplication import decommission as rereplicate
    from bookie.client.rereplication import delete_cookies, require_stopped
    from bookie.errors import BKError

    require_stopped(app.metadata, bookie_id)
    require_known_bookies(app, [bookie_id])
    if dry_run:
        list_affected(app, {bookie_id}, dry_run_verb="re-replicated, then its cookie removed")
        return
    app.terminal.confirm(f"Decommission {bookie_id}?", "decommission", yes)
    with app.terminal.progress("re-replicating", unit="ledgers") as advance:

        def progress(kind: str, n: int) -> None:
            if kind == "ledgers":
                advance(n)

        reports = app.client.run(rereplicate(app.client.core, bookie_id, timeout, progress))
    failed = bool(reports) and reports[-1].failed
    if not failed:
        delete_cookies(app.metadata, [bookie_id])
    doc = {"bookieId": bookie_id, "decommissioned": not failed, "rounds": [r.doc() for r in reports]}

    def table():
        for report in reports:
            show_report(app, report)
        if not failed:
            app.terminal.line(f"bookie/{bookie_id} decommissioned: no ledger names it, cookie removed")

    app.terminal.document(doc, table)
    if failed:
        raise BKError(f"{len(reports[-1].failed)} ledgers could not be re-replicated; bookie {bookie_id} kept")

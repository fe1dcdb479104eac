import click

from bkctl.options import complete_bookie_ids, output_option


@click.command()
@click.argument("bookie_id", metavar="BOOKIE", shell_complete=complete_bookie_ids)
@click.option("--timeout", type=click.FloatRange(1), default=3600, show_default=True, metavar="SECONDS",
              help="Give up (exit 1) if not done by then.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@output_option
@click.pass_obj
def decommission(app, bookie_id, timeout, yes):
    """Retire a bookie that is down: re-replicate everything it held, then remove its cookie

    Refuses while the bookie is still registered (stop it first). Ends with no ledger naming it, or exit 1 with
    what is left.
    """
    import sys
    import time

    from bkctl.bookie.recover import run_recovery, show
    from bkctl.bookie.targets import require_known_bookies
    from bookie.errors import BKError, InvalidArgument, OperationTimeout
    from bookie.meta.cookies import CookieStore
    from bookie.meta.registration import BookieRegistry

    registered = {b.bookie_id for b in BookieRegistry(app.metadata).list(writable=True, readonly=True)}
    if bookie_id in registered:
        raise InvalidArgument(f"bookie {bookie_id} is still registered: stop it before decommissioning it")
    require_known_bookies(app, [bookie_id])
    if not yes:
        if not sys.stdin.isatty():
            raise InvalidArgument("refusing to decommission without --yes: no terminal to confirm on")
        click.confirm(f"Decommission {bookie_id}?", abort=True, err=True)
    deadline = time.monotonic() + timeout
    while True:  # each pass re-replicates what is left; stops when nothing names the bookie
        ledgers, report = run_recovery(app, {bookie_id}, (), False, None)
        if not ledgers:
            break
        show(app, report)
        if report.failed:
            raise BKError(f"{len(report.failed)} ledgers could not be re-replicated; bookie {bookie_id} kept")
        if time.monotonic() > deadline:
            raise OperationTimeout(f"decommission of {bookie_id} not done within {timeout:g} s")
    cookies = CookieStore(app.metadata)
    if bookie_id in cookies.list():
        cookies.delete(bookie_id)
    app.terminal.line(f"bookie/{bookie_id} decommissioned: no ledger names it, cookie removed")

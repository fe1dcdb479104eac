import click

from bkctl.bookie._targets import http_port_option
from bkctl.completers import complete_bookie_ids
from bkctl.options import dry_run_option, finite_seconds, output_option, yes_option
from bkctl.terminal import format_bytes

WAIT_WRITERS = 60.0  # seconds: an active writer adds within that; an idle one is listed rather than waited for


@click.command()
@click.argument("bookie_ids", metavar="BOOKIE...", nargs=-1, required=True, shell_complete=complete_bookie_ids)
@click.option(
    "--rate", type=click.FloatRange(0, min_open=True), metavar="MB/S", help="Limit the copy rate (all moves)."
)
@click.option(
    "--wait-writers",
    type=click.FloatRange(0),
    default=WAIT_WRITERS,
    show_default=True,
    metavar="SECONDS",
    callback=finite_seconds,
    help="After the closed ledgers, wait that long for open ones to move off (their writers' next adds).",
)
@http_port_option
@yes_option
@dry_run_option
@output_option
@click.pass_obj
def drain(app, bookie_ids, rate, wait_writers, yes, dry_run):
    """Empty running bookies while they serve, so they can be retired with every ledger fully replicated

    Each bookie is made read-only (as `bookie readonly --on`; it stays so), its closed ledgers' replicas are
    copied to the other bookies, the least full first, within the placement policy, and each ledger's metadata
    then names the copy. The writers of its open ledgers move off at their next add; an open ledger still naming
    it after --wait-writers is listed with what finishes it (a drain never fences). A bookie with no admin
    service to make it read-only (a Java bookie without its HTTP API) gets its closed ledgers moved only.
    Interrupted, it says what is left; running it again goes on. One drain or rebalance at a time per cluster.
    Exit 0 when no ledger names the bookies, 3 when open ledgers are left, 1 when moves failed or another data
    movement runs, 5 for an unknown bookie, 2 for one that is not running (`bookie decommission` retires it);
    3 before anything is done (--dry-run too) when some replica has no bookie to go to.
    """
    from admin.drain import plan as make_plan
    from admin.drain import scan
    from bkctl.bookie._drain_run import load_of, run_drain, show_plan
    from bkctl.bookie._targets import require_known_bookies
    from bookie.errors import InvalidArgument, Unsafe
    from bookie.meta.registration import BookieRegistry

    sources = list(dict.fromkeys(bookie_ids))
    require_known_bookies(app, sources)
    registered = {b.bookie_id: b for b in BookieRegistry(app.metadata).list(writable=True, readonly=True)}
    stopped = [b for b in sources if b not in registered]
    if stopped:
        raise InvalidArgument(
            f"bookie {', '.join(stopped)} is not running (not registered): a drain moves data off a live bookie; "
            f"retire a stopped one with `bkctl bookie decommission {stopped[0]}`"
        )
    naming, estimate = scan(app.metadata, set(sources), lambda exc: app.terminal.warn(str(exc)))
    writable = [b for b in BookieRegistry(app.metadata).list(writable=True) if b.bookie_id not in sources]
    load, load_from = load_of(app, writable, estimate)
    plan = make_plan(naming, set(sources), writable, load, load_from)
    if dry_run:
        show_plan(app, plan)
    stuck = plan.unplaceable()
    if stuck:
        raise Unsafe(stuck)
    if dry_run:
        return
    app.terminal.confirm(
        f"Drain {', '.join(sources)}: make {'it' if len(sources) == 1 else 'them'} read-only and move "
        f"{len(plan.moves)} replicas ({format_bytes(plan.bytes)}) to other bookies?",
        "drain",
        yes,
    )
    run_drain(app, [registered[b] for b in sources], plan, rate, wait_writers)

import click

from bkctl.completers import complete_known_bookie_ids
from bkctl.options import dry_run_option, ledgers_option, output_option, yes_option
from bkctl.terminal import format_bytes


def run_recovery(app, lost: set[str], ledger_ids, skip_open: bool, rate: float | None):
    """Find the ledgers, re-replicate them with a progress display: ledgers and bytes, the total of each known
    before the first copy (the bytes from the metadata), the rate and the time left."""
    from bkctl.move_progress import move_progress
    from bookie.client.rereplication import BookieRecovery
    from bookie.daemon import interruption

    recovery = BookieRecovery(app.client.core, lost, skip_open, rate)
    ledgers = recovery.affected(list(ledger_ids) or None)
    total_bytes = recovery.bytes_to_copy(ledgers)
    try:
        with move_progress(app, "re-replicating", len(ledgers), total_bytes, "ledgers", "ledgers") as (progress, _):
            recovery.progress = progress
            return total_bytes, app.client.run(recovery.run(ledgers))
    except KeyboardInterrupt as exc:
        recovery.settled.wait(10)  # the fragments being copied keep what the target acknowledged
        raise type(exc)(f"{interruption(exc)} ({interrupted(recovery.report)})") from None


def interrupted(report) -> str:
    """What an interrupted recovery did and what is left, in a line."""
    left = len(report.ledgers) - len(report.recovered) - len(report.failed) - len(report.skipped_open)
    kept = "".join(f", ledger {lid} copied up to entry {stop - 1}" for lid, stop in sorted(report.kept_until.items()))
    return (
        f"{len(report.recovered)} of {len(report.ledgers)} ledgers re-replicated, {report.fragments} fragments, "
        f"{report.entries:,} entries copied{kept}; {left} ledgers left: run it again to go on from there"
    )


def show(app, report, estimated_bytes: int) -> None:
    app.terminal.document(report.doc() | {"estimatedBytes": estimated_bytes}, lambda: show_report(app, report))


def show_report(app, report) -> None:
    """A recovery's report, for people."""
    app.terminal.fields(
        [
            ("Ledgers", f"{len(report.recovered)} of {len(report.ledgers)} re-replicated"),
            ("Fragments", report.fragments),
            (
                "Copied",
                f"{report.entries} entries, {format_bytes(report.bytes)} in {report.seconds:.1f} s "
                f"({report.doc()['mbPerSec']} MB/s)",
            ),
        ]
    )
    if report.skipped_open:
        app.terminal.line(f"skipped (open): {', '.join(map(str, report.skipped_open))}")
    for ledger_id, reason in report.failed.items():
        app.terminal.line(f"ledger/{ledger_id} FAILED: {reason}")


def list_affected(app, lost: set[str], ledger_ids=(), dry_run_verb: str | None = None) -> None:
    """The ledgers that name ``lost`` bookies, with their segments there; with ``dry_run_verb``, what would be done
    to them (the dry runs of recover and decommission)."""
    from bookie.client.rereplication import BookieRecovery

    ledgers = BookieRecovery(app.client.core, lost).affected(list(ledger_ids) or None)
    docs = [
        {
            "ledgerId": lid,
            "state": md.state.name,
            "segments": [s.first_entry_id for s in md.segments if lost & set(s.bookies)],
        }
        for lid, md in ledgers
    ]
    app.terminal.document(
        docs,
        lambda: app.terminal.table(
            ["LEDGER", "STATE", "SEGMENTS"],
            [[d["ledgerId"], d["state"], d["segments"]] for d in docs],
            empty=f"no ledger names {', '.join(sorted(lost))}",
        ),
    )
    if dry_run_verb and docs:
        app.terminal.info(f"{len(docs)} ledgers would be {dry_run_verb} (dry run)")


@click.command()
@click.argument("bookies", metavar="BOOKIE[,BOOKIE...]", shell_complete=complete_known_bookie_ids)
@click.option("--query", is_flag=True, help="Only list the ledgers that name these bookies.")
@ledgers_option("Only this ledger (repeatable).")
@click.option("--skip-open", is_flag=True, help="Leave open ledgers alone (default: fence and close them first).")
@click.option("--skip-unrecoverable", is_flag=True, help="Exit 0 even if some ledgers could not be recovered.")
@click.option("--rate", type=click.FloatRange(1), metavar="BYTES_PER_S", help="Limit the copy rate.")
@click.option("--delete-cookie", is_flag=True, help="Delete the bookies' cookies when everything was recovered.")
@yes_option
@dry_run_option
@output_option
@click.pass_obj
def recover(app, bookies, query, ledger_ids, skip_open, skip_unrecoverable, rate, delete_cookie, yes, dry_run):
    """Re-replicate every ledger fragment stored on lost bookies to other bookies, then point metadata at them

    Open ledgers on a lost bookie are fenced and closed first. A ledger that fails is listed at the end and the
    run goes on; running again continues where it stopped, within a fragment too: an interrupted run (Ctrl-C,
    SIGTERM) keeps the entries the replacement acknowledged (the segment is split there) and says what it did and
    what is left. Exit 1 if some ledger failed (0 with --skip-unrecoverable). A bookie the cluster has never known
    (not registered, no cookie, named by no ledger) is not found, exit 5, with --query too.
    """

    from bkctl.bookie._targets import require_known_bookies
    from bkctl.errors import ExitCode
    from bookie.client.rereplication import delete_cookies
    from bookie.errors import InvalidArgument

    lost = {b.strip() for b in bookies.split(",") if b.strip()}
    if not lost:
        raise InvalidArgument(f"no bookie in {bookies!r}: name one or more, comma-separated")
    # A bookie nobody knows is a typo, for --query as for a recovery: "no ledger names X" is the answer about a
    # bookie the cluster knows (it has a cookie, or is registered), not about a misspelt one.
    require_known_bookies(app, lost)
    if query or dry_run:
        list_affected(app, lost, ledger_ids, "re-replicated" if dry_run else None)
        return
    app.terminal.confirm(f"Re-replicate everything on {', '.join(sorted(lost))}?", "recover", yes)
    estimated_bytes, report = run_recovery(app, lost, ledger_ids, skip_open, rate)
    show(app, report, estimated_bytes)
    if delete_cookie and report.complete:
        for bookie_id in delete_cookies(app.metadata, lost):
            app.terminal.info(f"cookie of {bookie_id} deleted")
    if report.failed and not skip_unrecoverable:
        raise click.exceptions.Exit(ExitCode.FAILED)

import click

from bkctl.bookie._targets import bookies_argument
from bkctl.options import dry_run_option, output_option


@click.command()
@bookies_argument
@click.option("--on/--off", "read_only", required=True, help="Make the bookies read-only, or writable again.")
@dry_run_option
@click.option("--yes", is_flag=True, help="Do not ask before making every bookie read-only (--all --on).")
@output_option
@click.pass_obj
def readonly(app, bookie_ids: tuple[str, ...], all_bookies: bool, read_only: bool, dry_run: bool, yes: bool):
    """Put bookies in read-only mode (they refuse new adds, still serve reads), or take them out

    A bookie that is read-only because its disks are full stays read-only until they have room, and one whose
    journal failed until it is restarted (--off only lifts the operator's setting; it says why the bookie stays
    read-only). --all --on stops every write to the cluster, so it asks first. Exit 6 when a bookie does not
    answer, 7 when it publishes no admin service.
    """
    from admin.bookie_admin import fan_out
    from bkctl.bookie._targets import outcome_docs, target_bookies
    from bkctl.errors import exit_for_errors
    from bookie.meta.registration import DISK_THRESHOLD, READ_ONLY_REASONS, BookieRegistry

    bookies = target_bookies(app, bookie_ids, all_bookies)
    wanted = "read-only" if read_only else "writable"
    if dry_run:
        docs = [{"bookieId": b.bookie_id, "state": b.state, "readOnly": read_only, "dryRun": True} for b in bookies]
        app.terminal.outcomes(
            docs,
            lambda d: d,
            lambda d: f"bookie/{d['bookieId']} would be made {wanted} (now {d['state']}; dry run)",
        )
        return
    if all_bookies and read_only:
        app.terminal.confirm(
            f"Make all {len(bookies)} bookies read-only? No ledger can be written until one is writable again.",
            "make every bookie read-only",
            yes,
        )
    outcomes = fan_out(bookies, "read-only mode", lambda admin: admin.set_read_only(read_only), tls=app.client_tls)

    def line(doc):
        if read_only or not doc["readOnly"]:
            return f"bookie/{doc['bookieId']} {wanted}"
        reasons = [r for r in doc["readOnlyReasons"] or () if r in READ_ONLY_REASONS] or [DISK_THRESHOLD]  # Java's one
        return f"bookie/{doc['bookieId']} stays read-only: {'; '.join(READ_ONLY_REASONS[r] for r in reasons)}"

    def with_reasons(docs) -> list[dict]:
        """Each answer with why the bookie is read-only now, from its registration (a bookie of ours updates it
        before it answers); null when it does not say (a Java bookie)."""
        registered = {b.bookie_id: b for b in BookieRegistry(app.metadata).list(writable=True, readonly=True)}
        return [
            {
                **d,
                "readOnlyReasons": registered[d["bookieId"]].read_only_reasons if d["bookieId"] in registered else None,
            }
            for d in docs
        ]

    docs = with_reasons(outcome_docs(app, outcomes, lambda state: {**state.doc(), "dryRun": False}))
    app.terminal.outcomes(docs, lambda d: d, line)
    exit_for_errors(o.error for o in outcomes)

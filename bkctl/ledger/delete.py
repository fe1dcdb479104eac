import click

from bkctl.completers import complete_ledger_ids
from bkctl.options import dry_run_option, output_option, yes_option


@click.command()
@click.argument("ledger_ids", metavar="ID...", nargs=-1, required=True, shell_complete=complete_ledger_ids)
@yes_option
@dry_run_option
@output_option
@click.pass_obj
def delete(app, ledger_ids, yes, dry_run):
    """Delete ledgers (their metadata; bookies reclaim the space by garbage collection)

    Asks for confirmation unless --yes. An unknown id is reported, the others are still deleted, and the exit
    code is 5. -o json: one object per ledger deleted (ledgerId, deleted, dryRun).
    """
    from bkctl.errors import ExitCode
    from bookie.errors import NoSuchLedger
    from bookie.meta.paths import parse_ledger_id

    ids = [parse_ledger_id(i) for i in ledger_ids]
    missing = [i for i in ids if not app.ledgers.exists(i)]
    present = [i for i in ids if i not in missing]
    for lid in missing:
        app.terminal.error(f"ledger {lid} does not exist")
    if present and not dry_run:
        app.terminal.confirm(f"Delete {len(present)} ledger(s): {', '.join(map(str, present))}?", "delete", yes)

    def deletions():
        for lid in present:
            try:
                if not dry_run:
                    app.client.delete_ledger(lid)
            except NoSuchLedger:  # deleted meanwhile, by someone else
                app.terminal.error(f"ledger {lid} does not exist")
                missing.append(lid)
            else:
                yield {"ledgerId": lid, "deleted": not dry_run, "dryRun": dry_run}

    done = "would be deleted (dry run)" if dry_run else "deleted"
    app.terminal.outcomes(deletions(), lambda doc: doc, lambda doc: f"ledger/{doc['ledgerId']} {done}")
    if missing:
        raise click.exceptions.Exit(ExitCode.NOT_FOUND)

import click

from bkctl.completers import complete_ledger_ids
from bkctl.options import dry_run_option, output_option, password_options, read_password


@click.command()
@click.argument("ledger_id", metavar="ID", shell_complete=complete_ledger_ids)
@password_options
@dry_run_option
@output_option
@click.pass_obj
def recover(app, ledger_id, password, password_file, dry_run):
    """Fence and close a ledger whose writer is gone; print its last entry and length

    A writer that is still alive gets "fenced" and stops. Safe to run twice, or from two places at once.
    """
    from bookie.meta.paths import parse_ledger_id

    lid = parse_ledger_id(ledger_id)
    secret = read_password(password, password_file)
    md = app.client.ledger_metadata(lid)
    app.client.core.check_password(lid, md, secret)
    if dry_run:
        action = "nothing to do: already closed" if md.is_closed else "would fence its bookies and close it"
        doc = {"ledgerId": lid, "state": md.state.name, "wouldRecover": not md.is_closed, "dryRun": True}
        app.terminal.document(doc, lambda: app.terminal.line(f"ledger/{lid} is {md.state.name}: {action} (dry run)"))
        return
    md = app.client.open_ledger(lid, secret, recovery=True).metadata
    doc = {"ledgerId": lid, "state": md.state.name, "lastEntryId": md.last_entry_id, "length": md.length}
    app.terminal.document(
        doc,
        lambda: app.terminal.line(f"ledger/{lid} recovered: CLOSED, last entry {md.last_entry_id}, length {md.length}"),
    )

import click

from bkctl.completers import complete_ledger_ids
from bkctl.options import output_option


@click.command()
@click.argument("ledger_id", metavar="ID", shell_complete=complete_ledger_ids)
@output_option
@click.pass_obj
def metadata(app, ledger_id: str):
    """Show one ledger's metadata (never its password)"""
    from bkctl.ledger.render import metadata_doc
    from bookie.meta.paths import parse_ledger_id

    lid = parse_ledger_id(ledger_id)
    md, _ = app.ledgers.read(lid)
    doc = metadata_doc(lid, md)

    def table():
        app.terminal.fields(
            [
                ("Ledger", lid),
                ("State", doc["state"]),
                ("Ensemble size", md.ensemble_size),
                ("Write quorum", md.write_quorum_size),
                ("Ack quorum", md.ack_quorum_size),
                ("Last entry", doc["lastEntryId"]),
                ("Length", doc["length"]),
                ("Digest", doc["digestType"]),
                ("Password set", "yes" if doc["passwordSet"] else "no"),
                ("Created", doc["ctimeIso"]),
                ("Format version", md.format_version),
            ]
        )
        app.terminal.line("Segments:")
        app.terminal.table(["FIRST-ENTRY", "ENSEMBLE"], [[s.first_entry_id, s.bookies] for s in md.segments])
        if doc["customMetadata"]:
            app.terminal.line("Custom metadata:")
            app.terminal.table(["KEY", "VALUE"], [[k, v] for k, v in doc["customMetadata"].items()])

    app.terminal.document(doc, table)

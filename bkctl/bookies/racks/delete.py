import click

from bkctl.completers import complete_bookie_ids
from bkctl.options import dry_run_option, output_option


@click.command()
@click.argument("bookie_id", metavar="BOOKIE", shell_complete=complete_bookie_ids)
@dry_run_option
@output_option
@click.pass_obj
def delete(app, bookie_id, dry_run):
    """Remove a bookie from Pulsar's rack mapping (pulsar-admin bookies delete-bookie-rack)

    BOOKIE is the mapping's key, or a registered bookie whose entry is under the host:port it publishes. A group
    left empty goes. The bookie's rack is then its registration's, or the default rack. Exit 5 when the mapping
    does not name it.
    """
    from bkctl.bookies.racks._mapping import key_of, registered_by_name
    from bookie.errors import NotFound
    from bookie.meta.racks import RackMapping, read_mapping, update_mapping

    registered = registered_by_name(app)
    removed: dict = {}

    def change(mapping: RackMapping) -> RackMapping:
        key = key_of(bookie_id, registered, mapping)
        if mapping.get(key) is None:
            raise NotFound(f"bookie {bookie_id} is not in the rack mapping")
        removed.update(key=key, entry=mapping.get(key))
        return mapping.removed(key)

    if dry_run:
        change(read_mapping(app.metadata)[0])
    else:
        update_mapping(app.metadata, change)
    entry = removed["entry"]
    doc = {
        "bookieId": bookie_id,
        "address": removed["key"],
        "rack": entry.rack,
        "group": entry.group,
        "dryRun": dry_run,
    }
    verb = "would be deleted (dry run)" if dry_run else "deleted"
    app.terminal.document(doc, lambda: app.terminal.line(f"bookie/{bookie_id} rack {verb}"))

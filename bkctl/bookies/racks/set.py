import click

from bkctl.completers import complete_bookie_ids
from bkctl.options import dry_run_option, output_option


@click.command("set")
@click.argument("bookie_id", metavar="BOOKIE", shell_complete=complete_bookie_ids)
@click.option(
    "-r", "--rack", required=True, help="The rack: /rack (rack-aware placement) or /region/rack (region-aware)."
)
@click.option("-g", "--group", default="default", show_default=True, help="The mapping's group to put the bookie in.")
@click.option("--hostname", help="The hostname to record with it (Pulsar's BookieInfo.hostname; informative).")
@dry_run_option
@output_option
@click.pass_obj
def set_rack(app, bookie_id, rack, group, hostname, dry_run):
    """Put a bookie on a rack in Pulsar's rack mapping (pulsar-admin bookies set-bookie-rack)

    The bookie leaves any other group first, as Pulsar's broker does. The rack is refused, as the broker refuses
    it, when empty, "/", or with more than one "/" inside; /rack and /region/rack are both accepted (bkctl cannot
    read the cluster's placement policy), but not mixed in one mapping. A BOOKIE that is not registered is set all
    the same, with a warning (its rack applies when it registers). The key written is the one the bookie's entry
    already has, else BOOKIE as given. Ledgers written before keep their ensembles: `cluster check --placement`
    finds those that now break placement, `cluster repair-placement` moves them.
    """
    from bkctl.bookies.racks._mapping import entry_doc, key_of, registered_by_name
    from bookie.meta.bookie_id import check_bookie_id
    from bookie.meta.racks import RackMapping, check_rack, read_mapping, update_mapping

    check_bookie_id(bookie_id)
    registered = registered_by_name(app)
    if bookie_id not in registered:
        app.terminal.warn(f"bookie {bookie_id} is not registered: its rack applies when it registers")
    written: dict = {}

    def change(mapping: RackMapping) -> RackMapping:
        key = key_of(bookie_id, registered, mapping)
        check_rack(rack, mapping.removed(key))
        written["key"] = key
        return mapping.updated(group, key, rack, hostname)

    mapping = change(read_mapping(app.metadata)[0]) if dry_run else update_mapping(app.metadata, change)
    entry = mapping.get(written["key"])
    doc = {
        **entry_doc(bookie_id, written["key"], entry, entry.location, "mapping", bookie_id in registered),
        "dryRun": dry_run,
    }
    verb = "would be set (dry run)" if dry_run else "set"
    app.terminal.document(
        doc, lambda: app.terminal.line(f"bookie/{bookie_id} rack {verb}: {entry.location} (group {group})")
    )
    if not dry_run:
        app.terminal.note("earlier ledgers keep their ensembles: see `bkctl cluster repair-placement --dry-run`")

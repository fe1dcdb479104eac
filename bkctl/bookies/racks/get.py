import click

from bkctl.completers import complete_bookie_ids
from bkctl.options import output_option


@click.command()
@click.argument("bookie_ids", metavar="[BOOKIE]...", nargs=-1, shell_complete=complete_bookie_ids)
@output_option
@click.pass_obj
def get(app, bookie_ids):
    """Show each bookie's rack and where it comes from (mapping, registration or default)

    One row per registered bookie, then one per mapping entry naming no registered bookie (it takes effect when
    that bookie registers); or only the BOOKIEs named (exit 5 for one that is neither registered nor in the
    mapping). RACK is the rack placement uses, with the leading "/" the mapping's reader adds. JSON: bookieId,
    address (the mapping's key, or null), rack, hostname, group, source, registered.
    """
    from bkctl.bookies.racks._mapping import entry_doc, registered_by_name
    from bookie.errors import NotFound
    from bookie.meta.racks import read_mapping
    from bookie.meta.registration import DEFAULT_RACK

    registered = registered_by_name(app)
    mapping, _ = read_mapping(app.metadata)
    docs, claimed = [], set()
    for bookie in sorted({b.bookie_id: b for b in registered.values()}.values(), key=lambda b: b.bookie_id):
        host, port = bookie.address()
        key = next((k for k in (bookie.bookie_id, f"{host}:{port}") if mapping.get(k) is not None), None)
        claimed.add(key)
        rack, source = bookie.rack_and_source
        docs.append(entry_doc(bookie.bookie_id, key, bookie.mapped, rack, source, True))
    for key, entry in mapping.items():
        if key not in claimed:
            docs.append(entry_doc(key, key, entry, entry.location or DEFAULT_RACK, "mapping", False))
    if bookie_ids:
        unknown = [i for i in bookie_ids if not any(i in (d["bookieId"], d["address"]) for d in docs)]
        if unknown:
            raise NotFound(f"no bookie {', '.join(unknown)}: not registered and not in the rack mapping")
        docs = [d for d in docs if d["bookieId"] in bookie_ids or d["address"] in bookie_ids]
    rows = [
        [
            d["bookieId"] + ("" if d["registered"] else " (not registered)"),
            d["rack"],
            d["hostname"],
            d["group"],
            d["source"],
        ]
        for d in docs
    ]
    app.terminal.document(
        docs, lambda: app.terminal.table(["BOOKIE", "RACK", "HOSTNAME", "GROUP", "SOURCE"], rows, empty="no bookies")
    )

import click

from bkctl.options import output_option


def layout_doc(layout) -> dict:
    """The LAYOUT znode as ``cluster info`` and ``cluster init`` show it."""
    return {
        "formatVersion": layout.format_version,
        "manager": layout.manager,
        "managerFactory": layout.factory_class,
        "managerVersion": layout.manager_version,
    }


@click.command()
@output_option
@click.pass_obj
def info(app):
    """Show the cluster's instance id, layout, bookie counts, missing bookies and under-replicated ledgers

    A bookie is missing when it has a cookie and is not registered (`bookies list --all` also finds the bookies only
    a ledger's ensemble names, reading every ledger). JSON: bookies.missing (a count) and bookies.missingIds.
    """
    from bookie.meta.layout import read_instance_id, read_layout
    from bookie.meta.membership import missing_bookies
    from bookie.meta.registration import READONLY, BookieRegistry
    from bookie.meta.underreplication import UnderReplicationManager

    store = app.metadata
    layout = read_layout(store)
    # one listing for the three counts: one taken apart would count a bookie whose registration expired between
    # them both writable and missing
    registered = BookieRegistry(store).list(writable=True, readonly=True)
    readonly = sum(1 for b in registered if b.state == READONLY)
    writable = len(registered) - readonly
    # cookies only: quick on millions of ledgers
    missing = [m.bookie_id for m in missing_bookies(store, registered=[b.bookie_id for b in registered])]
    doc = {
        "serviceUri": str(store.uri),
        "instanceId": read_instance_id(store),
        "layout": layout_doc(layout),
        "bookies": {"writable": writable, "readonly": readonly, "missing": len(missing), "missingIds": missing},
        "underReplicatedLedgers": UnderReplicationManager(store).count(),
    }
    app.terminal.document(
        doc,
        lambda: app.terminal.fields(
            [
                ("Service URI", doc["serviceUri"]),
                ("Instance ID", doc["instanceId"]),
                (
                    "Layout",
                    f"{layout.manager} (format {layout.format_version}, {layout.factory_class}:"
                    f"{layout.manager_version})",
                ),
                ("Writable bookies", writable),
                ("Read-only bookies", readonly),
                ("Missing bookies", f"{len(missing)} ({', '.join(missing)})" if missing else 0),
                ("Under-replicated ledgers", doc["underReplicatedLedgers"]),
            ]
        ),
    )

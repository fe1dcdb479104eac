import click

from bkctl.options import dry_run_option, output_option


@click.command()
@dry_run_option
@output_option
@click.pass_obj
def init(app, dry_run: bool):
    """Create a new cluster's znodes (INSTANCEID, LAYOUT, available/) in ZooKeeper

    Refuses, exit 1, when the cluster already exists; nothing is changed then. The ledger manager is the one the
    service URI names (zk+hierarchical:// by default).
    """
    from bkctl.cluster.info import layout_doc
    from bookie.meta.layout import Layout, init_cluster, init_plan

    store = app.session  # the one command for a root without a cluster
    manager = store.uri.manager or "hierarchical"
    planned = init_plan(store)
    instance_id = None if dry_run else init_cluster(store, manager)
    layout = Layout.for_manager(manager)
    doc = {
        "serviceUri": str(store.uri),
        "instanceId": instance_id,
        "layout": layout_doc(layout),
        "created": planned,
        "dryRun": dry_run,
    }

    def table():
        if dry_run:
            app.terminal.line(f"would initialise cluster at {store.uri} ({layout.manager} ledger manager), creating:")
            for path in planned:
                app.terminal.line(f"  {path}")
        else:
            app.terminal.line(f"cluster {store.uri} initialised (instance id {instance_id})")

    app.terminal.document(doc, table)

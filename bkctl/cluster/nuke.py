import click

from bkctl.options import dry_run_option, output_option, yes_option


@click.command()
@click.option(
    "--instance-id",
    required=True,
    help="The cluster's instance id (`bkctl cluster info`): proof that this is the cluster meant.",
)
@yes_option
@dry_run_option
@output_option
@click.pass_obj
def nuke(app, instance_id, yes, dry_run):
    """Delete the cluster's root znode and everything under it (nukeexistingcluster)

    Every ledger's metadata, every cookie, LAYOUT and INSTANCEID go, and the root itself; the bookies' data is left
    on their disks. Refused (nothing deleted, exit 3) when --instance-id is not the cluster's, while a bookie is
    registered, or when a znode under the root is neither BookKeeper's nor a ledger's; asks first unless --yes.
    """
    from bookie.meta.format import nuke_cluster, nuke_plan

    store = app.session  # the root must exist, its layout be readable: nuke_plan checks
    plan = nuke_plan(store, instance_id)
    doc = {
        "serviceUri": str(store.uri),
        "instanceId": plan.instance_id,
        "ledgers": plan.ledgers,
        "cookies": plan.cookies,
        "deleted": plan.znodes,
        "dryRun": dry_run,
    }
    summary = f"{store.root} with {plan.ledgers} ledgers and {len(plan.cookies)} cookies"
    if dry_run:
        app.terminal.document(doc, lambda: app.terminal.line(f"would delete {summary} (dry run)"))
        return
    app.terminal.confirm(f"Delete {summary} from {store.uri}? This loses the whole cluster.", "nuke the cluster", yes)
    nuke_cluster(store, instance_id)
    app.terminal.document(doc, lambda: app.terminal.line(f"cluster {store.uri} deleted ({summary})"))

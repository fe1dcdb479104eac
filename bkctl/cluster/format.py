import click

from bkctl.options import dry_run_option, output_option, yes_option


@click.command("format")
@yes_option
@dry_run_option
@output_option
@click.pass_obj
def format_cluster(app, yes, dry_run):
    """Erase the cluster's metadata, keeping the cluster: ledgers, cookies, markers; a new instance id (metaformat)

    The ledger tree and id generator, the under-replication markers and locks, and every bookie's cookie are
    deleted; LAYOUT is written again and a new INSTANCEID, so bookies of the old cluster are refused by their cookies
    (format them: `bkctl bookie format`). Refused while a bookie is registered (exit 3); asks first unless --yes.
    """
    from bookie.meta.format import format_metadata, format_plan

    store = app.metadata
    plan = format_plan(store)
    doc = {
        "serviceUri": str(store.uri),
        "ledgers": plan.ledgers,
        "cookies": plan.cookies,
        "deleted": plan.znodes,
        "oldInstanceId": plan.instance_id,
        "dryRun": dry_run,
    }
    summary = f"{plan.ledgers} ledgers and {len(plan.cookies)} cookies"
    if dry_run:
        app.terminal.document(doc, lambda: _show(app, plan.znodes, f"would be deleted (dry run): {summary}"))
        return
    app.terminal.confirm(
        f"Erase the metadata of {store.uri} ({summary})? This loses every ledger.", "format the cluster", yes
    )
    instance_id = format_metadata(store)
    app.terminal.document(
        {**doc, "instanceId": instance_id},
        lambda: _show(
            app, plan.znodes, f"deleted: {summary}; cluster {store.uri} formatted (instance id {instance_id})"
        ),
    )


def _show(app, znodes: list[str], summary: str) -> None:
    for path in znodes:
        app.terminal.info(path)
    app.terminal.line(summary)

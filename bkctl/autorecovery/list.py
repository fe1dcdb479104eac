import click

from bkctl.completers import complete_bookie_ids
from bkctl.options import output_option


@click.command("list-under-replicated")
@click.option("--count", is_flag=True, help="Only print how many ledgers are marked.")
@click.option(
    "--missing-replica",
    metavar="BOOKIE",
    shell_complete=complete_bookie_ids,
    help="Only ledgers missing a replica on this bookie.",
)
@output_option
@click.pass_obj
def list_under_replicated(app, count, missing_replica):
    """List the ledgers marked under-replicated, with their missing replicas and when they were marked"""
    from bkctl.terminal import iso_time
    from bookie.meta.underreplication import UnderReplicationManager

    markers = [
        m
        for m in UnderReplicationManager(app.metadata).iter_marked()
        if missing_replica is None or missing_replica in m.replicas
    ]
    if count:
        app.terminal.document({"count": len(markers)}, lambda: app.terminal.line(str(len(markers))))
        return
    docs = [
        {"ledgerId": m.ledger_id, "missingReplicas": list(m.replicas), "ctime": m.ctime, "ctimeIso": iso_time(m.ctime)}
        for m in markers
    ]
    app.terminal.document(
        docs,
        lambda: app.terminal.table(
            ["LEDGER", "MISSING-REPLICAS", "MARKED"],
            [[d["ledgerId"], d["missingReplicas"], d["ctimeIso"]] for d in docs],
            empty="no under-replicated ledgers",
        ),
    )

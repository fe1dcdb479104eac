import click

from bkctl.options import output_option
from bkctl.pulsar.common import min_age_option, pulsar_zk_option

LEVELS = ("tenant", "namespace", "topic")


@click.command()
@click.option(
    "--by",
    type=click.Choice(LEVELS),
    default="namespace",
    show_default=True,
    help="One row per tenant, namespace or topic.",
)
@pulsar_zk_option
@min_age_option
@output_option
@click.pass_obj
def usage(app, by, pulsar_zk, min_age):
    """Show the bytes of the cluster's ledgers per tenant, namespace or topic, orphaned, and not Pulsar's

    BYTES is the length in ledger metadata (what writers wrote, known once a ledger is closed; OPEN counts the
    ledgers still open, whose bytes are not in it yet), STORED that times the write quorum: what the bookies hold.
    A ledger counts for the topic that references it; an unreferenced one that is young or protected, for the
    topic its custom metadata names. The last rows: orphaned (as `pulsar orphans` with the same --min-age), not
    Pulsar's, and all ledgers — put them next to what Pulsar reports for its namespaces.
    """
    from admin.pulsar.audit import Usage
    from bkctl.pulsar.common import open_audit
    from bkctl.terminal import format_bytes

    report = open_audit(app, pulsar_zk, min_age).run()
    for problem in report.problems:
        app.terminal.warn(problem)
    totals = Usage()
    for verdict in report.verdicts:
        totals.count(verdict)
    order = [by, "orphaned", "other", "total"]
    rows = sorted(
        ((level, name, *values) for (level, name), values in totals.rows.items() if level in order),
        key=lambda row: (order.index(row[0]), row[1]),
    )
    doc = [
        {"level": level, "name": name, "ledgers": n, "bytes": size, "storedBytes": stored, "openLedgers": opened}
        for level, name, n, size, stored, opened in rows
    ]
    app.terminal.document(
        doc,
        lambda: app.terminal.table(
            [by.upper(), "LEDGERS", "BYTES", "STORED", "OPEN"],
            [[name, n, format_bytes(size), format_bytes(stored), opened] for _, name, n, size, stored, opened in rows],
            empty="no ledgers",
        ),
    )
    if report.problems:
        raise click.exceptions.Exit(1)

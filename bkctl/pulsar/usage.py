from __future__ import annotations

from typing import TYPE_CHECKING

import click

from bkctl.options import output_option
from bkctl.pulsar.common import min_age_option, pulsar_zk_option

if TYPE_CHECKING:
    from bkctl.app import Application

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
def usage(app: Application, by: str, pulsar_zk: str | None, min_age: float) -> None:
    """Show the bytes of the cluster's ledgers per tenant, namespace or topic, orphaned, and not Pulsar's

    BYTES is the length in ledger metadata (what writers wrote, known once a ledger is closed; OPEN counts the
    ledgers still open, whose bytes are not in it yet), STORED that times the write quorum: what the bookies hold.
    A ledger counts for the topic that references it; an unreferenced one that is young or protected, for the
    topic its custom metadata names. The last rows: orphaned (as `pulsar orphans` with the same --min-age), not
    Pulsar's, and all ledgers — put them next to what Pulsar reports for its namespaces.
    """
    from admin.pulsar.audit import Usage
    from bkctl.errors import ExitCode
    from bkctl.pulsar.common import open_audit
    from bkctl.terminal import format_bytes

    with app.terminal.phases() as progress:
        report = open_audit(app, pulsar_zk, min_age).run(progress=progress)
    for problem in report.problems:
        app.terminal.warn(problem)
    totals = Usage()
    for verdict in report.verdicts:
        totals.count(verdict)
    order = [by, "orphaned", "other", "total"]
    keys = sorted((key for key in totals.rows if key[0] in order), key=lambda key: (order.index(key[0]), key[1]))
    doc = [{"level": level, "name": name, **totals.rows[level, name].doc()} for level, name in keys]
    rows = [totals.rows[key] for key in keys]
    app.terminal.document(
        doc,
        lambda: app.terminal.table(
            [by.upper(), "LEDGERS", "BYTES", "STORED", "OPEN"],
            [
                [name, r.ledgers, format_bytes(r.bytes), format_bytes(r.stored), r.open]
                for (_, name), r in zip(keys, rows, strict=True)
            ],
            empty="no ledgers",
        ),
    )
    if report.problems:
        raise click.exceptions.Exit(ExitCode.FAILED)

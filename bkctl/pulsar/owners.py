from __future__ import annotations

from typing import TYPE_CHECKING

import click

from bkctl.completers import complete_ledger_ids
from bkctl.options import output_option
from bkctl.pulsar.common import min_age_option, pulsar_zk_option

if TYPE_CHECKING:
    from bkctl.app import Application


@click.command()
@click.argument("ledger_ids", metavar="[LEDGER]...", nargs=-1, shell_complete=complete_ledger_ids)
@pulsar_zk_option
@min_age_option
@output_option
@click.pass_obj
def owners(app: Application, ledger_ids: tuple[str, ...], pulsar_zk: str | None, min_age: float) -> None:
    """Show each ledger's owner as Pulsar records it, and whether anything in Pulsar still references it

    The owner comes from the ledger's custom metadata (application=pulsar, component, pulsar/managed-ledger,
    pulsar/cursor, pulsar/schemaId, pulsar/compactedTopic, or the older psr/... keys); references from Pulsar's
    metadata (managed ledgers, cursors, schema locators, compaction cursors). STATUS is referenced, orphaned,
    young (unreferenced, younger than --min-age), protected (unreferenced, but see REASON in -o wide) or
    not-pulsar. Every ledger when none is named; a named ledger that does not exist is reported, exit 5.
    """
    show(app, ledger_ids, pulsar_zk, min_age)


def show(app: Application, ledger_ids: tuple[str, ...], pulsar_zk: str | None, min_age: float) -> None:
    """The owners table (also `ledger list --owner`)."""
    from bkctl.errors import ExitCode
    from bkctl.pulsar.common import HEADERS, WIDE, open_audit, verdict_row
    from bookie.meta.paths import parse_ledger_id

    ids = sorted({parse_ledger_id(i) for i in ledger_ids}) or None
    with app.terminal.phases() as progress:
        report = open_audit(app, pulsar_zk, min_age).run(ids, progress=progress)
    for problem in report.problems:
        app.terminal.warn(problem)
    missing = sorted(set(ids or ()) - {v.ledger.ledger_id for v in report.verdicts})
    for lid in missing:
        app.terminal.error(f"ledger {lid} does not exist")
    wide = app.terminal.output == "wide"
    app.terminal.document(
        [v.doc() for v in report.verdicts],
        lambda: app.terminal.table(
            HEADERS + (WIDE if wide else []), [verdict_row(v, wide) for v in report.verdicts], empty="no ledgers"
        ),
    )
    if missing:
        raise click.exceptions.Exit(ExitCode.NOT_FOUND)
    if report.problems:
        raise click.exceptions.Exit(ExitCode.FAILED)

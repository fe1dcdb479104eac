import click

from bkctl.errors import ExitCode
from bkctl.options import output_option
from bkctl.pulsar.common import pulsar_zk_option


@click.command("list")
@click.option("--meta", is_flag=True, help="Read and show each ledger's metadata too (slower).")
@click.option("--owner", is_flag=True, help="Show each ledger's Pulsar owner and status, as `pulsar owners` does.")
@pulsar_zk_option
@output_option
@click.pass_obj
def list_ledgers(app, meta: bool, owner: bool, pulsar_zk: str | None):
    """List all ledger ids, ascending, as they are read (streams; -o json prints a JSON array)

    Without --meta only the znode names are listed, never each ledger's data. A ledger whose metadata cannot be
    read is reported on stderr and the command exits 1 after listing the others.
    """
    from bkctl.ledger.render import HEADERS, metadata_doc, metadata_row

    if owner:
        from admin.pulsar.audit import DEFAULT_MIN_AGE
        from bkctl.pulsar.owners import show

        show(app, (), pulsar_zk, DEFAULT_MIN_AGE)
        return
    ledgers = app.ledgers
    if not meta:
        app.terminal.stream(
            ledgers.iter_ledger_ids(), ["LEDGER"], lambda i: [i], lambda i: {"ledgerId": i}, empty="no ledgers"
        )
        return
    failed = []

    def corrupt(exc):
        failed.append(exc)
        app.terminal.warn(str(exc))

    app.terminal.stream(
        ledgers.iter_ledgers(on_corrupt=corrupt),
        HEADERS,
        lambda item: metadata_row(*item),
        lambda item: metadata_doc(*item),
        empty="no ledgers",
    )
    if failed:
        raise click.exceptions.Exit(ExitCode.FAILED)

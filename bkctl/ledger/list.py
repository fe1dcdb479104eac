import click

from bkctl.completers import complete_known_bookie_ids
from bkctl.errors import ExitCode
from bkctl.options import output_option
from bkctl.pulsar.common import pulsar_zk_option


@click.command("list")
@click.option("--meta", is_flag=True, help="Read and show each ledger's metadata too (slower).")
@click.option("--owner", is_flag=True, help="Show each ledger's Pulsar owner and status, as `pulsar owners` does.")
@click.option(
    "--bookie",
    "bookie_id",
    metavar="BOOKIE",
    shell_complete=complete_known_bookie_ids,
    help="Only the ledgers whose ensembles name BOOKIE, with their expected entries and bytes on it.",
)
@pulsar_zk_option
@output_option
@click.pass_obj
def list_ledgers(app, meta: bool, owner: bool, bookie_id: str | None, pulsar_zk: str | None):
    """List all ledger ids, ascending, as they are read (streams; -o json prints a JSON array)

    Without --meta only the znode names are listed, never each ledger's data. A ledger whose metadata cannot be
    read is reported on stderr and the command exits 1 after listing the others. --bookie reads every ledger's
    metadata and lists those naming the bookie (BookKeeper's listledgers -bookieid), with the entries their write
    sets put on it and their bytes (a closed ledger's length spread over its entries; an open one's are unknown);
    a bookie the cluster has never known is not found, exit 5.
    """
    from bkctl.ledger.render import HEADERS, metadata_doc, metadata_row

    if bookie_id is not None:
        if owner or meta:
            raise click.UsageError(
                "--bookie lists the ledgers with their share on the bookie: not with --owner or --meta"
            )
        _on_bookie(app, bookie_id)
        return
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


def _on_bookie(app, bookie_id: str) -> None:
    """The ledgers naming the bookie, streamed, with their expected share on it."""
    from admin.usage.expected import expected_on, names
    from bkctl.bookie._targets import require_known_bookies
    from bkctl.terminal import format_bytes

    require_known_bookies(app, [bookie_id])
    failed = []

    def corrupt(exc):
        failed.append(exc)
        app.terminal.warn(str(exc))

    def share(item):
        ledger_id, md = item
        expected = expected_on(md, bookie_id)
        return ledger_id, md, expected

    found = (share(item) for item in app.ledgers.iter_ledgers(on_corrupt=corrupt) if names(item[1], bookie_id))
    app.terminal.stream(
        found,
        ["LEDGER", "STATE", "ENTRIES", "BYTES"],
        lambda s: [s[0], s[1].state.name, s[2].entries, format_bytes(s[2].bytes) if s[1].is_closed else None],
        lambda s: {
            "ledgerId": s[0],
            "state": s[1].state.name,
            "entries": s[2].entries,
            "bytes": s[2].bytes if s[1].is_closed else None,
        },
        empty=f"no ledger names {bookie_id}",
    )
    if failed:
        raise click.exceptions.Exit(ExitCode.FAILED)

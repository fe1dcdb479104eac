import click

from bkctl.completers import complete_bookie_ids, complete_known_bookie_ids
from bkctl.options import dry_run_option, output_option, yes_option


def replacement_options(command):
    """``--limit``, ``--rate``, ``--yes``, ``--dry-run``, ``-o``: shared with `ledger update`."""
    command = output_option(dry_run_option(yes_option(command)))
    command = click.option(
        "--rate",
        type=click.FloatRange(0, min_open=True),
        default=5.0,
        show_default=True,
        help="Ledgers updated per second (BookKeeper's --updatepersec).",
    )(command)
    return click.option(
        "--limit", type=click.IntRange(1), help="Update at most this many ledgers [default: all that name it]."
    )(command)


@click.command("replace-in-ledgers")
@click.argument("old_id", metavar="OLD", shell_complete=complete_known_bookie_ids)
@click.argument("new_id", metavar="NEW", shell_complete=complete_bookie_ids)
@replacement_options
@click.pass_obj
def replace_in_ledgers(app, old_id, new_id, limit, rate, yes, dry_run):
    """Replace a bookie id by another in every ledger's ensembles (updateBookieInLedger, bookieid search-replace)

    For a bookie that now answers under another id on the same disks (a new address or host name): the ledgers
    naming OLD then name NEW. Each ledger is a compare-and-set on the version read, retried when a writer changed
    it meanwhile. Refused while OLD is registered (exit 3); asks first unless --yes; --dry-run lists the ledgers.
    """
    from admin.replace_bookie import check_replacement
    from bookie.meta.bookie_id import check_bookie_id

    check_bookie_id(new_id)
    check_replacement(app.metadata, old_id, new_id)
    run_replacement(app, old_id, new_id, limit, rate, yes, dry_run)


def run_replacement(app, old_id, new_id, limit, rate, yes, dry_run) -> None:
    from admin.replace_bookie import replace_bookie_in_ledgers
    from bookie.meta.ledger_manager import LedgerManager

    if not dry_run:
        app.terminal.confirm(f"Replace {old_id} by {new_id} in the ledgers naming it?", "rewrite ledger metadata", yes)
    ids = list(LedgerManager(app.metadata).iter_ledger_ids())
    done = "would be updated (dry run)" if dry_run else "updated"
    with app.terminal.phases() as progress:
        replaced = replace_bookie_in_ledgers(app.metadata, old_id, new_id, limit, rate, dry_run, progress, ids)
        # widths known up front (the longest ledger id; segments and znode versions are short): under --rate a
        # row comes every 1/rate seconds, and each is printed as it comes
        count = app.terminal.stream(
            replaced,
            ["LEDGER", "SEGMENTS", "VERSION"],
            lambda r: [f"ledger/{r.ledger_id}", r.segments, r.version],
            lambda r: {**r.doc(), "from": old_id, "to": new_id, "dryRun": dry_run},
            empty=f"no ledger names {old_id}",
            widths=[len(f"ledger/{max(ids, default=0)}"), 0, 0],
        )
    if count:
        app.terminal.info(f"{count} ledgers {done}: {old_id} -> {new_id}")

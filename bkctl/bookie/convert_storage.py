from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from bkctl.bookie.offline import bookie_config, dir_pairs, directory_options, stopped
from bkctl.options import dry_run_option, output_option, yes_option

if TYPE_CHECKING:
    from bkctl.app import Application


@click.command("convert-storage")
@click.option(
    "--to", "target", type=click.Choice(["db", "interleaved"]), required=True, help="The storage to convert to."
)
@directory_options
@dry_run_option
@yes_option
@output_option
@click.pass_obj
def convert_storage(
    app: Application,
    target: str,
    journal_dirs: tuple[str, ...],
    ledger_dirs: tuple[str, ...],
    index_dirs: tuple[str, ...],
    dry_run: bool,
    yes: bool,
) -> None:
    """Convert a stopped bookie's index between InterleavedLedgerStorage and DbLedgerStorage

    --to db (convert-to-db-storage): each ledger's index file into the RocksDB indexes, then the index files are
    removed. --to interleaved (convert-to-interleaved-storage): an index file per ledger, then the databases are
    kept as current/ledgers.backup and current/locations.backup. The entry logs are shared and stay. Afterwards set
    ledgerStorageClass in the bookie's configuration to the new storage. Refuses a running bookie.
    """
    from bookie.storage.db.offline import convert_to_db, convert_to_interleaved

    config = bookie_config(app, journal_dirs, ledger_dirs, index_dirs)
    pairs = dir_pairs(config)
    if not dry_run:
        indexes = ", ".join(str(index) for _, index in pairs)
        app.terminal.confirm(f"Convert the index of {indexes} to {target} storage?", "convert", yes)
    convert = convert_to_db if target == "db" else convert_to_interleaved
    docs: list[dict[str, Any]] = []
    with stopped(config, f"convert its index to {target}"):
        for ledger, index in pairs:
            done = convert(ledger, index, dry_run)
            docs.append(
                {
                    "indexDir": str(index),
                    "to": target,
                    "ledgers": done.ledgers,
                    "entries": done.entries,
                    "dryRun": dry_run,
                }
            )

    def table() -> None:
        verb = "would be converted (dry run)" if dry_run else "converted"
        for d in docs:
            app.terminal.line(f"{d['indexDir']}: {d['ledgers']} ledgers, {d['entries']} entries {verb} to {target}")

    app.terminal.document(docs, table)

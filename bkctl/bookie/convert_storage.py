from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from bkctl.bookie._offline import bookie_config, dir_pairs, directory_options, stopped
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
    removed; with several ledger directories a ledger goes to the one DbLedgerStorage reads it from (ledger id mod
    their number), and its entries in other directories' entry logs are copied into that one's. --to interleaved
    (convert-to-interleaved-storage): an index file per ledger, then the databases are kept as
    current/ledgers.backup and current/locations.backup; an entry log whose id an earlier directory also has is
    renamed. The entry logs stay. Afterwards set ledgerStorageClass in the bookie's configuration to the new
    storage. Refuses a running bookie.
    """
    from bookie.storage.db.offline import convert_to_db, convert_to_interleaved

    config = bookie_config(app, journal_dirs, ledger_dirs, index_dirs)
    pairs = dir_pairs(config)
    if not dry_run:
        indexes = ", ".join(str(index) for _, index in pairs)
        app.terminal.confirm(f"Convert the index of {indexes} to {target} storage?", "convert", yes)
    convert = convert_to_db if target == "db" else convert_to_interleaved
    docs: list[dict[str, Any]] = []
    with stopped(config, f"convert its index to {target}"), app.terminal.phases() as progress:
        for (_, index), done in zip(pairs, convert(pairs, dry_run, progress), strict=True):
            docs.append(
                {
                    "indexDir": str(index),
                    "to": target,
                    "ledgers": done.ledgers,
                    "entries": done.entries,
                    "entriesCopied": done.copied,
                    "dryRun": dry_run,
                }
            )

    def table() -> None:
        verb = "would be converted (dry run)" if dry_run else "converted"
        for d in docs:
            copied = f" ({d['entriesCopied']} copied from other ledger directories)" if d["entriesCopied"] else ""
            app.terminal.line(
                f"{d['indexDir']}: {d['ledgers']} ledgers, {d['entries']} entries{copied} {verb} to {target}"
            )

    app.terminal.document(docs, table)

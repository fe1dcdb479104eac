from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from bkctl.bookie.offline import bookie_dirs, offline_options, stopped
from bkctl.options import dry_run_option, output_option

if TYPE_CHECKING:
    from bkctl.app import Application


@click.command("convert-storage")
@click.option(
    "--to", "target", type=click.Choice(["db", "interleaved"]), required=True, help="The storage to convert to."
)
@offline_options
@dry_run_option
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@output_option
@click.pass_obj
def convert_storage(
    app: Application,
    target: str,
    conf_file: str | None,
    journal_dir: str | None,
    ledger_dir: str | None,
    index_dir: str | None,
    settings: dict[str, str],
    dry_run: bool,
    yes: bool,
) -> None:
    """Convert a stopped bookie's index between InterleavedLedgerStorage and DbLedgerStorage

    --to db (convert-to-db-storage): each ledger's index file into the RocksDB indexes, then the index files are
    removed. --to interleaved (convert-to-interleaved-storage): an index file per ledger, then the databases are
    kept as current/ledgers.backup and current/locations.backup. The entry logs are shared and stay. Afterwards set
    ledgerStorageClass in the bookie's configuration to the new storage. Refuses a running bookie.
    """
    import sys

    from bookie.errors import InvalidArgument
    from bookie.storage.db.offline import convert_to_db, convert_to_interleaved

    dirs = bookie_dirs(app, conf_file, journal_dir, ledger_dir, index_dir, settings)
    if not dry_run and not yes:
        if not sys.stdin.isatty():
            raise InvalidArgument("refusing to convert without --yes: no terminal to confirm on")
        click.confirm(
            f"Convert the index of {', '.join(map(str, dirs.index))} to {target} storage?", abort=True, err=True
        )
    convert = convert_to_db if target == "db" else convert_to_interleaved
    docs: list[dict[str, Any]] = []
    with stopped(dirs):
        for ledger, index in dirs.pairs():
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

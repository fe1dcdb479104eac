from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from bkctl.bookie._offline import bookie_config, dir_pairs, directory_options, stopped
from bkctl.options import dry_run_option, output_option

if TYPE_CHECKING:
    from bkctl.app import Application


@click.command("rebuild-db-index")
@click.argument("which", type=click.Choice(["locations", "ledgers"]))
@directory_options
@dry_run_option
@output_option
@click.pass_obj
def rebuild_db_index(
    app: Application,
    which: str,
    journal_dirs: tuple[str, ...],
    ledger_dirs: tuple[str, ...],
    index_dirs: tuple[str, ...],
    dry_run: bool,
) -> None:
    """Rebuild a stopped DbLedgerStorage bookie's locations or ledgers index from its files

    locations (rebuild-db-ledger-locations-index): the locations of the ledgers index's ledgers, from a scan of
    every entry log; the old index is kept as current/locations.BACKUP-<time>. ledgers
    (rebuild-db-ledgers-index): every ledger of the journals and entry logs, fenced, without master key (the next
    writer's is taken), each in the directory DbLedgerStorage reads it from (ledger id mod their number); the old
    index is kept as current/ledgers.PREV-<time>. Refuses a running bookie.
    """
    from bookie.storage.db.offline import rebuild_ledgers, rebuild_locations

    config = bookie_config(app, journal_dirs, ledger_dirs, index_dirs)
    pairs = dir_pairs(config)
    docs: list[dict[str, Any]] = []
    with stopped(config, f"rebuild its {which} index"), app.terminal.phases() as progress:
        for rank, (ledger, index) in enumerate(pairs):
            if which == "locations":
                done = rebuild_locations(ledger, index, dry_run, progress)
            else:
                journals = list(config.journal_dirs)
                done = rebuild_ledgers(journals, ledger, index, dry_run, rank, len(pairs), progress)
            docs.append(
                {
                    "indexDir": str(index),
                    "index": which,
                    "ledgers": done.ledgers,
                    "entries": done.entries if which == "locations" else None,
                    "filesScanned": done.sources,
                    "backup": str(done.backup) if done.backup else None,
                    "dryRun": dry_run,
                }
            )

    def table() -> None:
        for d in docs:
            what = f"{d['ledgers']} ledgers" + (f", {d['entries']} entries" if d["entries"] is not None else "")
            if dry_run:
                app.terminal.line(f"{d['indexDir']}: {which} index would be rebuilt: {what} (dry run)")
            else:
                kept = f"; the old one is {d['backup']}" if d["backup"] else ""
                app.terminal.line(f"{d['indexDir']}: {which} index rebuilt: {what}{kept}")

    app.terminal.document(docs, table)

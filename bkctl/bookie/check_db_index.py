from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from bkctl.bookie._offline import bookie_config, dir_pairs, directory_options
from bkctl.options import output_option

if TYPE_CHECKING:
    from bkctl.app import Application


@click.command("check-db-index")
@directory_options
@click.option("--verify-entries", is_flag=True, help="Also read each location's entry header from its entry log.")
@output_option
@click.pass_obj
def check_db_index(
    app: Application,
    journal_dirs: tuple[str, ...],
    ledger_dirs: tuple[str, ...],
    index_dirs: tuple[str, ...],
    verify_entries: bool,
) -> None:
    """Check a DbLedgerStorage bookie's indexes offline (like check-db-ledgers-index); exit 3 on problems

    Every record of the ledgers index must parse; every location must belong to a ledger of the ledgers index and
    point into an entry log that exists (with --verify-entries, at an entry with the ids of its key). Reads only:
    a running bookie is fine, a stopped one (Java's or ours) gives a stable answer.
    """
    from bkctl.errors import CheckFailed
    from bookie.storage.db.offline import check_index

    config = bookie_config(app, journal_dirs, ledger_dirs, index_dirs)
    pairs = dir_pairs(config)
    docs: list[dict[str, Any]] = []
    with app.terminal.phases() as progress:
        found_in = [check_index(ledger, index, verify_entries, progress) for ledger, index in pairs]
    for (ledger, index), found in zip(pairs, found_in, strict=True):
        docs.append(
            {
                "ledgerDir": str(ledger),
                "indexDir": str(index),
                "ledgers": found.ledgers,
                "locations": found.locations,
                "entriesVerified": found.entries_verified,
                "problems": found.problems,
            }
        )

    def table() -> None:
        rows = [[d["indexDir"], d["ledgers"], d["locations"], len(d["problems"])] for d in docs]
        app.terminal.table(["INDEX DIR", "LEDGERS", "LOCATIONS", "PROBLEMS"], rows)
        for d in docs:
            for problem in d["problems"]:
                app.terminal.warn(problem)

    app.terminal.document(docs, table)
    problems = sum(len(d["problems"]) for d in docs)
    if problems:
        raise CheckFailed(f"{problems} problem(s) in the DbLedgerStorage indexes")

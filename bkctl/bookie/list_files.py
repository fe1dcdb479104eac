import click

from bkctl.bookie._offline import directory_options
from bkctl.options import output_option


@click.command("list-files")
@click.option("--journal", is_flag=True, help="Journal files (.txn).")
@click.option("--entrylog", is_flag=True, help="Entry log files (.log).")
@click.option("--index", is_flag=True, help="Index files (.idx).")
@directory_options
@output_option
@click.pass_obj
def list_files(app, journal, entrylog, index, journal_dirs, ledger_dirs, index_dirs):
    """List a bookie's journal, entry log and index files, oldest first (listfilesondisc)

    The directories are -c's bk_server.conf's (or the flags'), Java's or ours; without --journal, --entrylog or
    --index, every kind. Runs beside a live bookie too (it only lists).
    """
    from admin.offline.list_files import KINDS, list_files
    from bkctl.bookie._offline import bookie_config
    from bkctl.terminal import format_bytes

    kinds = [k for k, wanted in (("journal", journal), ("entrylog", entrylog), ("index", index)) if wanted]
    files = list_files(bookie_config(app, journal_dirs, ledger_dirs, index_dirs).storage(), kinds or list(KINDS))
    app.terminal.document(
        [f.doc() for f in files],
        lambda: app.terminal.table(
            ["KIND", "FILE", "SIZE"], [[f.kind, str(f.path), format_bytes(f.size)] for f in files], "no files"
        ),
    )

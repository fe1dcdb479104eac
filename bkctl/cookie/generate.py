import click

from bkctl.completers import complete_bookie_ids
from bkctl.options import output_option


def _dirs(_ctx, _param, value: str | None) -> list[str] | None:
    return [d.strip() for d in value.split(",") if d.strip()] if value is not None else None


@click.command()
@click.argument("bookie_id", metavar="BOOKIE", shell_complete=complete_bookie_ids)
@click.option("--journal-dirs", callback=_dirs, metavar="DIR[,DIR...]", help="journalDirectories [default: -c's].")
@click.option("--ledger-dirs", callback=_dirs, metavar="DIR[,DIR...]", help="ledgerDirectories [default: -c's].")
@click.option(
    "--index-dirs", callback=_dirs, metavar="DIR[,DIR...]", help="indexDirectories, when set apart [default: -c's]."
)
@click.option("--instance-id", help="The cluster's instance id [default: read from the cluster].")
@click.option(
    "--output-file",
    required=True,
    type=click.Path(dir_okay=False, writable=True),
    help="Where to write the cookie (then `cookie create` or `cookie update` uploads it).",
)
@output_option
@click.pass_obj
def generate(app, bookie_id, journal_dirs, ledger_dirs, index_dirs, instance_id, output_file):
    """Write the cookie a bookie with these directories writes, to a file (cookie_generate)

    Byte for byte what BookKeeper writes (directories as given, comma- or tab-separated as it lists them). The
    directories default to those of -c's bk_server.conf; the instance id is read from the cluster unless given.
    """
    from pathlib import Path

    from admin.cookies import cookie_doc, generate_cookie
    from bookie.errors import InvalidArgument
    from bookie.meta.bookie_id import check_bookie_id
    from bookie.meta.layout import read_instance_id
    from bookie.server.config import BookieConfig

    check_bookie_id(bookie_id)
    if app.conf_path and None in (journal_dirs, ledger_dirs, index_dirs):
        config = BookieConfig.load(app.conf_path)
        journal_dirs = journal_dirs if journal_dirs is not None else config.dirs("journalDirectories")
        ledger_dirs = ledger_dirs if ledger_dirs is not None else config.dirs("ledgerDirectories")
        index_dirs = index_dirs if index_dirs is not None else config.dirs("indexDirectories")
    if not journal_dirs or not ledger_dirs:
        raise InvalidArgument("name the bookie's directories: --journal-dirs and --ledger-dirs, or -c bk_server.conf")
    cookie = generate_cookie(
        bookie_id, journal_dirs, ledger_dirs, index_dirs, instance_id or read_instance_id(app.metadata)
    )
    try:
        Path(output_file).write_bytes(cookie.encode())
    except OSError as exc:
        raise InvalidArgument(f"cannot write {output_file}: {exc.strerror or exc}") from None
    app.terminal.document(
        {**cookie_doc(cookie), "outputFile": output_file},
        lambda: app.terminal.line(f"cookie of {bookie_id} written to {output_file}"),
    )

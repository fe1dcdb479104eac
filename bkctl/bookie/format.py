import click

from bkctl.bookie._offline import directory_options
from bkctl.options import dry_run_option, output_option, yes_option


@click.command("format")
@click.option(
    "--delete-cookie", is_flag=True, help="Also delete its cookie from the metadata store (then it starts anew)."
)
@directory_options
@yes_option
@dry_run_option
@output_option
@click.pass_obj
def format_bookie(app, delete_cookie, journal_dirs, ledger_dirs, index_dirs, yes, dry_run):
    """Erase a stopped bookie's journal, ledger and index directories (bookieformat)

    Everything in them goes, its cookies too; with --delete-cookie its cookie in the metadata store as well, so
    that it starts again as a new bookie (with only the local ones gone, its next start is refused: the cookie in
    the metadata store names data it no longer has). Its ledgers' replicas are lost: recover them onto the other
    bookies first (`bkctl bookie decommission`). The directories are -c's bk_server.conf's, the bookie id its.
    Refused while the bookie runs (its directory lock, or its registration; exit 3); asks first unless --yes.
    """
    from admin.cookies import delete_cookie as delete_stored
    from admin.cookies import read_cookie
    from admin.offline.format import format_dirs, format_plan
    from bkctl.bookie._offline import bookie_config, stopped
    from bookie.errors import NotFound
    from bookie.meta.registration import require_not_registered
    from bookie.server.network import BookieNetwork

    config = bookie_config(app, journal_dirs, ledger_dirs, index_dirs)
    bookie_id = BookieNetwork.of(config).bookie_id
    require_not_registered(app.metadata, bookie_id, "format it")  # a Java bookie holds no directory lock
    stored = None
    if delete_cookie:
        try:
            stored = read_cookie(app.metadata, bookie_id)
        except NotFound:
            app.terminal.warn(f"bookie {bookie_id} has no cookie in the metadata store")
    with stopped(config, "format it"):
        planned = format_plan(config.all_dirs)
        doc = {
            "bookieId": bookie_id,
            "deleted": [str(p) for p in planned],
            "cookieDeleted": stored is not None,
            "dryRun": dry_run,
        }
        if dry_run:
            app.terminal.document(doc, lambda: _show(app, planned, stored, "would be deleted (dry run)"))
            return
        if planned or stored is not None:
            app.terminal.confirm(
                f"Erase bookie {bookie_id}'s data ({len(planned)} files and directories)?", "format a bookie", yes
            )
        format_dirs(config.all_dirs)
    if stored is not None:
        delete_stored(app.metadata, stored)
    app.terminal.document(doc, lambda: _show(app, planned, stored, "deleted"))


def _show(app, planned, stored, done: str) -> None:
    for path in planned:
        app.terminal.line(f"{path} {done}")
    if stored is not None:
        app.terminal.line(f"cookie/{stored.cookie.bookie_id} {done}")
    if not planned and stored is None:
        app.terminal.line("nothing to delete: the directories are empty")

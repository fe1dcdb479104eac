import click

from bkctl.completers import complete_bookie_ids
from bkctl.options import output_option


@click.command()
@click.argument("bookie_id", metavar="BOOKIE", shell_complete=complete_bookie_ids)
@output_option
@click.pass_obj
def get(app, bookie_id):
    """Show a bookie's cookie in the metadata store (cookie_get): its cluster instance id and directories

    Exit 5 when the bookie has none.
    """
    from admin.cookies import read_cookie
    from bkctl.cookie.render import show_cookie

    show_cookie(app, read_cookie(app.metadata, bookie_id).doc())

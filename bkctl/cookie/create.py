import click

from bkctl.completers import complete_bookie_ids
from bkctl.options import dry_run_option, output_option


def cookie_file_argument(command):
    """BOOKIE and ``--cookie-file``: a cookie to upload for a bookie (create, update)."""
    command = click.option(
        "--cookie-file",
        required=True,
        type=click.Path(exists=True, dir_okay=False),
        help="The cookie to upload (`cookie generate`'s file, or a bookie's current/VERSION).",
    )(command)
    return click.argument("bookie_id", metavar="BOOKIE", shell_complete=complete_bookie_ids)(command)


@click.command()
@cookie_file_argument
@dry_run_option
@output_option
@click.pass_obj
def create(app, bookie_id, cookie_file, dry_run):
    """Upload a cookie for a bookie that has none (cookie_create)

    The file must be a cookie, and BOOKIE's (exit 2 otherwise); a bookie that already has a cookie is refused
    (exit 2: `cookie update` replaces one).
    """
    from admin.cookies import cookie_doc, create_cookie, load_cookie_file
    from bkctl.cookie.render import show_change

    cookie = load_cookie_file(cookie_file, bookie_id)
    if dry_run:
        show_change(app, cookie_doc(cookie), "would be created (dry run)")
    else:
        show_change(app, create_cookie(app.metadata, cookie).doc(), "created")

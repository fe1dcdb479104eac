import click

from bkctl.completers import complete_bookie_ids
from bkctl.options import dry_run_option, output_option, yes_option


@click.command()
@click.argument("bookie_id", metavar="BOOKIE", shell_complete=complete_bookie_ids)
@yes_option
@dry_run_option
@output_option
@click.pass_obj
def delete(app, bookie_id, yes, dry_run):
    """Delete a stopped bookie's cookie from the metadata store (cookie_delete)

    Its disks keep theirs (current/VERSION), so it will not start on them again until the cookie is back; a
    formatted bookie (`bookie format`) starts as a new one. Refused while the bookie is registered (exit 3); asks
    first, unless --yes.
    """
    from admin.cookies import delete_cookie, read_cookie
    from bkctl.cookie.render import show_change
    from bookie.meta.registration import require_not_registered

    stored = read_cookie(app.metadata, bookie_id)
    require_not_registered(app.metadata, bookie_id, "delete its cookie")
    if dry_run:
        show_change(app, stored.doc(), "would be deleted (dry run)")
        return
    app.terminal.confirm(f"Delete the cookie of {bookie_id}?", "delete a cookie", yes)
    delete_cookie(app.metadata, stored)
    show_change(app, stored.doc(), "deleted")

import click

from bkctl.cookie.create import cookie_file_argument
from bkctl.options import dry_run_option, output_option, yes_option


@click.command()
@cookie_file_argument
@yes_option
@dry_run_option
@output_option
@click.pass_obj
def update(app, bookie_id, cookie_file, yes, dry_run):
    """Replace a bookie's cookie in the metadata store (cookie_update), e.g. after moving its disks

    Says what changes (-o json: "changes") and asks first, unless --yes. The replacement is a compare-and-set on
    the version read: a cookie changed meanwhile is left alone (exit 1). The bookie's directories keep their own
    copies (current/VERSION): a bookie starts only when all of them agree.
    """
    from admin.cookies import cookie_doc, load_cookie_file, read_cookie, update_cookie
    from bkctl.cookie.render import show_change

    cookie = load_cookie_file(cookie_file, bookie_id)
    stored = read_cookie(app.metadata, bookie_id)
    changes = cookie.differences(stored.cookie)
    for change in changes:
        app.terminal.info(f"cookie/{bookie_id}: {change}")
    if not changes:
        show_change(app, stored.doc(), "unchanged", changes=[])
    elif dry_run:
        show_change(app, cookie_doc(cookie), "would be replaced (dry run)", changes=changes)
    else:
        app.terminal.confirm(f"Replace the cookie of {bookie_id} ({'; '.join(changes)})?", "replace a cookie", yes)
        show_change(app, update_cookie(app.metadata, cookie, stored).doc(), "replaced", changes=changes)

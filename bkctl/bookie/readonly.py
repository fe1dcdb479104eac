import click

from bkctl.bookie.targets import http_port_option
from bkctl.options import complete_bookie_ids, dry_run_option


@click.command()
@click.argument("bookie_id", metavar="BOOKIE", shell_complete=complete_bookie_ids)
@click.option("--on/--off", "read_only", required=True, help="Make the bookie read-only, or writable again.")
@http_port_option
@dry_run_option
@click.pass_obj
def readonly(app, bookie_id: str, read_only: bool, dry_run: bool):
    """Put a bookie in read-only mode (it refuses new adds, still serves reads), or take it out

    A bookie that is read-only because its disks are full stays read-only until they have room (--off only lifts
    the operator's setting).
    """
    from bkctl.bookie.targets import over_http_if_asked
    from bookie.client.admin_client import admin_client
    from bookie.meta.registration import BookieRegistry

    (bookie,) = over_http_if_asked([BookieRegistry(app.metadata).get(bookie_id)])
    wanted = "read-only" if read_only else "writable"
    if dry_run:
        app.terminal.line(f"bookie/{bookie_id} would be made {wanted} (now {bookie.state}; dry run)")
        return
    with admin_client(bookie, "read-only mode", tls=app.client_tls) as admin:
        state = admin.set_read_only(read_only)
    if read_only or not state.read_only:
        app.terminal.line(f"bookie/{bookie_id} {wanted}")
    else:
        app.terminal.line(f"bookie/{bookie_id} stays read-only: its disks are over the usage threshold")

import click

from bkctl.completers import complete_sandbox_bookies
from bkctl.options import output_option, sandbox_dir_option


@click.command("stop-bookie")
@click.argument("name", metavar="BOOKIE", shell_complete=complete_sandbox_bookies)
@click.option("--kill", is_flag=True, help="SIGKILL: a crash, no clean shutdown.")
@sandbox_dir_option
@output_option
@click.pass_obj
def stop_bookie(app, name: str, kill: bool, state_dir: str | None):
    """Stop one sandbox bookie (by number or bookie id), for fault drills"""
    from bookie.local.sandbox import Sandbox

    sandbox = Sandbox(state_dir)
    try:
        bookie = sandbox.stop_bookie(name, kill=kill)
    finally:
        for note in sandbox.notes:
            app.terminal.warn(note)
    verb = "killed" if kill else "stopped"
    app.terminal.document(
        {"bookieId": bookie.bookie_id, "state": verb}, lambda: app.terminal.line(f"bookie/{bookie.bookie_id} {verb}")
    )


@click.command("start-bookie")
@click.argument("name", metavar="BOOKIE", shell_complete=complete_sandbox_bookies)
@sandbox_dir_option
@output_option
@click.pass_obj
def start_bookie(app, name: str, state_dir: str | None):
    """Start a stopped sandbox bookie again on its disks, and wait until it registers"""
    from bookie.local.sandbox import Sandbox

    sandbox = Sandbox(state_dir)
    try:
        bookie = sandbox.start_bookie(name)
    finally:
        for note in sandbox.notes:
            app.terminal.warn(note)
    app.terminal.document(
        {"bookieId": bookie.bookie_id, "state": "started", "pid": bookie.pid},
        lambda: app.terminal.line(f"bookie/{bookie.bookie_id} started (pid {bookie.pid})"),
    )

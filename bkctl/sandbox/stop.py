import click

from bkctl.options import sandbox_dir_option


@click.command()
@sandbox_dir_option
@click.pass_obj
def stop(app, state_dir: str | None):
    """Stop the sandbox's processes (the data is kept); exit 0 when nothing runs"""
    from bookie.local.sandbox import Sandbox

    sandbox = Sandbox(state_dir)
    if sandbox.stop() is None:  # what was asked holds already: not an error (as `systemctl stop` of a stopped unit)
        app.terminal.line(f"sandbox {sandbox.dir}: nothing running, nothing to do")
    else:
        app.terminal.line(f"sandbox {sandbox.dir} stopped")

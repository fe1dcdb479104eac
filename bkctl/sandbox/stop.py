import click

from bkctl.options import sandbox_dir_option


@click.command()
@sandbox_dir_option
@click.pass_obj
def stop(app, state_dir: str | None):
    """Stop the sandbox's processes (the data is kept)"""
    from bookie.local.sandbox import Sandbox

    sandbox = Sandbox(state_dir)
    sandbox.stop()
    app.terminal.line(f"sandbox {sandbox.dir} stopped")

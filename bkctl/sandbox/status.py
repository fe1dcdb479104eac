import click

from bkctl.options import output_option, sandbox_dir_option


@click.command()
@sandbox_dir_option
@output_option
@click.pass_obj
def status(app, state_dir: str | None):
    """Show the running sandbox: service URI, ZooKeeper, bookies (exit 5 when none is running)"""
    from bkctl.sandbox.render import show
    from bookie.local.sandbox import Sandbox

    show(app, Sandbox(state_dir).status())

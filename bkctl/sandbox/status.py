import click

from bkctl.options import output_option, sandbox_dir_option


@click.command()
@sandbox_dir_option
@output_option
@click.pass_obj
def status(app, state_dir: str | None):
    """Show the running sandbox: service URI, ZooKeeper, bookies (exit 5 when none is running)

    With its ZooKeeper down and bookies still running, the sandbox is shown (ZooKeeper not running, each live bookie
    running) and the exit code is 6.
    """
    from bkctl.sandbox.render import show
    from bookie.errors import ServiceUnavailable
    from bookie.local.sandbox import Sandbox

    sandbox = Sandbox(state_dir)
    doc = sandbox.status()
    show(app, doc)
    if doc["zookeeper"]["pid"] is None:
        raise ServiceUnavailable(
            f"the ZooKeeper of the sandbox in {sandbox.dir} is not running, the rest of it is: "
            "`bkctl sandbox start` starts it"
        )

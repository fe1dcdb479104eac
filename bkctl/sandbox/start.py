import click

from bkctl.options import output_option, sandbox_dir_option


@click.command()
@click.option("--zk-port", type=click.IntRange(1, 65535), help="ZooKeeper's port [default: the last one, or free].")
@click.option("--no-init", is_flag=True, help="Leave ZooKeeper empty: no cluster (for `bkctl cluster init`).")
@sandbox_dir_option
@output_option
@click.pass_obj
def start(app, zk_port: int | None, no_init: bool, state_dir: str | None):
    """Start the sandbox: ZooKeeper on 127.0.0.1, and a cluster in it unless --no-init

    Data survives `sandbox stop`: starting the same directory again brings the same cluster back.
    """
    from bkctl.sandbox.render import show
    from bookie.local.sandbox import Sandbox

    state = Sandbox(state_dir).start(zk_port=zk_port, init=not no_init)
    show(app, state)

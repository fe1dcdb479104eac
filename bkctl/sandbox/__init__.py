import click

from bkctl.sandbox.start import start
from bkctl.sandbox.status import status
from bkctl.sandbox.stop import stop


@click.group()
def sandbox():
    """Run a local cluster (embedded ZooKeeper) for demos, tests and benchmarks

    Commands that need a cluster use the running sandbox when no service URI is given.
    """


sandbox.add_command(start)
sandbox.add_command(stop)
sandbox.add_command(status)

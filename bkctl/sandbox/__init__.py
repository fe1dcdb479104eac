import click

from bkctl.sandbox.bookies import start_bookie, stop_bookie
from bkctl.sandbox.start import start
from bkctl.sandbox.status import status
from bkctl.sandbox.stop import stop


@click.group()
def sandbox():
    """Run a local cluster (embedded ZooKeeper and bookies) for demos, tests and benchmarks

    Commands that need a cluster use the running sandbox when no service URI is given.
    """


sandbox.add_command(start)
sandbox.add_command(stop)
sandbox.add_command(status)
sandbox.add_command(stop_bookie)
sandbox.add_command(start_bookie)

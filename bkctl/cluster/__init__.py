import click

from bkctl.cluster.info import info
from bkctl.cluster.init import init


@click.group()
def cluster():
    """Create and inspect the cluster's metadata"""


cluster.add_command(init)
cluster.add_command(info)

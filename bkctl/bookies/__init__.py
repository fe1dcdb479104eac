import click

from bkctl.bookies.list import list_bookies
from bkctl.bookies.racks import racks


@click.group()
def bookies():
    """List the bookies of the cluster (registered, and missing ones) and edit their racks"""


bookies.add_command(list_bookies)
bookies.add_command(racks)

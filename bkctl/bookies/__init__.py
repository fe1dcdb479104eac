import click

from bkctl.bookies.list import list_bookies


@click.group()
def bookies():
    """List the bookies of the cluster: registered, and missing ones"""


bookies.add_command(list_bookies)

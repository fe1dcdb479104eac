import click

from bkctl.bookies.list import list_bookies


@click.group()
def bookies():
    """List the bookies registered in the cluster"""


bookies.add_command(list_bookies)

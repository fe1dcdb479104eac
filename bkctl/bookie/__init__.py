import click

from bkctl.bookie.info import info
from bkctl.bookie.inspect import inspect
from bkctl.bookie.readonly import readonly
from bkctl.bookie.run import run


@click.group()
def bookie():
    """Run, query and control a bookie"""


bookie.add_command(run)
bookie.add_command(info)
bookie.add_command(readonly)
bookie.add_command(inspect)

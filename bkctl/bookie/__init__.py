import click

from bkctl.bookie.decommission import decommission
from bkctl.bookie.info import info
from bkctl.bookie.inspect import inspect
from bkctl.bookie.readonly import readonly
from bkctl.bookie.recover import recover
from bkctl.bookie.run import run


@click.group()
def bookie():
    """Run, query, control and recover bookies"""


bookie.add_command(run)
bookie.add_command(info)
bookie.add_command(readonly)
bookie.add_command(inspect)
bookie.add_command(recover)
bookie.add_command(decommission)

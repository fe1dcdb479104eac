import click

from bkctl.ledger.copy import copy
from bkctl.ledger.create import create
from bkctl.ledger.delete import delete
from bkctl.ledger.export import export
from bkctl.ledger.list import list_ledgers
from bkctl.ledger.metadata import metadata
from bkctl.ledger.read import read
from bkctl.ledger.recover import recover
from bkctl.ledger.simpletest import simpletest
from bkctl.ledger.update import update


@click.group()
def ledger():
    """Create, read, recover, delete, inspect, export and copy ledgers"""


for command in (create, read, recover, delete, list_ledgers, metadata, simpletest, export, copy, update):
    ledger.add_command(command)

import click

from bkctl.ledger.list import list_ledgers
from bkctl.ledger.metadata import metadata


@click.group()
def ledger():
    """Inspect ledgers"""


ledger.add_command(list_ledgers)
ledger.add_command(metadata)

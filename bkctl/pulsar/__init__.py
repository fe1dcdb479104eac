import click

from bkctl.pulsar.missing import missing
from bkctl.pulsar.orphans import orphans
from bkctl.pulsar.owners import owners
from bkctl.pulsar.usage import usage


@click.group()
def pulsar() -> None:
    """Audit the ledgers of an Apache Pulsar cluster: owners, orphans, missing ledgers, usage"""


for command in (owners, orphans, missing, usage):
    pulsar.add_command(command)

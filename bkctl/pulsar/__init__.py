import click

from bkctl.pulsar.orphans import orphans
from bkctl.pulsar.owners import owners
from bkctl.pulsar.usage import usage


@click.group()
def pulsar() -> None:
    """Audit the ledgers of an Apache Pulsar cluster: owners, orphans, usage"""


for command in (owners, orphans, usage):
    pulsar.add_command(command)

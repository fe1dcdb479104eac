import click

from bkctl.cookie.create import create
from bkctl.cookie.delete import delete
from bkctl.cookie.generate import generate
from bkctl.cookie.get import get
from bkctl.cookie.update import update


@click.group()
def cookie():
    """Read, create, replace, delete and generate bookies' cookies (which cluster and disks a bookie has)"""


for command in (get, create, update, delete, generate):
    cookie.add_command(command)

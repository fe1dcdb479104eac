import click

from bkctl.config.current_context import current_context
from bkctl.config.delete_context import delete_context
from bkctl.config.get_contexts import get_contexts
from bkctl.config.set_context import set_context
from bkctl.config.use_context import use_context


@click.group()
def config():
    """Name clusters as contexts (as kubectl's) and choose the one commands use

    Contexts are kept in $XDG_CONFIG_HOME/bkctl/config.yaml (~/.config/bkctl/config.yaml), private to you (0600).
    The current context is used when no -u, -c or --context names a cluster.
    """


for command in (get_contexts, current_context, use_context, set_context, delete_context):
    config.add_command(command)

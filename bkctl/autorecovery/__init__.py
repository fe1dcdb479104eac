import click

from bkctl.autorecovery.audit import trigger_audit, who_is_auditor
from bkctl.autorecovery.control import disable, enable, lost_bookie_recovery_delay, status
from bkctl.autorecovery.list import list_under_replicated
from bkctl.autorecovery.run import run


@click.group()
def autorecovery():
    """Under-replicated ledgers and the autorecovery that re-replicates them"""


for command in (
    list_under_replicated,
    status,
    enable,
    disable,
    lost_bookie_recovery_delay,
    who_is_auditor,
    trigger_audit,
    run,
):
    autorecovery.add_command(command)

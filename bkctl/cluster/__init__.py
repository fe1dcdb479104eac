import click

from bkctl.cluster.backup import backup
from bkctl.cluster.check import check
from bkctl.cluster.check_impact import check_impact
from bkctl.cluster.format import format_cluster
from bkctl.cluster.info import info
from bkctl.cluster.init import init
from bkctl.cluster.nuke import nuke
from bkctl.cluster.rebalance import rebalance
from bkctl.cluster.repair_placement import repair_placement
from bkctl.cluster.restore import restore
from bkctl.cluster.usage import usage


@click.group()
def cluster():
    """Create, inspect and check the cluster's metadata"""


cluster.add_command(init)
cluster.add_command(info)
cluster.add_command(check)
cluster.add_command(check_impact)
cluster.add_command(repair_placement)
cluster.add_command(usage)
cluster.add_command(backup)
cluster.add_command(rebalance)
cluster.add_command(format_cluster)
cluster.add_command(nuke)
cluster.add_command(restore)

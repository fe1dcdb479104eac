import click

from bkctl.bookies.racks.delete import delete
from bkctl.bookies.racks.get import get
from bkctl.bookies.racks.set import set_rack


@click.group()
def racks():
    """Show and edit the bookies' racks in Pulsar's rack mapping (/bookies)

    The mapping is the znode /bookies beside the ledgers root (/ledgers -> /bookies), in the layout `pulsar-admin
    bookies set-bookie-rack` writes and BookKeeper's rack-aware placement reads through Pulsar's
    ZkBookieRackAffinityMapping. A bookie's rack, for bkctl's writers, recovery and `cluster check` alike, is the
    mapping's, else the one its registration publishes (our bookies' bookieRack setting), else /default-rack.
    """


racks.add_command(get)
racks.add_command(set_rack)
racks.add_command(delete)

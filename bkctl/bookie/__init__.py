import click

from bkctl.bookie.check_db_index import check_db_index
from bkctl.bookie.check_local import check_local
from bkctl.bookie.compaction import compaction
from bkctl.bookie.convert_storage import convert_storage
from bkctl.bookie.decommission import decommission
from bkctl.bookie.expand_storage import expand_storage
from bkctl.bookie.format import format_bookie
from bkctl.bookie.gc import gc
from bkctl.bookie.gc_status import gc_status
from bkctl.bookie.info import info
from bkctl.bookie.init import init_bookie
from bkctl.bookie.inspect import inspect
from bkctl.bookie.list_files import list_files
from bkctl.bookie.metrics import metrics
from bkctl.bookie.readonly import readonly
from bkctl.bookie.rebuild_db_index import rebuild_db_index
from bkctl.bookie.rebuild_index import rebuild_index
from bkctl.bookie.recover import recover
from bkctl.bookie.replace_in_ledgers import replace_in_ledgers
from bkctl.bookie.run import run
from bkctl.bookie.usage import usage


@click.group()
def bookie():
    """Run, query, control and recover bookies"""


bookie.add_command(run)
bookie.add_command(info)
bookie.add_command(readonly)
bookie.add_command(inspect)
bookie.add_command(recover)
bookie.add_command(decommission)
bookie.add_command(gc)
bookie.add_command(gc_status)
bookie.add_command(usage)
bookie.add_command(metrics)
bookie.add_command(compaction)
bookie.add_command(check_db_index)
bookie.add_command(rebuild_db_index)
bookie.add_command(convert_storage)
bookie.add_command(list_files)
bookie.add_command(check_local)
bookie.add_command(rebuild_index)
bookie.add_command(format_bookie)
bookie.add_command(init_bookie)
bookie.add_command(expand_storage)
bookie.add_command(replace_in_ledgers)

import click

from bkctl.bench.bookie import bookie
from bkctl.bench.client import read, write


@click.group()
def bench():
    """Measure throughput and latency (benchmarks; numbers are reported, not asserted)"""


bench.add_command(bookie)
bench.add_command(write)
bench.add_command(read)

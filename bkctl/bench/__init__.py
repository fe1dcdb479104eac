import click

from bkctl.bench.bookie import bookie


@click.group()
def bench():
    """Measure throughput and latency (benchmarks; numbers are reported, not asserted)"""


bench.add_command(bookie)

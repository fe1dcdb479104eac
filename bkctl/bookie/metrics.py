import click

from bkctl.bookie._targets import bookies_argument
from bkctl.options import output_option

HEADERS = ["BOOKIE", "STATE", "ADDS/S", "READS/S", "ADD P99", "JOURNAL Q", "DISK", "DIRS"]


def _rate(value: float | None) -> str | None:
    return None if value is None else f"{value:.0f}" if value >= 10 else f"{value:.1f}"


@click.command()
@bookies_argument
@click.option(
    "--metrics-port",
    type=click.IntRange(1, 65535),
    metavar="PORT",
    help="Scrape /metrics on this port of the bookies (a Java bookie's prometheusStatsHttpPort: "
    "BookKeeper publishes it nowhere).",
)
@click.option(
    "--interval",
    type=click.FloatRange(0.1, 60),
    default=1.0,
    show_default=True,
    metavar="S",
    help="Seconds between the two scrapes that the rates come from.",
)
@output_option
@click.pass_obj
def metrics(app, bookie_ids, all_bookies, metrics_port, interval):
    """Show bookies' health from their /metrics: adds/s, reads/s, p99 add latency, journal queue, disk, state

    ADDS/S and READS/S are the add and read requests answered per second between two scrapes S seconds apart
    (bookkeeper_server_ADD_ENTRY_REQUEST and READ_ENTRY_REQUEST, both outcomes); ADD P99 the bookie's 99th
    percentile of successful add requests over its last rollover window, a minute by default (none before the
    first window closes); JOURNAL Q the records waiting for the journal; DISK the usage of the fullest ledger disk
    and DIRS the writable ledger directories; STATE from bookie_SERVER_STATUS. Any bookie with BookKeeper's metric
    names: ours (prometheusStatsHttpPort, published in its registration), a Java bookie with the Prometheus
    provider on its HTTP admin server (published when httpServerEnabled, or --http-port) or on --metrics-port.
    Exit 6 when a bookie's metrics cannot be reached, 7 when it publishes no address for them.
    """
    from admin.bookie_metrics import health
    from bkctl.bookie._targets import target_bookies
    from bkctl.errors import exit_for_errors

    outcomes = health(target_bookies(app, bookie_ids, all_bookies), interval, metrics_port)
    docs, rows = [], []
    for outcome in outcomes:
        if outcome.error is not None:
            app.terminal.warn(str(outcome.error))
            continue
        h = outcome.result
        docs.append({"bookieId": outcome.bookie_id, **h.doc()})
        rows.append(
            [
                outcome.bookie_id,
                h.state,
                _rate(h.adds_per_sec),
                _rate(h.reads_per_sec),
                None if h.add_p99_ms is None else f"{h.add_p99_ms:g} ms",
                h.journal_queue,
                None if h.ledger_disk_usage is None else f"{h.ledger_disk_usage:.0f}%",
                None if h.ledger_dirs is None else f"{h.writable_dirs}/{h.ledger_dirs}",
            ]
        )
    if docs or not outcomes:  # every bookie failed: its warning is the whole answer
        app.terminal.document(docs, lambda: app.terminal.table(HEADERS, rows))
    exit_for_errors(o.error for o in outcomes)

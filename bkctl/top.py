import click

from bkctl.bookie._targets import http_port_option
from bkctl.options import output_option


@click.command()
@click.option("--once", is_flag=True, help="Print one sample (two scrapes --interval apart) and exit: for scripts.")
@click.option(
    "--interval",
    type=click.FloatRange(0.1, 3600),
    default=2.0,
    show_default=True,
    metavar="S",
    help="Seconds between samples (with --once: between its two scrapes).",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(1, 65535),
    metavar="PORT",
    help="Scrape /metrics on this port of every bookie (a Java bookie's prometheusStatsHttpPort: BookKeeper "
    "publishes it nowhere).",
)
@http_port_option
@output_option
@click.pass_obj
def top(app, once, interval, metrics_port):
    """Watch every registered bookie live: rates, latencies, fsync, in flight, disk, GC, slow ones flagged

    Read from each bookie's /metrics under BookKeeper's metric names, so Java bookies with the Prometheus provider
    show too. ADDS/S, READS/S: add and read requests answered per second between two samples; ADD/READ P50, P99:
    of successful requests, from arrival to answer, over the bookie's last rollover window
    (prometheusStatsLatencyRolloverSeconds, a minute by default; none until one closes); FSYNC P99: of the journal's
    fsyncs (the slowest journal); INFLIGHT: add and read requests in progress; ERR/S: requests answered with an
    error per second, the rejected ones among them; REJ/S: adds and reads rejected per second (ETOOMANYREQUESTS:
    a DbLedgerStorage write cache still full after dbStorage_maxThrottleTimeMs, or a Java bookie's full read
    pool); DISK USED: the fullest ledger directory; DISK FREE: free space, from GET_BOOKIE_INFO; GC: what garbage
    collection finished between two samples (major, minor, gc, or idle). FLAG: SLOW when the bookie's add or read
    p99 is at least 3 times the median of the other bookies' and at least 10 ms; unreachable when its metrics
    cannot be read.

    On a terminal the view refreshes in place: keys n, a, r, l, L, f, i, d sort (again: reverse), q or Ctrl-C
    quits. Without a terminal, or with -o json|yaml, pass --once. Exit 6 when a bookie's metrics cannot be
    reached, 7 when it publishes no address for them (--once; the document still has its row).
    """
    import sys
    import time

    from admin.top import Sampler
    from bkctl.bookie._targets import over_http_if_asked
    from bkctl.errors import exit_for_errors
    from bkctl.terminal import with_iso_times
    from bkctl.top_view import HEADERS, cells, live
    from bookie.errors import InvalidArgument
    from bookie.meta.registration import BookieRegistry

    if not once and app.terminal.output in ("json", "yaml"):
        raise InvalidArgument(f"-o {app.terminal.output} prints one sample: pass --once")
    if not once and not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise InvalidArgument("bkctl top draws a live view on a terminal: pass --once for one sample")
    registry = BookieRegistry(app.metadata)

    def disk_space(bookie_ids):
        import asyncio

        async def ask():
            answers = await asyncio.gather(
                *(app.client.core.bookie_info(b, 5.0) for b in bookie_ids), return_exceptions=True
            )
            # one that does not answer shows no free space; its metrics say whether it is reachable
            return {
                b: a.free_disk_space
                for b, a in zip(bookie_ids, answers, strict=True)
                if not isinstance(a, BaseException)
            }

        return app.client.run(ask()) if bookie_ids else {}

    # the registry is read at every sample: a bookie that registers appears, one that goes away leaves
    sampler = Sampler(lambda: over_http_if_asked(registry.list(True, True)), disk_space, metrics_port)
    if not once:
        live(sampler, interval)
        return
    sampler.sample()
    time.sleep(interval)
    started = time.time()
    rows = sampler.sample()
    doc = {"timestamp": int(started * 1000), "intervalSeconds": interval, "bookies": [r.doc() for r in rows]}

    def table():
        app.terminal.table(HEADERS, [cells(r) for r in rows], "no bookies registered")
        for row in rows:
            for reason in row.slow:
                app.terminal.note(f"SLOW {row.bookie_id}: {reason}")

    app.terminal.document(with_iso_times(doc, "timestamp"), table)
    for error in sampler.errors.values():
        app.terminal.warn(str(error))
    exit_for_errors(sampler.errors.values())

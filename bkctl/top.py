import click

from bkctl.bookie._targets import http_port_option
from bkctl.options import output_option

HEADERS = [
    "BOOKIE",
    "STATE",
    "ADDS/S",
    "READS/S",
    "ADD P50",
    "ADD P99",
    "READ P50",
    "READ P99",
    "FSYNC P99",
    "INFLIGHT",
    "ERR/S",
    "DISK USED",
    "DISK FREE",
    "GC",
    "FLAG",
]
# key -> (BookieRow attribute, what the footer calls it); a second press reverses the order
SORT_KEYS = {
    "n": ("bookie_id", "name"),
    "a": ("adds_per_sec", "adds/s"),
    "r": ("reads_per_sec", "reads/s"),
    "l": ("add_p99_ms", "add p99"),
    "L": ("read_p99_ms", "read p99"),
    "f": ("fsync_p99_ms", "fsync p99"),
    "i": ("in_flight", "in flight"),
    "d": ("disk_used_percent", "disk used"),
}
STATES = {"writable": "rw", "readonly": "ro"}


def _ms(value):
    return None if value is None else f"{value:.1f}ms" if value < 100 else f"{value:.0f}ms"


def _rate(value):
    return None if value is None else f"{value:.0f}" if value >= 10 else f"{value:.1f}"


def cells(row) -> list:
    """A bookie's row of the table (None: the bookie does not say)."""
    from bkctl.terminal import format_bytes

    flag = "SLOW" if row.slow else "unreachable" if row.error else None
    return [
        row.bookie_id,
        STATES.get(row.state, row.state),
        _rate(row.adds_per_sec),
        _rate(row.reads_per_sec),
        _ms(row.add_p50_ms),
        _ms(row.add_p99_ms),
        _ms(row.read_p50_ms),
        _ms(row.read_p99_ms),
        _ms(row.fsync_p99_ms),
        row.in_flight,
        _rate(row.errors_per_sec),
        None if row.disk_used_percent is None else f"{row.disk_used_percent:.0f}%",
        None if row.disk_free_bytes is None else format_bytes(row.disk_free_bytes),
        row.gc,
        flag,
    ]


def ordered(rows: list, key: str, reverse: bool) -> list:
    """By name ascending, any number biggest first (``reverse`` flips either); a bookie without the value last."""
    attribute = SORT_KEYS[key][0]
    present = [r for r in rows if getattr(r, attribute) is not None]
    absent = [r for r in rows if getattr(r, attribute) is None]
    descending = (attribute != "bookie_id") != reverse
    return sorted(present, key=lambda r: getattr(r, attribute), reverse=descending) + absent


def render(rows: list, key: str = "n", reverse: bool = False, interval: float = 2.0):
    """The live view: the table, the slow and unreachable bookies' reasons, and the keys."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from admin.top import SLOW_FACTOR, SLOW_FLOOR_MS
    from bkctl.terminal import NONE

    table = Table(box=None, header_style="bold", pad_edge=False)
    for header in HEADERS:
        table.add_column(header, justify="left" if header in ("BOOKIE", "STATE", "GC", "FLAG") else "right")
    notes = []
    for row in ordered(rows, key, reverse):
        style = "bold red" if row.slow else "dim" if row.error else None
        table.add_row(*(NONE if c is None else str(c) for c in cells(row)), style=style)
        notes += [f"SLOW {row.bookie_id}: {reason}" for reason in row.slow]
        if row.error:
            notes.append(f"{row.bookie_id}: {row.error}")
    keys = "  ".join(f"{k} {name}" for k, (_, name) in SORT_KEYS.items())
    order = f"{SORT_KEYS[key][1]}{' reversed' if reverse else ''}"
    footer = [
        f"sort by: {keys} (again: reverse)   q quit",
        f"sorted by {order}, every {interval:g} s; SLOW: p99 at least {SLOW_FACTOR:g}x the others' median and "
        f"{SLOW_FLOOR_MS:g} ms",
    ]
    return Group(table, *(Text(note) for note in notes), *(Text(line, style="dim") for line in footer))


def live(sampler, interval: float) -> None:
    """Redraw every ``interval`` seconds until q or Ctrl-C, reading keys without waiting for Enter."""
    import os
    import select
    import sys
    import termios
    import time
    import tty

    from rich.console import Console
    from rich.live import Live

    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    key, reverse = "n", False
    try:
        tty.setcbreak(fd)  # keys one by one, unechoed; Ctrl-C still interrupts
        with Live(console=Console(), auto_refresh=False) as view:
            while True:
                rows = sampler.sample()
                view.update(render(rows, key, reverse, interval), refresh=True)
                deadline = time.monotonic() + interval
                while (left := deadline - time.monotonic()) > 0:
                    if not select.select([fd], [], [], left)[0]:
                        continue
                    pressed = os.read(fd, 1).decode(errors="replace")
                    if pressed in ("q", "Q"):
                        return
                    if pressed in SORT_KEYS:
                        key, reverse = pressed, (not reverse if pressed == key else False)
                        view.update(render(rows, key, reverse, interval), refresh=True)
    except KeyboardInterrupt:
        return
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


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
    error per second (a Java bookie's rejected ones among them); DISK USED: the fullest ledger directory; DISK FREE:
    free space, from GET_BOOKIE_INFO; GC: what garbage collection finished between two samples (major, minor, gc,
    or idle). FLAG: SLOW when the bookie's add or read p99 is at least 3 times the median of the other bookies'
    and at least 10 ms; unreachable when its metrics cannot be read.

    On a terminal the view refreshes in place: keys n, a, r, l, L, f, i, d sort (again: reverse), q or Ctrl-C
    quits. Without a terminal, or with -o json|yaml, pass --once. Exit 6 when a bookie's metrics cannot be
    reached, 7 when it publishes no address for them (--once; the document still has its row).
    """
    import sys
    import time

    from admin.top import Sampler
    from bkctl.bookie._targets import over_http_if_asked
    from bkctl.errors import exit_for_errors
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
            return {
                b: (a.total_disk_capacity, a.free_disk_space) if not isinstance(a, BaseException) else a
                for b, a in zip(bookie_ids, answers, strict=True)
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

    from bkctl.terminal import with_iso_times

    app.terminal.document(with_iso_times(doc, "timestamp"), table)
    for error in sampler.errors.values():
        app.terminal.warn(str(error))
    exit_for_errors(sampler.errors.values())

"""``bkctl top``'s view: a bookie's cells, their order, and the live table redrawn in place with the keys read one by
one (rich Live, the terminal in cbreak mode)."""

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
    "REJ/S",
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
        _rate(row.rejected_per_sec),
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

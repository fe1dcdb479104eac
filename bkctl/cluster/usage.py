import click

from bkctl.options import output_option
from bkctl.pulsar.common import min_age_option, pulsar_zk_option

BAR_WIDTH = 40
# the bar's parts, left to right: (what, colour, character)
PARTS = (("expected", "green", "█"), ("reclaimable", "yellow", "▓"), ("held, not reclaimable", "red", "░"))


def bar_parts(used: int, expected: int, reclaimable: int, scale: int, width: int = BAR_WIDTH) -> list[int]:
    """Cells of a bookie's bar for PARTS: what it should hold, what compaction would free, and the rest of what it
    holds; ``scale`` bytes fill ``width`` cells. Each part that holds bytes gets at least one cell."""
    expected = min(expected, used)
    reclaimable = min(reclaimable, used - expected)
    sizes = [expected, reclaimable, used - expected - reclaimable]
    cells = [round(width * size / scale) if scale else 0 for size in sizes]
    cells = [max(c, 1) if size > 0 else 0 for c, size in zip(cells, sizes, strict=True)]
    cells[cells.index(max(cells))] -= max(0, sum(cells) - width)  # the slivers' cells come out of the largest part
    return cells


def _chart(app, bookies) -> None:
    """A bar per bookie, scaled to the fullest."""
    from bkctl.terminal import format_bytes

    scale = max((b.explained.entry_log_bytes for b in bookies), default=0)
    rows = [
        (
            b.explained.bookie_id,
            bar_parts(b.explained.entry_log_bytes, b.explained.expected_bytes, b.explained.reclaim.reclaimed, scale),
            format_bytes(b.explained.entry_log_bytes),
        )
        for b in bookies
    ]
    app.terminal.bars(list(PARTS), rows, BAR_WIDTH)


@click.command("usage")
@click.option(
    "--threshold",
    type=click.FloatRange(0, 1),
    metavar="X",
    help="Reclaimable bytes at this compaction usage threshold [default: each bookie's major threshold].",
)
@click.option(
    "--logs",
    "top",
    type=click.IntRange(0),
    default=0,
    show_default=True,
    help="With -o json, each bookie's N largest logs.",
)
@click.option(
    "--pulsar/--no-pulsar", default=None, help="Read Pulsar's metadata for its orphans [default: when found]."
)
@pulsar_zk_option
@min_age_option
@output_option
@click.pass_obj
def usage(app, threshold, top, pulsar, pulsar_zk, min_age):
    """Compare the bookies' disk space: held, expected by the metadata, the gap and what compaction would reclaim

    One line per running bookie of ours, largest gap first, then the totals and a bar per bookie (expected /
    reclaimable / the rest of what it holds). The gap (held less expected) is split by cause: ledgers deleted but
    not yet collected, in no metadata, replicas no longer owned, and the rest (log headers and maps, estimates).
    With Pulsar's metadata (found at the parent of the ledgers root, or --pulsar-zk) the bytes of ledgers Pulsar
    no longer references (what `pulsar orphans --delete` frees) are shown too. -o json: {bookies: [one `bookie
    usage` document each, with state, gapByCause and pulsarOrphanBytes], totals, unreachable}. Exit 6 when a
    bookie does not answer, 7 when one does not report its storage (a Java bookie: `bookie usage --offline` on its
    host); the others are still shown.
    """
    import time

    from admin.bookie_admin import STORAGE_USAGE_TIMEOUT, fan_out
    from admin.usage.cluster import BookieUsage, by_gap, totals
    from admin.usage.explain import explain
    from admin.usage.sources import ledgers_naming
    from bkctl.bookie._targets import target_bookies
    from bkctl.bookie.usage import with_iso_reasons
    from bkctl.errors import exit_for_errors
    from bkctl.terminal import format_bytes

    registered = target_bookies(app, (), True)
    outcomes = fan_out(
        registered, "storage usage", lambda admin: admin.storage_usage(), STORAGE_USAGE_TIMEOUT, tls=app.client_tls
    )
    for outcome in outcomes:
        if outcome.error is not None:
            app.terminal.warn(str(outcome.error))
    found = [o for o in outcomes if o.error is None]
    if not found:
        exit_for_errors(o.error for o in outcomes)
    held = {lid for o in found for log in o.result.logs for lid in log.ledgers} | {
        lid for o in found for lid in o.result.local_ledgers
    }
    metadata = ledgers_naming(app.metadata, [o.bookie_id for o in found], held, lambda e: app.terminal.warn(str(e)))
    orphans = _pulsar_orphans(app, pulsar, pulsar_zk, min_age)
    now = time.time()
    bookies = by_gap(
        BookieUsage(
            explain(o.result, metadata, o.bookie_id, now, threshold),
            o.bookie.state,
            orphans,
        )
        for o in found
    )
    summary = totals(bookies)
    doc = {
        "bookies": [with_iso_reasons(b.doc(top)) for b in bookies],
        "totals": summary,
        "unreachable": [{"bookieId": o.bookie_id, "error": str(o.error)} for o in outcomes if o.error is not None],
    }

    def table():
        def size(n):
            return format_bytes(n) if n is not None else None

        rows = []
        for b in bookies:
            e = b.explained
            gap = b.gap_by_cause
            rows.append(
                [
                    e.bookie_id,
                    b.state,
                    size(e.entry_log_bytes),
                    size(e.expected_bytes),
                    size(e.entry_log_bytes - e.expected_bytes),
                    size(e.reclaim.reclaimed),
                    ", ".join(f"{c} {format_bytes(n)}" for c, n in gap.items() if n > 0) or None,
                    size(b.orphan_bytes),
                ]
            )
        rows.append(
            [
                "total",
                "",
                size(summary["entryLogBytes"]),
                size(summary["expectedBytes"]),
                size(summary["gapBytes"]),
                size(summary["reclaimableBytes"]),
                ", ".join(f"{c} {format_bytes(n)}" for c, n in summary["gapByCause"].items() if n > 0) or None,
                size(summary["pulsarOrphanBytes"]),
            ]
        )
        app.terminal.table(
            ["BOOKIE", "STATE", "HELD", "EXPECTED", "GAP", "RECLAIMABLE", "GAP BY CAUSE", "PULSAR ORPHANS"], rows
        )
        app.terminal.line()
        _chart(app, bookies)

    app.terminal.document(doc, table)
    exit_for_errors(o.error for o in outcomes)


def _pulsar_orphans(app, pulsar: bool | None, pulsar_zk: str | None, min_age: float) -> set[int] | None:
    """The ledgers Pulsar no longer references (as `pulsar orphans`), or None when Pulsar's metadata is not read:
    --no-pulsar, or no managed ledgers where it would be (unless --pulsar or --pulsar-zk asked for it)."""
    from bkctl.pulsar.common import open_audit

    if pulsar is False:
        return None
    if pulsar is None and pulsar_zk is None:
        parent = app.metadata.root.rsplit("/", 1)[0]
        if not app.metadata.exists(f"{parent}/managed-ledgers"):
            return None
    with app.terminal.phases() as progress:
        report = open_audit(app, pulsar_zk, min_age).run(referenced_too=False, progress=progress)
    for problem in report.problems:
        app.terminal.warn(problem)
    return {verdict.ledger.ledger_id for verdict in report.orphans}

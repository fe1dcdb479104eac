import click

from bkctl.options import dry_run_option, output_option, yes_option
from bkctl.terminal import format_bytes

BAR_WIDTH = 40
PARTS = [("now", "cyan", "█"), ("after", "green", "▒")]


@click.command()
@click.option(
    "--target",
    type=click.FloatRange(0, min_open=True),
    default=10.0,
    show_default=True,
    metavar="PCT",
    help="Spread to reach: the fullest and the emptiest bookie's utilisation differ by at most PCT percent of the "
    "cluster's.",
)
@click.option(
    "--rate", type=click.FloatRange(0, min_open=True), metavar="MB/S", help="Limit the copy rate (all moves)."
)
@click.option("--max-moves", type=click.IntRange(1), metavar="N", help="Plan at most N segment moves.")
@yes_option
@dry_run_option
@output_option
@click.pass_obj
def rebalance(app, target, rate, max_moves, yes, dry_run):
    """Even out the bytes the bookies store, relative to their capacity, by moving replicas between live bookies

    Plans moves from the fullest writable bookie to the emptiest (the largest replica that fits the gap first,
    never two replicas of a segment on one bookie, never a weaker rack placement) until the spread is within
    --target, then makes them while the bookies serve: each replica copied with recovery adds, read back, and
    swapped into the ledger's metadata; the source's copy is freed by its garbage collection. Stored bytes are
    each bookie's live bytes (`cluster usage`); a bookie that reports none (a Java bookie) is estimated from the
    metadata, and said so. One data movement (rebalance, drain, placement repair) runs on a cluster at a time. A
    rerun plans again from the metadata as it is, so an interrupted run resumes. --dry-run shows the moves and each
    bookie's bytes now and after. -o json: one document (docs/rebalance.md). Exit 0 when within the target
    afterwards, 3 when it cannot be reached (why is said).
    """
    from admin.rebalance.measure import document, failures, measure, plan_of, why
    from admin.rebalance.plan import spread

    if dry_run:
        cluster = measure(app.metadata, app.client_tls, app.terminal.warn)
        result = plan_of(cluster, target, max_moves)
        app.terminal.document(document(result, cluster, True), lambda: _show_plan(app, result, cluster))
        _exit_unless_within(result.within_target, why(result, cluster))
        return

    from bookie.client.move import MovementLock

    with MovementLock(app.metadata, "cluster rebalance", app.terminal.note):
        cluster = measure(app.metadata, app.client_tls, app.terminal.warn)
        result = plan_of(cluster, target, max_moves)
        if result.moves:
            app.terminal.confirm(
                f"Move {len(result.moves)} replicas ({format_bytes(result.bytes)}) between "
                f"{len(cluster.inputs.bookies)} bookies?",
                "rebalance",
                yes,
            )
            report = _run(app, result, rate)
            error = failures(report)
        else:
            report, error = None, None
        after = measure(app.metadata, app.client_tls)  # what it warned of, it said before the moves
    stored = after.stored()
    measured = spread(stored, {b.bookie_id: max(b.capacity, 1) for b in after.inputs.bookies})
    doc = document(result, cluster, False)
    doc["spread"]["measured"] = round(measured, 2)
    doc["withinTarget"] = measured <= target
    for bookie in doc["bookies"]:
        bookie["measuredBytes"] = stored.get(bookie["bookieId"])
    doc["run"] = report.doc() if report is not None else None

    def table():
        _show_plan(app, result, cluster, stored)
        if report is not None:
            app.terminal.line(
                f"moved {len(report.moved)} replicas, {format_bytes(report.bytes)} in {report.seconds:.1f} s; "
                f"spread {measured:.1f}% (target {target:g}%)"
            )

    app.terminal.document(doc, table)
    if error is not None:
        raise error
    busy = ", ".join(map(str, sorted(report.busy))) if report is not None else ""
    _exit_unless_within(
        measured <= target,
        why(result, cluster)
        or (busy and f"ledgers {busy} were being re-replicated by someone else: run it again later")
        or f"the spread measured afterwards is {measured:.1f}%, the plan's {result.spreads[1]:.1f}% "
        "(the bookies changed meanwhile): run it again to plan from what they hold now",
    )


def _run(app, result, rate):
    """The plan's moves, with progress on a terminal; Ctrl-C says what was done and what is left."""
    from bkctl.move_progress import move_progress
    from bookie.client.move import Move, ReplicaMover
    from bookie.daemon import interruption

    moves = [Move(m.ledger_id, m.first_entry_id, m.source, m.target) for m in result.moves]
    counted = {"moves": 0, "bytes": 0}  # what the bar counted, for an interruption's message
    mover = ReplicaMover(app.client.core, rate * 1e6 if rate else None)
    try:
        with move_progress(app, "moving", len(moves), result.bytes) as (mover.progress, counted):
            return app.client.run(mover.run(moves))
    except KeyboardInterrupt as exc:
        mover.settled.wait(10)  # the segment being copied keeps what the target acknowledged
        done, part = len(mover.report.moved), len(mover.report.kept_until)
        in_part = f", {part} in part (split where the copy stopped)" if part else ""
        raise type(exc)(
            f"{interruption(exc)}: {done} of {len(moves)} moves done{in_part}, "
            f"{format_bytes(counted['bytes'])} copied; {len(moves) - done} left: run it again to go on from there"
        ) from None


def _show_plan(app, result, cluster, measured=None) -> None:
    """The moves, then a line per bookie with its bytes now and after, and a bar chart of both."""
    app.terminal.table(
        ["LEDGER", "SEGMENT", "FROM", "TO", "BYTES"],
        [[m.ledger_id, m.first_entry_id, m.source, m.target, format_bytes(m.bytes)] for m in result.moves],
        empty="no move needed" if result.within_target else "no move helps",
    )
    app.terminal.line()
    inputs = cluster.inputs
    mean = sum(result.after.values()) / max(sum(result.capacity.values()), 1)
    rows = []
    for b in sorted(inputs.bookies, key=lambda b: b.bookie_id):
        after = result.after[b.bookie_id]
        row = [b.bookie_id, format_bytes(b.stored), format_bytes(after)]
        if measured is not None:
            row.append(format_bytes(measured[b.bookie_id]) if b.bookie_id in measured else None)
        share = f"{100 * after / result.capacity[b.bookie_id] / mean:.0f}%" if mean else None
        rows.append([*row, share, "estimated" if b.bookie_id in inputs.estimated else None])
    # SHARE: the bookie's utilisation after, in percent of the cluster's (100%: the mean)
    headers = ["BOOKIE", "NOW", "AFTER", *(["MEASURED"] if measured is not None else []), "SHARE", "NOTE"]
    app.terminal.table(headers, rows)
    app.terminal.line()
    scale = max([*result.before.values(), *result.after.values(), 1])
    bars = []
    for b in sorted(result.before):
        now, after = result.before[b], result.after[b]
        bars.append((f"{b} now", [round(BAR_WIDTH * now / scale), 0], format_bytes(now)))
        bars.append((f"{b} after", [0, round(BAR_WIDTH * after / scale)], format_bytes(after)))
    app.terminal.bars(PARTS, bars, BAR_WIDTH)
    app.terminal.line(
        f"spread {result.spreads[0]:.1f}% now, {result.spreads[1]:.1f}% after {len(result.moves)} moves "
        f"({format_bytes(result.bytes)}); target {result.target:g}%"
    )
    for bookie in cluster.read_only:
        app.terminal.note(f"{bookie} is read-only: left as it is")


def _exit_unless_within(within: bool, reason: str) -> None:
    if not within:
        from bkctl.errors import CheckFailed

        raise CheckFailed(f"the target is not reachable: {reason}")

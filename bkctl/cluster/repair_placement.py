import click

from bkctl.options import dry_run_option, output_option, yes_option


@click.command("repair-placement")
@click.argument("ledger_ids", metavar="[LEDGER]...", nargs=-1, type=click.IntRange(0))
@click.option(
    "--rate",
    type=click.FloatRange(0, min_open=True),
    metavar="MB/S",
    help="Copy at most this many MB (10^6 bytes) per second over all moves [default: unlimited].",
)
@dry_run_option
@yes_option
@output_option
@click.pass_obj
def repair_placement(app, ledger_ids, rate, dry_run, yes):
    """Move replicas so that every segment failing the placement check adheres to it (BP-54's repair)

    Plans from the metadata, for every ledger (or the LEDGERs given): each segment that `cluster check --placement`
    finds FAIL (a write quorum on fewer racks than the policy needs) and that can move (the ledger is closed, or
    the segment is not its last) gets the fewest replica moves that make every write quorum span enough racks,
    onto writable bookies (the emptiest of a rack first). Racks are those `bookies racks get` shows. Each move
    copies the replica to its target, verifies it there, then swaps the target in by a compare-and-set of the
    ledger's metadata; the source keeps its copy until its garbage collection. Runs under the cluster's
    data-movement lock (one drain, rebalance or repair at a time). Segments that cannot be repaired (too few racks
    or bookies; an open ledger's last segment) are listed with why. Interrupted, run it again: it plans afresh.
    Exit 0 when `cluster check` would find no placement failure afterwards, 1 when a move failed, 3 otherwise (also
    with --dry-run: the plan would not make it clean). JSON: one document at the end (docs/placement.md).
    """
    from admin.repair_placement import plan_repairs
    from bkctl.errors import ExitCode
    from bkctl.move_progress import move_progress
    from bkctl.terminal import format_bytes
    from bookie.client.move import MovementLock, ReplicaMover

    core = app.client.core
    wanted = list(ledger_ids) or None

    def plan():
        return plan_repairs(core.ledgers, core.registry.list(True, True), wanted)

    def show(doc, planned, report=None):
        def text():
            app.terminal.fields(
                [
                    ("Checked ledgers", planned.checked_ledgers),
                    ("Failing segments", planned.failing_segments),
                    ("Moves", f"{len(planned.moves)} ({format_bytes(planned.bytes)})"),
                ]
            )
            if planned.moves:
                app.terminal.table(
                    ["LEDGER", "SEGMENT", "FROM", "TO", "RACKS", "BYTES"],
                    [
                        [
                            m.move.ledger_id,
                            m.move.first_entry_id,
                            m.move.source,
                            m.move.target,
                            f"{m.source_rack} -> {m.target_rack}",
                            format_bytes(m.bytes),
                        ]
                        for m in planned.moves
                    ],
                )
            if planned.unrepairable:
                app.terminal.line("cannot be repaired:")
                app.terminal.table(
                    ["LEDGER", "SEGMENT", "BOOKIES", "WHY"],
                    [[u.ledger_id, u.segment, list(u.bookies), u.reason] for u in planned.unrepairable],
                )
            if report is not None:
                app.terminal.line(
                    f"moved {len(report.moved)} replicas, {format_bytes(report.bytes)} in {report.seconds:.1f} s"
                )
                for ledger_id, why in sorted(report.failed.items()):
                    app.terminal.line(f"ledger/{ledger_id} failed: {why}")
                if report.busy:
                    app.terminal.line(f"busy (re-replicated by someone else; run again): {report.busy}")
            elif not planned.failing_segments:
                app.terminal.line("no segment fails placement")

        app.terminal.document(doc, text)

    if dry_run:
        planned = plan()
        show({**planned.doc(), "dryRun": True, "clean": planned.check_clean_after}, planned)
        if not planned.check_clean_after:
            raise click.exceptions.Exit(ExitCode.PROBLEMS)
        return
    with MovementLock(core.store, "repair-placement", app.terminal.note):
        planned = plan()
        report = None
        if planned.moves:
            app.terminal.confirm(
                f"Move {len(planned.moves)} replicas ({format_bytes(planned.bytes)}) to repair placement?",
                "move replicas",
                yes,
            )
            with move_progress(app, "repairing placement", len(planned.moves), planned.bytes) as (progress, done):
                mover = ReplicaMover(core, rate * 1e6 if rate else None, progress)
                try:
                    report = app.client.run(mover.run([m.move for m in planned.moves]))
                except KeyboardInterrupt:
                    app.terminal.note(
                        f"interrupted after {done['moves']} of {len(planned.moves)} moves "
                        f"({format_bytes(done['bytes'])} copied); run it again to go on (it plans afresh)"
                    )
                    raise
        after = plan() if report is not None else planned
    clean = after.check_clean_after and not after.moves
    doc = {
        **planned.doc(),
        "dryRun": False,
        "clean": clean,
        "report": report.doc() if report is not None else None,
        "remaining": after.doc(),
    }
    show(doc, planned, report)
    if report is not None and report.failed:  # as drain and rebalance: a failed move is exit 1
        raise click.exceptions.Exit(ExitCode.FAILED)
    if not clean:
        raise click.exceptions.Exit(ExitCode.PROBLEMS)

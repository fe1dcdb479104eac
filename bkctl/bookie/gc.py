import click

from bkctl.bookie._targets import bookies_argument
from bkctl.options import dry_run_option, output_option, wait_options

HEADERS = ["BOOKIE", "KIND", "LEDGERS", "LOGS", "COMPACTED", "RECLAIMED", "DURATION"]


@click.command()
@bookies_argument
@click.option("--major", is_flag=True, help="Force a major compaction (logs under majorCompactionThreshold).")
@click.option("--minor", is_flag=True, help="Force a minor compaction (logs under minorCompactionThreshold).")
@wait_options(many=True)
@dry_run_option
@output_option
@click.pass_obj
def gc(app, bookie_ids, all_bookies, major, minor, wait, timeout, dry_run):
    """Run garbage collection on bookies now, with a major or minor compaction if asked

    Deleted ledgers are forgotten and entry logs left without live entries are removed; --major or --minor also
    compacts the logs under that kind's usage threshold, unless the kind is suspended or disabled on the bookie.
    A forced run goes ahead on a bookie that is read-only because its disks are full. With --wait, the result
    table lists per bookie: the compaction kind, ledgers deleted, logs removed, logs compacted, bytes reclaimed
    and the duration (a bookie reached over BookKeeper's HTTP admin API says only that its run ended). Exit 1 when
    a run failed or --timeout passed, 6 when a bookie does not answer, 7 when it publishes no admin service.
    """
    from admin.bookie_admin import fan_out, wait_for_gc
    from bkctl.bookie._targets import target_bookies
    from bkctl.errors import exit_for_errors
    from bkctl.terminal import format_bytes, with_iso_times
    from bookie.errors import BKError

    bookies = target_bookies(app, bookie_ids, all_bookies)
    kind = " and ".join(k for k, asked in (("major", major), ("minor", minor)) if asked) or "no"
    if dry_run:
        app.terminal.outcomes(
            [{"bookieId": b.bookie_id, "major": major, "minor": minor, "dryRun": True} for b in bookies],
            lambda doc: doc,
            lambda doc: f"bookie/{doc['bookieId']} would run gc with {kind} compaction (dry run)",
        )
        return
    triggered = fan_out(bookies, "gc", lambda admin: admin.trigger_gc(major, minor), tls=app.client_tls)
    for outcome in triggered:
        if outcome.error is not None:
            app.terminal.warn(str(outcome.error))
        elif not outcome.result.started:
            app.terminal.warn(
                f"bookie/{outcome.bookie_id}: a forced gc was already pending or running; that run is the one reported"
            )
    started = [o for o in triggered if o.error is None]
    if not wait:
        docs = [{"bookieId": o.bookie_id, "runId": o.result.run_id, "started": o.result.started} for o in started]
        app.terminal.document(
            docs,
            lambda: [
                app.terminal.line(
                    f"bookie/{d['bookieId']} gc {'already running' if d['started'] is False else 'started'}"
                    + (f" (run {d['runId']})" if d["runId"] is not None else "")
                )
                for d in docs
            ],
        )
        exit_for_errors(o.error for o in triggered)
        return

    with app.terminal.progress("garbage collection", total=len(started), unit="bookies") as advance:
        finished = wait_for_gc(started, timeout, advance, tls=app.client_tls)
    docs = [
        {
            "bookieId": o.bookie_id,
            **(with_iso_times(o.result.doc(), "startTime") if o.error is None else {"error": str(o.error)}),
        }
        for o in finished
    ]
    rows = [
        [
            d["bookieId"],
            d.get("kind") or "-",
            d.get("ledgersDeleted"),
            d.get("logsDeleted"),
            d.get("logsCompacted"),
            format_bytes(d["bytesReclaimed"]) if d.get("bytesReclaimed") is not None else None,
            f"{d['durationMs'] / 1000:.1f} s" if d.get("durationMs") is not None else None,
        ]
        for d in docs
    ]
    app.terminal.document(docs, lambda: app.terminal.table(HEADERS, rows))
    for doc in docs:
        if doc.get("error"):
            app.terminal.error(f"bookie/{doc['bookieId']}: {doc['error']}")
    failed_runs = [BKError(o.result.error) for o in finished if o.error is None and o.result.error]
    exit_for_errors([o.error for o in triggered] + [o.error for o in finished] + failed_runs)

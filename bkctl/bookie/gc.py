import click

from bkctl.bookie.targets import bookies_argument
from bkctl.options import dry_run_option, output_option

HEADERS = ["BOOKIE", "KIND", "LEDGERS", "LOGS", "COMPACTED", "RECLAIMED", "DURATION"]


@click.command()
@bookies_argument
@click.option("--major", is_flag=True, help="Force a major compaction (logs under majorCompactionThreshold).")
@click.option("--minor", is_flag=True, help="Force a minor compaction (logs under minorCompactionThreshold).")
@click.option("--wait", is_flag=True, help="Wait for the runs to finish and show what they did.")
@click.option("--timeout", type=click.FloatRange(min=0), default=3600, show_default=True, metavar="S",
              help="With --wait: give up after S seconds (exit 1; the runs go on).")
@dry_run_option
@output_option
@click.pass_obj
def gc(app, bookie_ids, all_bookies, major, minor, wait, timeout, dry_run):
    """Run garbage collection on bookies now, with a major or minor compaction if asked

    Deleted ledgers are forgotten and entry logs left without live entries are removed; --major or --minor also
    compacts the logs under that kind's usage threshold, unless the kind is suspended or disabled on the bookie.
    A forced run goes ahead on a bookie that is read-only because its disks are full. With --wait, the result
    table lists per bookie: the compaction kind, ledgers deleted, logs removed, logs compacted, bytes reclaimed
    and the duration. Exit 1 when a run failed or --timeout passed, 6 when a bookie does not answer.
    """
    import time

    from bkctl.bookie.targets import admin_call, fields_doc, target_bookies
    from bkctl.errors import ExitCode
    from bkctl.terminal import format_bytes
    from bookie._proto import bookie_admin_pb2 as pb
    from bookie.errors import BKError

    bookies = target_bookies(app, bookie_ids, all_bookies)
    kind = " and ".join(k for k, asked in (("major", major), ("minor", minor)) if asked) or "no"
    if dry_run:
        for bookie in bookies:
            app.terminal.line(f"bookie/{bookie.bookie_id} would run gc with {kind} compaction (dry run)")
        return
    runs, failed = {}, False
    for bookie in bookies:
        try:
            answer = admin_call(bookie, "TriggerGc", pb.TriggerGcRequest(forceMajor=major, forceMinor=minor), "gc")
        except BKError as exc:
            app.terminal.warn(str(exc))
            failed = True
            continue
        runs[bookie.bookie_id] = (bookie, answer.runId, answer.started)
        if not answer.started:
            app.terminal.warn(f"bookie/{bookie.bookie_id}: a forced gc was already pending or running; "
                              "that run is the one reported")
    if not wait:
        docs = [{"bookieId": b, "runId": run_id, "started": started} for b, (_, run_id, started) in runs.items()]
        app.terminal.document(docs, lambda: [app.terminal.line(
            f"bookie/{d['bookieId']} gc {'started' if d['started'] else 'already running'} (run {d['runId']})")
            for d in docs])
        if failed:
            raise click.exceptions.Exit(ExitCode.UNREACHABLE)
        return

    results: dict[str, object] = {}
    deadline = time.monotonic() + timeout
    with app.terminal.progress("garbage collection", total=len(runs), unit="bookies") as advance:
        while len(results) < len(runs) and time.monotonic() < deadline:
            for bookie_id, (bookie, run_id, _) in runs.items():
                if bookie_id in results:
                    continue
                try:
                    status = admin_call(bookie, "GetGcStatus", pb.GcStatusRequest(), "gc status")
                except BKError as exc:
                    app.terminal.warn(str(exc))
                    results[bookie_id] = None
                    advance()
                    continue
                if status.lastRun.runId >= run_id:
                    results[bookie_id] = status.lastRun
                    advance()
            if len(results) < len(runs):
                time.sleep(0.3)
    docs = []
    for bookie_id in runs:
        run = results.get(bookie_id)
        doc = {"bookieId": bookie_id, **(fields_doc(run) if run is not None else {})}
        if bookie_id not in results:
            doc["error"] = f"not finished after {timeout:g} s"
        elif run is None:
            doc["error"] = "bookie stopped answering"
        docs.append(doc)
    rows = [[d["bookieId"], d.get("kind") or "-", d.get("ledgersDeleted"), d.get("logsDeleted"),
             d.get("logsCompacted"), format_bytes(d["bytesReclaimed"]) if "bytesReclaimed" in d else None,
             f"{d['durationMs'] / 1000:.1f} s" if "durationMs" in d else None] for d in docs]
    app.terminal.document(docs, lambda: app.terminal.table(HEADERS, rows))
    for doc in docs:
        if doc.get("error"):
            app.terminal.error(f"bookie/{doc['bookieId']}: {doc['error']}")
    if failed or any(d.get("error") == "bookie stopped answering" for d in docs):
        raise click.exceptions.Exit(ExitCode.UNREACHABLE)
    if any(d.get("error") for d in docs):
        raise click.exceptions.Exit(ExitCode.FAILED)

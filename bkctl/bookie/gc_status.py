import click

from bkctl.bookie.targets import bookies_argument
from bkctl.options import output_option


def _kind_state(status, kind: str) -> str:
    if not getattr(status, f"{kind}Enabled"):
        return "disabled"
    if getattr(status, f"{kind}Suspended"):
        return "suspended"
    return f"{getattr(status, f'{kind}CompactionCounter')} runs"


@click.command("gc-status")
@bookies_argument
@output_option
@click.pass_obj
def gc_status(app, bookie_ids, all_bookies):
    """Show bookies' garbage collection: running or not, compaction kinds, entry-log usage, space reclaimed

    USAGE is the live share of the bytes in the bookie's sealed entry logs; LOW counts the logs under 20% (what
    a default minor compaction takes). -o json adds every log's usage and the last run's details. Exit 6 when a
    bookie does not answer.
    """
    from bkctl.bookie.targets import admin_call, gc_status_doc, target_bookies
    from bkctl.errors import ExitCode
    from bkctl.terminal import format_bytes
    from bookie._proto import bookie_admin_pb2 as pb
    from bookie.errors import BKError

    docs, rows, failed = [], [], False
    for bookie in target_bookies(app, bookie_ids, all_bookies):
        try:
            status = admin_call(bookie, "GetGcStatus", pb.GcStatusRequest(), "gc status")
        except BKError as exc:
            app.terminal.warn(str(exc))
            failed = True
            continue
        docs.append(gc_status_doc(bookie.bookie_id, status))
        total = sum(u.totalSize for u in status.entryLogs)
        remaining = sum(u.remainingSize for u in status.entryLogs)
        running = ("compacting " + ("major" if status.majorCompacting else "minor")
                   if status.majorCompacting or status.minorCompacting
                   else "forced" if status.isInForce else "yes" if status.running else "no")
        rows.append([bookie.bookie_id, running, _kind_state(status, "major"), _kind_state(status, "minor"),
                     len(status.entryLogs), f"{100 * remaining / total:.0f}%" if total else None,
                     sum(1 for u in status.entryLogs if u.totalSize and u.remainingSize / u.totalSize < 0.2),
                     format_bytes(status.bytesReclaimed)])
    app.terminal.document(docs, lambda: app.terminal.table(
        ["BOOKIE", "RUNNING", "MAJOR", "MINOR", "LOGS", "USAGE", "LOW", "RECLAIMED"], rows))
    if failed:
        raise click.exceptions.Exit(ExitCode.UNREACHABLE)

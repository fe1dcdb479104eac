import click

from bkctl.bookie._targets import bookies_argument
from bkctl.options import output_option
from bkctl.terminal import with_iso_times


def _kind_state(status, kind: str) -> str:
    if getattr(status, f"{kind}_enabled") is False:  # None: not reported (BookKeeper's HTTP API)
        return "disabled"
    if getattr(status, f"{kind}_suspended"):
        return "suspended"
    return f"{getattr(status, f'{kind}_compaction_counter')} runs"


def _dirs(dirs) -> str | None:
    """Writable ledger directories of all, ``2/3``; the index ones after them when set apart."""
    if not dirs:
        return None
    kinds = [[d for d in dirs if d.index == index] for index in (False, True)]
    return " ".join(
        f"{sum(d.writable for d in kind)}/{len(kind)}{' index' if kind[0].index else ''}" for kind in kinds if kind
    )


def _status_doc(status) -> dict:
    """The status, with its times (ms since the epoch) also in ISO-8601."""
    doc = with_iso_times(status.doc(), "lastMajorCompactionTime", "lastMinorCompactionTime")
    if doc["lastRun"] is not None:
        doc["lastRun"] = with_iso_times(doc["lastRun"], "startTime")
    if doc["stalledLogs"] is not None:
        doc["stalledLogs"] = [with_iso_times(log, "since") for log in doc["stalledLogs"]]
    return doc


@click.command("gc-status")
@bookies_argument
@output_option
@click.pass_obj
def gc_status(app, bookie_ids, all_bookies):
    """Show bookies' garbage collection: running or not, compaction kinds, entry-log usage, space reclaimed

    USAGE is the live share of the bytes in the bookie's sealed entry logs; LOW counts the logs under 20% (what
    a default minor compaction takes); DIRS how many of its ledger directories are writable (a full one takes no
    new entry log); STALLED the logs whose last compaction failed or made no progress (each named on stderr with
    its error; compaction goes on with the others). -o json adds every log's usage and directory, each ledger
    directory's disk usage and state, the stalled logs (logId, error, since) and the last run's details. Over
    BookKeeper's HTTP admin API (a Java bookie) only what it reports: running, compacting, suspended, counters.
    Exit 6 when a bookie does not answer, 7 when it publishes no admin service.
    """
    from admin.bookie_admin import fan_out
    from bkctl.bookie._targets import target_bookies
    from bkctl.errors import exit_for_errors
    from bkctl.terminal import format_bytes

    outcomes = fan_out(
        target_bookies(app, bookie_ids, all_bookies), "gc status", lambda admin: admin.gc_status(), tls=app.client_tls
    )
    docs, rows = [], []
    for outcome in outcomes:
        if outcome.error is not None:
            app.terminal.warn(str(outcome.error))
            continue
        status = outcome.result
        docs.append({"bookieId": outcome.bookie_id, **_status_doc(status)})
        for stalled in status.stalled_logs or ():
            app.terminal.warn(f"bookie/{outcome.bookie_id}: entry log {stalled.log_id:x} stalled: {stalled.error}")
        logs = status.entry_logs  # None over BookKeeper's HTTP API, which does not list them
        total = sum(u.total_size for u in logs or ())
        remaining = sum(u.remaining_size for u in logs or ())
        running = (
            "compacting " + ("major" if status.major_compacting else "minor")
            if status.major_compacting or status.minor_compacting
            else "forced"
            if status.is_in_force
            else "yes"
            if status.running
            else "no"
            if status.running is False
            else "-"
        )
        rows.append(
            [
                outcome.bookie_id,
                running,
                _kind_state(status, "major"),
                _kind_state(status, "minor"),
                len(logs) if logs is not None else None,
                f"{100 * remaining / total:.0f}%" if total else None,
                sum(1 for u in logs if u.total_size and u.usage < 0.2) if logs is not None else None,
                format_bytes(status.bytes_reclaimed) if status.bytes_reclaimed is not None else None,
                _dirs(status.ledger_dirs),
                len(status.stalled_logs) if status.stalled_logs is not None else None,
            ]
        )
    if docs or not outcomes:  # every bookie failed: its warning is the whole answer
        app.terminal.document(
            docs,
            lambda: app.terminal.table(
                ["BOOKIE", "RUNNING", "MAJOR", "MINOR", "LOGS", "USAGE", "LOW", "RECLAIMED", "DIRS", "STALLED"], rows
            ),
        )
    exit_for_errors(o.error for o in outcomes)

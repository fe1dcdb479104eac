import click

from bkctl.bookie._targets import http_port_option
from bkctl.completers import complete_bookie_ids, complete_ledger_ids
from bkctl.options import dry_run_option, output_option, wait_options

HEADERS = ["LOG", "DIRECTORY", "BYTES", "LIVE", "USAGE"]
RUN_HEADERS = ["BOOKIE", "KIND", "COMPACTED", "COPIED", "RECLAIMED", "DURATION"]


def log_id(_ctx, _param, values: tuple[str, ...]) -> list[int]:
    """Entry log ids in hex, as the files are named: ``1f``, ``1f.log`` or ``0x1f``."""
    ids = []
    for value in values:
        text = value.removesuffix(".log").removeprefix("0x")
        try:
            ids.append(int(text, 16))
        except ValueError:
            raise click.BadParameter(f"{value!r} is not an entry log id (hex, as in 1f.log)") from None
    return ids


def _log_doc(usage) -> dict:
    return {**usage.doc(), "file": f"{usage.log_id:x}.log"}


@click.command("run")
@click.argument("bookie_id", metavar="BOOKIE", shell_complete=complete_bookie_ids)
@http_port_option
@click.option(
    "--log", "log_ids", multiple=True, callback=log_id, metavar="LOG", help="An entry log, in hex as its file: 1f."
)
@click.option(
    "--ledger",
    "ledger_ids",
    multiple=True,
    type=click.IntRange(min=0),
    metavar="L",
    shell_complete=complete_ledger_ids,
    help="The entry logs holding live entries of this ledger.",
)
@click.option("--ignore-suspension", is_flag=True, help="Compact even while the bookie's compaction is suspended.")
@wait_options(many=False)
@dry_run_option
@output_option
@click.pass_obj
def run(app, bookie_id, log_ids, ledger_ids, ignore_suspension, wait, timeout, dry_run):
    """Compact chosen entry logs of a bookie now, whatever their usage

    --log takes entry log ids in hex, as the files are named (1f for 1f.log; under DbLedgerStorage, the log of
    that id in every ledger directory); --ledger the logs that hold live entries of a ledger. Their live entries
    are copied into a new log and the old logs removed, on the bookie's GC thread (never alongside another
    compaction). The current log, still being written, is refused. --dry-run lists the logs with the bytes a
    compaction would copy (LIVE) and reclaim (BYTES less LIVE). Refused while compaction is suspended, unless
    --ignore-suspension. Exit 1 when the run failed (a log could not be compacted: see gc-status) or --timeout
    passed, 2 for the current log, 3 when suspended, 5 for an unknown log or ledger, 6 when the bookie does not
    answer, 7 for a bookie reached over BookKeeper's HTTP admin API (it has no such operation).
    """
    from admin.bookie_admin import fan_out, wait_for_gc
    from bkctl.bookie._targets import target_bookies
    from bkctl.errors import exit_for_errors
    from bkctl.terminal import format_bytes, with_iso_times
    from bookie.errors import BKError, InvalidArgument

    if not log_ids and not ledger_ids:
        raise InvalidArgument("name entry logs to compact (--log LOG) or ledgers whose logs to compact (--ledger L)")
    bookies = target_bookies(app, (bookie_id,), False)
    (outcome,) = fan_out(
        bookies,
        "compaction",
        lambda admin: admin.compact_logs(list(log_ids), list(ledger_ids), dry_run, ignore_suspension),
        tls=app.client_tls,
    )
    if outcome.error is not None:
        raise outcome.error
    plan = outcome.result
    logs = [_log_doc(u) for u in plan.logs]
    doc = {"bookieId": bookie_id, "logs": logs}
    copy = sum(u.remaining_size for u in plan.logs)
    reclaim = sum(u.total_size - u.remaining_size for u in plan.logs)
    rows = [
        [
            d["file"],
            d["directory"] or "-",
            format_bytes(d["totalSize"]),
            format_bytes(d["remainingSize"]),
            f"{100 * d['usage']:.1f}%",
        ]
        for d in logs
    ]

    def plan_table(verb: str) -> None:
        app.terminal.table(HEADERS, rows)
        app.terminal.line(
            f"bookie/{bookie_id} compaction of {len(logs)} entry logs {verb}: "
            f"{format_bytes(copy)} to copy, {format_bytes(reclaim)} to reclaim"
        )

    if dry_run:
        doc.update(dryRun=True, bytesToCopy=copy, bytesToReclaim=reclaim)
        app.terminal.document(doc, lambda: plan_table("would run (dry run)"))
        return
    doc.update(runId=plan.run_id)
    if not wait:
        app.terminal.document(doc, lambda: plan_table(f"started (run {plan.run_id})"))
        return
    with app.terminal.progress("compaction", total=1, unit="bookies") as advance:
        (finished,) = wait_for_gc([outcome], timeout, advance, tls=app.client_tls)
    if finished.error is not None:
        raise finished.error
    result = finished.result
    doc["run"] = with_iso_times(result.doc(), "startTime")
    row = [
        bookie_id,
        result.kind or "-",
        result.logs_compacted,
        format_bytes(result.bytes_copied),
        format_bytes(result.bytes_reclaimed),
        f"{result.duration_ms / 1000:.1f} s",
    ]
    app.terminal.document(doc, lambda: app.terminal.table(RUN_HEADERS, [row]))
    if result.error:
        app.terminal.error(f"bookie/{bookie_id}: {result.error}")
    exit_for_errors([BKError(result.error) if result.error else None])

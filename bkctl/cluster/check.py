import click

from bkctl.options import ledgers_option, output_option


@click.command()
@click.option("--placement", is_flag=True, help="Check placement (rack spread of every write quorum).")
@click.option("--replicas", is_flag=True, help="Check that bookies hold what the write-set rule says they must.")
@click.option(
    "--latency",
    is_flag=True,
    help="Also compare the bookies' p99 add and read latency (their /metrics) and list the slow ones.",
)
@click.option(
    "--under-replicated-grace",
    type=click.FloatRange(0),
    metavar="SECONDS",
    help="Fail only on ledgers marked under-replicated for longer than this; younger ones are listed "
    "[default: 0, every one fails].",
)
@click.option(
    "--allow-under-replicated",
    is_flag=True,
    help="List ledgers marked under-replicated without failing on them (autorecovery is trusted with them).",
)
@ledgers_option("Only these ledgers (repeatable).")
@click.option(
    "--concurrency",
    type=click.IntRange(1),
    default=8,
    show_default=True,
    help="Requests in flight (each asks a bookie about up to 1000 ledgers).",
)
@click.option(
    "--verify-entries",
    type=click.FloatRange(0, 100),
    default=0,
    metavar="PERCENT",
    help="Also read this share of all entries from every replica (slow: BookKeeper's ledger check).",
)
@click.option(
    "--recheck-delay",
    type=click.FloatRange(0),
    default=5.0,
    show_default=True,
    metavar="SECONDS",
    help="Ask a registered bookie that did not answer again after this long before reporting it.",
)
@click.option(
    "--prometheus-file",
    type=click.Path(dir_okay=False),
    help="Rewrite this node_exporter textfile on every run, failed ones too: success, last success time, counts.",
)
@click.option(
    "--record",
    is_flag=True,
    help="Record the check times in ZooKeeper as BookKeeper's auditor does (its own checks wait then).",
)
@output_option
@click.pass_obj
def check(
    app,
    placement,
    replicas,
    latency,
    under_replicated_grace,
    allow_under_replicated,
    ledger_ids,
    concurrency,
    verify_entries,
    recheck_delay,
    prometheus_file,
    record,
):
    """Check closed ledgers' placement and replicas against the bookies' indexes (BP-34); exit 3 on violations

    No check flag runs both checks. Read-only and light on bookies: they answer from their indexes, no entry
    data is read (except with --verify-entries). Open ledgers are skipped. Ledgers marked under-replicated are not
    checked but listed, and fail the check unless --allow-under-replicated (or --under-replicated-grace spares
    those marked recently). A ledger is re-read before it is reported, so an ensemble change during the run raises
    no false alarm. Writes nothing to ZooKeeper unless --record is given: then the check times
    (underreplication/replicascheckctime, placementpolicycheckctime) are written as BookKeeper's auditor writes
    them, which postpones the auditor's own checks. A bookie a ledger names that is not registered is missing: it
    is reported unavailable, and the output ends with the commands to run next (JSON: nextSteps). With --latency, a
    bookie whose add or read p99 (from its /metrics, as bkctl top reads it) is at least 3 times the median of the
    other bookies' and at least 10 ms is listed as NUM_BOOKIES_SLOW: a warning, it does not fail the check.
    """
    from admin.check.categories import ALL
    from admin.check.checker import Checker, CheckOptions
    from admin.check.prometheus import check_writable, write_failure, write_textfile
    from bkctl.errors import ExitCode

    if allow_under_replicated and under_replicated_grace is not None:
        raise click.UsageError("--allow-under-replicated and --under-replicated-grace exclude each other")
    if prometheus_file:
        check_writable(prometheus_file)
    both = not (placement or replicas)
    options = CheckOptions(
        placement=placement or both,
        replicas=replicas or both,
        latency=latency,
        under_replicated_grace=None if allow_under_replicated else (under_replicated_grace or 0.0),
        ledger_ids=list(ledger_ids) or None,
        concurrency=concurrency,
        verify_entries=verify_entries,
        recheck_delay=recheck_delay,
        record=record,
    )
    try:
        with app.terminal.phases() as progress:
            report = app.client.run(Checker(app.client.core, options, progress).run())
    except BaseException:
        if prometheus_file:
            write_failure(prometheus_file)  # then the error leaves with its own exit code
        raise
    if prometheus_file:
        write_textfile(
            prometheus_file,
            report.counts,
            {
                "checked_ledgers": report.checked,
                "under_replicated_ledgers": report.skipped_under_replicated,
                "duration_seconds": round(report.seconds, 3),
            },
        )
    failing = {v.ledger_id for v in report.violations}
    spared = [i for i in report.under_replicated if i not in failing]  # under-replicated, within the grace or allowed

    def table():
        app.terminal.fields(
            [
                ("Checked ledgers", report.checked),
                ("Skipped (open)", report.skipped_open),
                ("Skipped (under-replicated)", report.skipped_under_replicated),
                ("Duration", f"{report.seconds:.2f} s"),
            ]
        )
        for name in ALL:
            if report.counts[name]:
                app.terminal.line(f"{name}: {report.counts[name]}")
        if report.violations:
            rows = [
                [v.ledger_id, v.category, v.segment, v.bookies, sum(v.missing_counts.values()) or None]
                for v in report.violations
            ]
            headers = ["LEDGER", "CATEGORY", "SEGMENT", "BOOKIES", "MISSING"]
            # why a bookie is unavailable (refused, an I/O error) or slow (its p99 against the others')
            if any(v.error or v.reason for v in report.violations):
                headers.append("DETAIL")
                rows = [[*row, v.error or v.reason] for row, v in zip(rows, report.violations, strict=True)]
            app.terminal.table(headers, rows)
        if spared:
            why = "allowed" if allow_under_replicated else "within the grace"
            app.terminal.line(f"under-replicated, not checked ({why}): {', '.join(map(str, spared))}")
        elif not report.violations:
            app.terminal.line("no violations")

    steps = report.next_steps()

    def text():
        table()
        if steps:
            app.terminal.line("next steps:")
            for step in steps:
                app.terminal.line(f"  {step}")

    app.terminal.document(report.doc(), text)
    if report.problems:
        raise click.exceptions.Exit(ExitCode.PROBLEMS)

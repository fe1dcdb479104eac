import click

from bkctl.completers import complete_ledger_ids
from bkctl.options import dry_run_option, key_values, output_option, spark_options


@click.command()
@click.argument("ledger_ids", metavar="[ID|FIRST-LAST]...", nargs=-1, shell_complete=complete_ledger_ids)
@click.option("--all", "all_ledgers", is_flag=True, help="Export every ledger.")
@click.option(
    "--meta",
    multiple=True,
    callback=key_values(),
    metavar="KEY=VALUE",
    help="Only ledgers whose custom metadata has KEY=VALUE (repeatable: all must match); without IDs, "
    "chosen among all ledgers.",
)
@click.option(
    "--to",
    "path",
    required=True,
    type=click.Path(),
    metavar="PATH",
    help="Output directory: a local path, or any path Spark writes (hdfs://, s3a://, ...).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["parquet", "json"]),
    default="parquet",
    show_default=True,
    help="parquet, or json: JSON lines with base64 payloads.",
)
@spark_options()
@click.option(
    "--partition-bytes",
    default="64MB",
    show_default=True,
    metavar="SIZE",
    help="About this much payload per Spark task (ledgers are cut into entry ranges).",
)
@click.option("--include-open", is_flag=True, help="Export open ledgers too, up to their LAC; writers are not fenced.")
@click.option(
    "--skip-missing",
    is_flag=True,
    help="Skip named ledgers that do not exist or whose metadata cannot be read, and ranges with no "
    "ledger, instead of failing.",
)
@click.option("--overwrite", is_flag=True, help="Replace PATH when it exists and is not empty.")
@click.option(
    "--verify",
    is_flag=True,
    help="Read the files back: entries and bytes per ledger against the metadata, and a payload checksum.",
)
@dry_run_option
@output_option
@click.pass_obj
def export(
    app,
    ledger_ids,
    all_ledgers,
    meta,
    path,
    fmt,
    master,
    spark_conf,
    partition_bytes,
    include_open,
    skip_missing,
    overwrite,
    verify,
    dry_run,
):
    """Export ledgers to Parquet or JSON-lines files with Spark, on this machine or on a cluster

    Rows: ledgerId, entryId, payload, length (payload bytes), lastAddConfirmed. Ledgers are read as an
    administrator (with the password in their metadata); open ledgers are left out unless --include-open. A missing
    ledger, a range with no ledger, or an entry no bookie can give, fails the export naming it (exit 5); --verify
    exits 3 when the files do not match. Seconds and MB/s count the Spark job, not Spark's start.
    """
    import os

    from bkctl.extras import require

    require("export", "bkctl ledger export")  # before anything imports pyspark or pyarrow
    from admin.export.part_files import is_empty_or_missing
    from admin.export.plan import parse_selection, parse_size, plan_export
    from bkctl.errors import CheckFailed
    from bookie.errors import InvalidArgument

    if (ledger_ids and all_ledgers) or not (ledger_ids or all_ledgers or meta):
        raise click.UsageError("name the ledgers (IDs or FIRST-LAST ranges), or give --all or --meta KEY=VALUE")
    selection = parse_selection(ledger_ids) if ledger_ids else None
    filters = {key: value.encode() for key, value in meta.items()}
    size = parse_size(partition_bytes)
    if not (dry_run or overwrite or is_empty_or_missing(path)):
        raise InvalidArgument(f"{path} exists and is not empty: pass --overwrite to replace it")
    plan = plan_export(app.client, selection, filters, include_open, size, skip_missing)
    for reason in plan.skipped.values():
        app.terminal.warn(f"{reason}: skipped")
    if plan.left_open:
        app.terminal.warn(
            f"{len(plan.left_open)} open ledger(s) left out (--include-open exports them up to their LAC)"
        )
    if dry_run:
        app.terminal.document(
            plan.doc(),
            lambda: app.terminal.line(
                f"would export {len(plan.ledgers)} ledgers, {plan.entries} entries, {plan.bytes} bytes in "
                f"{len(plan.partitions)} partitions to {path} (dry run)"
            ),
        )
        return
    from admin.export.job import run_export
    from admin.export.session import spark_log, spark_session

    # Spark's Python workers build clients of their own: the same ZooKeeper login and TLS, by the files' paths (the
    # JVM that starts them is started from here, with this environment)
    os.environ.update(app.worker_environment())

    shown = [0, 0]  # entries, bytes

    def tasks_done(advance, done: int) -> None:  # tasks run in partition order: count the first ``done``
        entries = sum(p.entries for p in plan.partitions[:done])
        size = sum(p.bytes for p in plan.partitions[:done])
        advance(entries - shown[0], size - shown[1])
        shown[:] = entries, size

    with (
        spark_log("bkctl-export-") as log,
        spark_session(master, spark_conf, log) as spark,
        app.terminal.progress(
            f"export {len(plan.ledgers)} ledgers", total=plan.entries, total_bytes=plan.bytes
        ) as advance,
    ):
        report = run_export(
            spark,
            str(app.service_uri),
            plan,
            path,
            fmt,
            overwrite,
            verify,
            lambda done, _total: tasks_done(advance, done),
        )
    doc = {**report.doc(), "skipped": plan.doc()["skipped"], "leftOpen": plan.left_open}
    app.terminal.document(
        doc,
        lambda: app.terminal.fields(
            [
                ("Path", path),
                ("Format", fmt),
                ("Ledgers", doc["ledgers"]),
                ("Entries", doc["entries"]),
                ("Bytes", doc["bytes"]),
                ("Files", doc["files"]),
                ("Seconds", doc["seconds"]),
                ("MB/s", doc["mbPerSec"]),
                ("Verified", {None: "no (--verify to check)", True: "yes", False: "NO"}[report.verified]),
            ]
        ),
    )
    for problem in report.problems:
        app.terminal.error(problem)
    if report.problems:
        raise CheckFailed(f"the export at {path} does not match its ledgers ({len(report.problems)} problems)")

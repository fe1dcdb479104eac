import click

from bkctl.completers import complete_ledger_ids
from bkctl.options import dry_run_option, key_values, output_option, spark_options, yes_option

FIRST_IDS = 10  # ledger ids named in a refusal


@click.command()
@click.argument("ledger_ids", metavar="[ID|FIRST-LAST]...", nargs=-1, shell_complete=complete_ledger_ids)
@click.option("--all", "all_ledgers", is_flag=True, help="Copy every ledger.")
@click.option(
    "--meta",
    multiple=True,
    callback=key_values(),
    metavar="KEY=VALUE",
    help="Only ledgers whose custom metadata has KEY=VALUE (repeatable: all must match); without IDs, "
    "chosen among all ledgers.",
)
@click.option(
    "--to-cluster",
    "target",
    required=True,
    metavar="URI",
    help="The target cluster's metadata service URI (initialised, with bookies); the same ZooKeeper login and "
    "TLS as the source's are used.",
)
@click.option(
    "--include-open",
    is_flag=True,
    help="Copy open ledgers too, up to their LAC now (writers are not fenced), and close the copies there: a later "
    "copy does not extend them.",
)
@spark_options()
@click.option(
    "--partition-bytes",
    default="64MB",
    show_default=True,
    metavar="SIZE",
    help="About this much payload per Spark task (whole ledgers: one is never split across tasks).",
)
@yes_option
@dry_run_option
@output_option
@click.pass_obj
def copy(app, ledger_ids, all_ledgers, meta, target, include_open, master, spark_conf, partition_bytes, yes, dry_run):
    """Copy ledgers to another cluster under the same ids, with Spark, while the source keeps serving

    Each ledger keeps its id, ensemble/write/ack sizes, digest type, password, ctime, custom metadata, and every
    entry byte for byte; it gets a new ensemble in the target, is read back there and checked, then closed at the
    source's last entry and length. An id that exists in the target and is not a finished copy of the ledger, or a
    target without enough writable bookies or disk room for every replica, is refused before anything is written
    (exit 3). Resumable: a rerun skips finished copies and redoes the unfinished ones a failed or interrupted run
    left; a failure removes the unfinished copies of its run. Open ledgers are left out unless --include-open. Asks
    for confirmation unless --yes. Seconds and MB/s count the Spark job.
    """
    import os
    import uuid

    from bkctl.extras import require

    require("export", "bkctl ledger copy")  # before anything imports pyspark or pyarrow
    from admin.copy.plan import plan_copy
    from admin.export.plan import parse_selection, parse_size
    from admin.restore.room import check_room, room_of, wanted
    from bkctl.errors import CheckFailed
    from bookie.client import BookKeeper
    from bookie.client.config import ClientConfig
    from bookie.errors import InvalidArgument
    from bookie.meta.layout import read_instance_id, read_layout
    from bookie.meta.store import SESSION_TIMEOUT, MetadataStore
    from bookie.meta.uri import parse_service_uri

    if (ledger_ids and all_ledgers) or not (ledger_ids or all_ledgers or meta):
        raise click.UsageError("name the ledgers (IDs or FIRST-LAST ranges), or give --all or --meta KEY=VALUE")
    selection = parse_selection(ledger_ids) if ledger_ids else None
    filters = {key: value.encode() for key, value in meta.items()}
    size = parse_size(partition_bytes)
    source = app.client
    store = MetadataStore(
        parse_service_uri(target), app.timeout, app.zk_timeout or SESSION_TIMEOUT, security=app.zk_security
    )
    app.ctx.call_on_close(store.close)
    read_layout(store)
    if read_instance_id(store) == read_instance_id(app.metadata):
        raise InvalidArgument(f"the target {target} is the source cluster: copy to another cluster")
    target_bk = BookKeeper(store=store, config=ClientConfig.from_environment(os.environ, tls=app.client_tls))
    app.ctx.call_on_close(target_bk.close)

    plan = plan_copy(source, target_bk, selection, filters, include_open, size)
    if plan.foreign:
        ids = sorted(plan.foreign)
        first = ", ".join(map(str, ids[:FIRST_IDS])) + (", ..." if len(ids) > FIRST_IDS else "")
        example = f"ledger {ids[0]}: {plan.foreign[ids[0]]}"
        raise CheckFailed(
            f"{len(ids)} ledger id(s) exist in the target and are not finished copies of the source's ledgers: "
            f"{first} ({example}); nothing copied"
        )
    if plan.source.left_open:
        app.terminal.warn(
            f"{len(plan.source.left_open)} open ledger(s) left out (--include-open copies them up to their LAC): "
            + ", ".join(map(str, plan.source.left_open[:FIRST_IDS]))
        )
    if plan.stale:
        app.terminal.warn(
            f"{len(plan.stale)} ledger(s) copied earlier while open have more entries in the source now; a closed "
            f"copy is not extended: {', '.join(map(str, plan.stale[:FIRST_IDS]))}"
        )
    summary = (
        f"{len(plan.to_copy)} ledgers ({plan.entries} entries, {plan.bytes} bytes) to {target}"
        f"{f', {len(plan.unfinished)} of them unfinished copies to redo' if plan.unfinished else ''}; "
        f"{len(plan.copied)} already copied"
    )
    if plan.to_copy:
        check_room(
            room_of(target_bk), [wanted(lg.ledger_id, lg.metadata, lg.entries, lg.length) for lg in plan.to_copy]
        )
    if dry_run:
        app.terminal.document(
            {**plan.doc(), "dryRun": True}, lambda: app.terminal.line(f"would copy {summary} (dry run)")
        )
        return
    if plan.to_copy:
        app.terminal.confirm(f"Copy {summary}?", "copy ledgers", yes)

    from admin.copy.job import report

    run_id = uuid.uuid4().hex[:12]
    result = _copy(app, target_bk, plan, run_id, target, master, spark_conf) if plan.to_copy else report(plan, run_id)
    for problem in result.problems:
        app.terminal.warn(problem)
    doc = result.doc()
    app.terminal.document(
        doc,
        lambda: app.terminal.fields(
            [
                ("Run", doc["runId"]),
                ("Target", target),
                ("Ledgers", doc["ledgers"]),
                ("Copied", doc["copied"]),
                ("Skipped", f"{doc['skipped']} (copied before)"),
                ("Left open", len(doc["leftOpen"])),
                ("Entries", doc["entries"]),
                ("Bytes", doc["bytes"]),
                ("Seconds", doc["seconds"]),
                ("MB/s", doc["mbPerSec"]),
            ]
        ),
    )


def _copy(app, target_bk, plan, run_id: str, target: str, master, spark_conf):
    """Claim the plan's ledgers in the target and copy them with Spark; on any failure remove the unfinished ones."""
    import os

    from admin.copy.job import abandon, claim, run_copy
    from admin.export.session import spark_log, spark_session
    from bookie.errors import BKError, reworded

    # Spark's Python workers build clients of their own: the same ZooKeeper login and TLS, by the files' paths
    os.environ.update(app.worker_environment())
    shown = [0, 0]  # entries, bytes

    def tasks_done(advance, done: int) -> None:  # tasks run in order: count the first ``done``
        entries = sum(p.entries for p in plan.tasks[:done])
        size = sum(p.bytes for p in plan.tasks[:done])
        advance(entries - shown[0], size - shown[1])
        shown[:] = entries, size

    with spark_log("bkctl-copy-") as log:  # first: a temporary directory that cannot be made stops nothing half-done
        try:
            with app.terminal.phases() as progress:
                claim(target_bk, plan, run_id, progress)
            with (
                spark_session(master, spark_conf, log, "bkctl copy") as spark,
                app.terminal.progress(
                    f"copy {len(plan.to_copy)} ledgers", total=plan.entries, total_bytes=plan.bytes
                ) as advance,
            ):
                return run_copy(
                    spark, str(app.service_uri), target, plan, run_id, lambda done, _total: tasks_done(advance, done)
                )
        except BaseException as exc:
            removed, problems = abandon(target_bk, plan, run_id)
            for problem in problems:
                app.terminal.error(problem)
            if not isinstance(exc, BKError):
                raise
            undone = f"removed the run's unfinished copies from the target ({removed})"
            raise reworded(exc, f"{exc}; {undone}") from None

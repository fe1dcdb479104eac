import click

from bkctl.options import dry_run_option, output_option, spark_options, yes_option
from bkctl.pulsar.common import pulsar_zk_option


@click.command()
@click.option(
    "--from",
    "path",
    required=True,
    metavar="PATH",
    help="The backup (`bkctl cluster backup --data`): a local path, or any path Spark reads (hdfs://, s3a://, ...).",
)
@click.option(
    "--password-file",
    type=click.Path(dir_okay=False),
    help="The password of the ledgers that have one and whose password the backup does not include (made without "
    "--with-passwords): the first line of a file readable by its owner only (chmod 600).",
)
@click.option(
    "--id-map",
    "id_map_file",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Restore ledgers under other ids: lines OLD NEW (# starts a comment); the others keep theirs.",
)
@click.option("--new-ids", is_flag=True, help="Give each ledger whose id exists in the cluster a new id.")
@click.option(
    "--keep-partial",
    is_flag=True,
    help="On failure, keep the ledgers restored so far (a rerun finishes them) instead of removing them.",
)
@spark_options()
@click.option(
    "--with-pulsar-metadata",
    is_flag=True,
    help="Also restore Pulsar's znodes the backup holds (cluster backup --with-pulsar-metadata), once every ledger "
    "is restored; refused before anything is written if Pulsar's metadata in the target has any of them, or if "
    "--id-map/--new-ids would give a ledger Pulsar references another id.",
)
@pulsar_zk_option
@yes_option
@dry_run_option
@output_option
@click.pass_obj
def restore(
    app,
    path,
    password_file,
    id_map_file,
    new_ids,
    keep_partial,
    master,
    spark_conf,
    with_pulsar_metadata,
    pulsar_zk,
    yes,
    dry_run,
):
    """Restore a backup's ledgers into this cluster with Spark: same ids, metadata and entries

    Each ledger is created under its id (OPEN, marked bkctl.restore=RUN), its entries written to every replica of a
    new ensemble with their stored LAC and length fields, read back and checked against the backup's payload
    checksum, and closed at its last entry and length: ensemble/write/ack sizes, digest type, password, ctime and
    custom metadata as in the backup; a ledger that was open is closed at the LAC the backup holds. The id generator
    moves past every restored id. The cluster may hold other ledgers; ids it already has are refused (exit 3)
    unless --id-map or --new-ids. Nothing is written before every check passed: the manifest (a newer format: exit
    2), every file's size and SHA-256 (exit 3, naming the file), the ids, the bookies and their disk room (exit 3),
    the passwords (exit 4).
    Asks first unless --yes. On failure the ledgers of the run are removed (or kept with --keep-partial); running
    the same restore again skips the ledgers restored already and redoes those still marked. Seconds and MB/s count
    the Spark job: writes, read-back checks and closes. --with-pulsar-metadata restores Pulsar's znodes of the
    backup once every ledger is restored.
    """
    from pathlib import Path

    from bkctl.extras import require

    require("export", "bkctl cluster restore")  # before anything imports pyspark or pyarrow
    from admin.backup.manifest import Manifest, read_ledgers
    from admin.backup.pulsar import check_pulsar_restore, read_pulsar_snapshot, restore_pulsar_snapshot
    from admin.restore.job import RestoreReport, new_run_id
    from admin.restore.plan import parse_id_map, plan_restore
    from admin.restore.room import room_of
    from bkctl.errors import CheckFailed
    from bkctl.options import read_password
    from bkctl.pulsar.common import pulsar_tree
    from bookie.errors import BKError, CorruptData, InvalidArgument, reworded

    if id_map_file and new_ids:
        raise click.UsageError("give --id-map or --new-ids, not both")
    if pulsar_zk and not with_pulsar_metadata:
        raise click.UsageError("--pulsar-zk names where to restore Pulsar's metadata: give --with-pulsar-metadata")
    id_map = None
    if id_map_file:
        try:
            text = Path(id_map_file).read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidArgument(f"cannot read the id map {id_map_file}: {exc}") from None
        id_map = parse_id_map(text, id_map_file)
    password = read_password(None, password_file) if password_file else None
    try:  # phase 0: nothing is written
        manifest = Manifest.load(path)
        if not manifest.data:
            raise InvalidArgument(f"the backup at {path} holds no entries (made without --data): nothing to restore")
        if with_pulsar_metadata and manifest.pulsar is None:
            raise InvalidArgument(
                f"the backup at {path} holds no Pulsar metadata (made without --with-pulsar-metadata)"
            )
        manifest.check_files(path)
        plan = plan_restore(
            path, manifest, read_ledgers(path), app.client.core, lambda: room_of(app.client), password, id_map, new_ids
        )
        pulsar = read_pulsar_snapshot(path)
    except CorruptData as exc:
        raise CheckFailed(f"backup at {path}: {exc}") from None
    if pulsar is not None and with_pulsar_metadata:
        tree, _ = pulsar_tree(app, pulsar_zk)
        # a ledger to get a generated id (--new-ids) moves as surely as a mapped one
        check_pulsar_restore(tree, pulsar, {old: -1 if new is None else new for old, new in plan.id_map().items()})
    elif pulsar is not None:
        app.terminal.warn(
            f"the backup holds Pulsar's metadata ({pulsar.topics} topics, {len(pulsar.znodes)} znodes): not restored "
            "without --with-pulsar-metadata"
        )
    if plan.open_left_out:
        app.terminal.warn(f"{len(plan.open_left_out)} open ledger(s) were left out of the backup: not restored")
    skipped = len(plan.ledgers) - len(plan.to_write)
    summary = (
        f"{len(plan.to_write)} ledgers, {plan.entries} entries, {plan.bytes} bytes from {path} into "
        f"{app.service_uri}" + (f" ({skipped} restored already)" if skipped else "")
    )
    if dry_run:
        app.terminal.document(plan.doc(), lambda: _show_plan(app, plan, f"would restore {summary} (dry run)"))
        return
    if not plan.to_write and not with_pulsar_metadata:  # a rerun: nothing to claim, no Spark to start
        report = RestoreReport(new_run_id(), restored_already=[lg.ledger_id for lg in plan.ledgers])
        app.terminal.document(report.doc(), lambda: app.terminal.line(f"restored already: {summary}"))
        return
    pulsar_too = f", then Pulsar's metadata ({len(pulsar.znodes)} znodes)" if with_pulsar_metadata else ""
    app.terminal.confirm(f"Restore {summary}{pulsar_too}?", "restore into the cluster", yes)
    if not plan.to_write:  # every ledger restored already: Pulsar's metadata only
        report = RestoreReport(new_run_id(), restored_already=[lg.ledger_id for lg in plan.ledgers])
    else:
        report = _restore_ledgers(app, plan, path, master, spark_conf, keep_partial)
    if with_pulsar_metadata:  # every ledger is restored and closed: Pulsar may see them now
        try:
            report.pulsar_znodes = restore_pulsar_snapshot(tree, pulsar, report.id_map)
        except BKError as exc:
            raise reworded(exc, f"the ledgers are restored, Pulsar's metadata is not: {exc}") from None
    doc = report.doc()
    app.terminal.document(
        doc,
        lambda: app.terminal.fields(
            [
                ("Run", doc["runId"]),
                ("Ledgers", doc["ledgers"]),
                ("Entries", doc["entries"]),
                ("Bytes", doc["bytes"]),
                ("Restored already", len(doc["restoredAlready"])),
                ("New ids", len(doc["idMap"])),
                ("Seconds", doc["seconds"]),
                ("MB/s", doc["mbPerSec"]),
            ]
            + ([("Pulsar znodes", doc["pulsarZnodes"])] if with_pulsar_metadata else [])
        ),
    )


def _restore_ledgers(app, plan, path: str, master, spark_conf, keep_partial: bool):
    """Phases 1-3: claim, the Spark job, the report (on failure: the run's ledgers removed, and the error raised)."""
    import os

    from admin.export.session import spark_log, spark_session
    from admin.restore.job import RestoreFailed, raise_failed, run_restore
    from bookie.errors import BKError

    os.environ.update(app.worker_environment())  # Spark's workers: this command's ZooKeeper login and TLS
    with spark_log("bkctl-restore-") as log:
        try:
            with spark_session(master, spark_conf, log, "bkctl restore") as spark, app.terminal.phases() as progress:
                return run_restore(app.client, spark, str(app.service_uri), plan, keep_partial, progress)
        except RestoreFailed as failed:
            if app.terminal.output in ("json", "yaml"):
                app.terminal.document(failed.report.doc(), lambda: None)
            if not isinstance(failed.cause, BKError):
                app.terminal.error(str(failed))
            raise_failed(failed.cause, str(failed))


def _show_plan(app, plan, summary: str) -> None:
    for source_id, target_id in plan.id_map().items():
        app.terminal.line(f"ledger/{source_id} -> {'a new id' if target_id is None else f'ledger/{target_id}'}")
    app.terminal.line(summary)

import contextlib

import click

from bkctl.completers import complete_ledger_ids
from bkctl.options import dry_run_option, key_values, output_option, spark_options
from bkctl.pulsar.common import pulsar_zk_option


@click.command()
@click.argument("ledger_ids", metavar="[ID|FIRST-LAST]...", nargs=-1, shell_complete=complete_ledger_ids)
@click.option("--all", "all_ledgers", is_flag=True, help="Back up every ledger (the default without IDs or --meta).")
@click.option(
    "--meta",
    multiple=True,
    callback=key_values(),
    metavar="KEY=VALUE",
    help="Only ledgers whose custom metadata has KEY=VALUE (repeatable: all must match).",
)
@click.option(
    "--to",
    "path",
    required=True,
    type=click.Path(),
    metavar="PATH",
    help="The backup's directory: a local path, or any path Spark writes (hdfs://, s3a://, ...).",
)
@click.option("--data", "with_data", is_flag=True, help="Back up the entries too (a Spark job); else metadata only.")
@click.option(
    "--include-open",
    is_flag=True,
    help="With --data: back up open ledgers' entries up to their LAC; writers are not fenced.",
)
@click.option(
    "--with-passwords",
    is_flag=True,
    help="Keep the ledgers' passwords, in PATH/secrets/passwords.json (a local backup is then readable by its "
    "owner only).",
)
@click.option(
    "--with-pulsar-metadata",
    "with_pulsar",
    is_flag=True,
    help="With --data: also back up Pulsar's /managed-ledgers and /schemas (managed ledgers, cursors, schema "
    "locators), and every ledger they reference, open ones up to their LAC.",
)
@pulsar_zk_option
@spark_options("With --data: ")
@click.option(
    "--partition-bytes",
    default="64MB",
    show_default=True,
    metavar="SIZE",
    help="With --data: about this much payload per Spark task and data file.",
)
@click.option(
    "--overwrite",
    is_flag=True,
    help="Replace the backup at PATH; it stays whole until the new one is complete. A PATH that is not empty and "
    "holds no backup is refused.",
)
@dry_run_option
@output_option
@click.pass_obj
def backup(
    app,
    ledger_ids,
    all_ledgers,
    meta,
    path,
    with_data,
    include_open,
    with_passwords,
    with_pulsar,
    pulsar_zk,
    master,
    spark_conf,
    partition_bytes,
    overwrite,
    dry_run,
):
    """Back up ledgers' metadata, and with --data their entries, to files with a manifest of checksums

    PATH gets metadata/ledgers.parquet (every selected ledger's metadata as stored, its password removed unless
    --with-passwords), with --data data/part-NNNNN.parquet (the rows of `ledger export` plus ledgerLength, the
    entry's stored length field; verified as export --verify does), and manifest.json, written last: the source
    cluster, the ledgers, every file's size and SHA-256. Open ledgers are listed and left out unless --data
    --include-open; a ledger deleted while the backup runs is listed, not an error. --with-pulsar-metadata adds
    metadata/pulsar.parquet, Pulsar's persistent znodes, read before the ledgers' metadata; every ledger they
    reference is backed up (open ones up to their LAC, without --include-open) or the backup fails (exit 3); one
    Pulsar references only once the backup is written is warned about. Bad input exits 2; a missing named ledger 5;
    files that do not match their ledgers 3.
    """
    import os

    from bkctl.extras import require

    require("export", "bkctl cluster backup")  # before anything imports pyspark or pyarrow
    from admin.backup.job import check_replaceable, run_backup
    from admin.backup.manifest import is_local
    from admin.backup.plan import plan_backup
    from admin.export.part_files import is_empty_or_missing
    from admin.export.plan import parse_selection, parse_size
    from bkctl import __version__
    from bkctl.errors import CheckFailed
    from bookie.errors import InvalidArgument

    if ledger_ids and all_ledgers:
        raise click.UsageError("name the ledgers (IDs or FIRST-LAST ranges) or give --all, not both")
    if include_open and not with_data:
        raise click.UsageError("--include-open backs up open ledgers' entries: it needs --data")
    if with_pulsar and not with_data:
        raise InvalidArgument("--with-pulsar-metadata needs --data: the ledgers Pulsar references are backed up whole")
    if pulsar_zk is not None and not with_pulsar:
        raise InvalidArgument("--pulsar-zk says where Pulsar's metadata is: it needs --with-pulsar-metadata")
    selection = parse_selection(ledger_ids) if ledger_ids else None
    filters = {key: value.encode() for key, value in meta.items()}
    size = parse_size(partition_bytes)
    if not (dry_run or overwrite or is_empty_or_missing(path)):
        raise InvalidArgument(f"{path} exists and is not empty: pass --overwrite to replace it")
    if overwrite and not dry_run:
        check_replaceable(path)
    uri = str(app.service_uri)
    pulsar, tree, reader = None, None, None
    if with_pulsar:  # before the ledgers' metadata: every ledger it references exists when that is read
        from admin.backup.pulsar import snapshot_pulsar
        from admin.pulsar.orphans import cursor_position_reader
        from bkctl.pulsar.common import pulsar_tree

        tree, _ = pulsar_tree(app, pulsar_zk)
        reader = cursor_position_reader(lambda: app.client)
        pulsar = snapshot_pulsar(tree, reader)
        _warn_unread(app, pulsar)
    with app.terminal.phases() as bar:

        def read(n: int) -> None:
            if n < 0:
                bar.phase("read ledger metadata", -n, "ledgers")
            else:
                bar.advance(n)

        plan = plan_backup(
            app.client, uri, selection, filters, with_data, include_open, size, read, pulsar.required if pulsar else ()
        )
    if pulsar is not None:
        _check_pulsar_selected(app, pulsar, plan)
    if plan.open_left_out:
        hint = "--include-open backs up their entries up to their LAC" if with_data else "metadata only"
        app.terminal.warn(f"{len(plan.open_left_out)} open ledger(s): entries left out ({hint})")
    if dry_run:
        _warn_deleted(app, plan.deleted_during_backup)
        app.terminal.document(
            {**plan.doc(), "path": path, "pulsar": _pulsar_doc(pulsar)},
            lambda: app.terminal.line(
                f"would back up {len(plan.ledgers)} ledgers' metadata"
                + (f", {plan.entries} entries, {plan.bytes} bytes in {plan.data_files} files" if with_data else "")
                + (f", {len(pulsar.znodes)} Pulsar znodes" if pulsar is not None else "")
                + f" to {path} (dry run)"
            ),
        )
        return
    if with_passwords and not is_local(path):
        app.terminal.warn(f"{path} is not local: who can read the passwords is up to its store's permissions")
    if with_data:
        # Spark's Python workers build clients of their own: the same ZooKeeper login and TLS, by the files' paths
        os.environ.update(app.worker_environment())
    shown = [0, 0]  # entries, bytes

    def tasks_done(advance, done: int) -> None:  # tasks run in partition order: count the first ``done``
        partitions = plan.data.partitions[:done] if plan.data is not None else []
        entries, size = sum(p.entries for p in partitions), sum(p.bytes for p in partitions)
        advance(entries - shown[0], size - shown[1])
        shown[:] = entries, size

    with (
        _spark(master, spark_conf) if with_data else contextlib.nullcontext() as spark,
        app.terminal.progress(
            f"back up {len(plan.ledgers)} ledgers", total=plan.entries, total_bytes=plan.bytes
        ) as advance,
    ):
        report = run_backup(
            plan,
            path,
            spark=spark,
            service_uri=uri,
            with_passwords=with_passwords,
            overwrite=overwrite,
            created_by=f"bkctl {__version__}",
            progress=lambda done, _total: tasks_done(advance, done),
            exists=app.client.core.ledgers.exists,
            pulsar=pulsar,
        )
    doc = report.doc()
    _warn_deleted(app, plan.deleted_during_backup)
    if pulsar is not None and tree is not None and not report.problems:
        from admin.backup.pulsar import referenced_now

        have = {ledger.ledger_id for ledger in plan.data.ledgers} if plan.data is not None else set()
        later = sorted(referenced_now(tree, reader) - have - set(pulsar.referenced))
        doc["pulsar"] = {**_pulsar_doc(pulsar), "referencedLater": later}
        if later:
            app.terminal.warn(
                f"{len(later)} ledger(s) Pulsar references now are not in the backup (first: {later[0]}): Pulsar "
                "moved on after its metadata was read; the backup holds that metadata and every ledger it references"
            )
    else:
        doc["pulsar"] = None
    app.terminal.document(
        doc,
        lambda: app.terminal.fields(
            [
                ("Path", path),
                ("Ledgers", doc["ledgers"]),
                ("Entries", doc["entries"] if with_data else "not backed up (--data backs them up)"),
                ("Bytes", doc["bytes"]),
                ("Files", doc["files"]),
                ("Seconds", doc["seconds"]),
                ("MB/s", doc["mbPerSec"]),
                ("Verified", {None: "no data", True: "yes", False: "NO"}[report.verified]),
                ("Open, included", len(doc["openIncluded"])),
                ("Open, left out", len(doc["openLeftOut"])),
                ("Deleted meanwhile", len(doc["deletedDuringBackup"])),
                ("Passwords", report.passwords_file or "not kept (--with-passwords keeps them)"),
                *([("Pulsar znodes", doc["pulsar"]["znodes"])] if doc["pulsar"] else []),
            ]
        ),
    )
    for problem in report.problems:
        app.terminal.error(problem)
    if report.problems:
        raise CheckFailed(
            f"the backup at {path} does not match its ledgers ({len(report.problems)} problems): no manifest written"
        )


def _warn_deleted(app, deleted: list[int]) -> None:
    if deleted:
        app.terminal.warn(f"{len(deleted)} ledger(s) deleted while the backup ran: left out (deletedDuringBackup)")


def _pulsar_doc(pulsar) -> dict | None:
    if pulsar is None:
        return None
    return {
        "root": pulsar.root or "/",
        "znodes": len(pulsar.znodes),
        "topics": pulsar.topics,
        "referencedLedgers": len(pulsar.referenced),
    }


def _warn_unread(app, pulsar) -> None:
    """What Pulsar's metadata did not say: its references there are unknown, so not backed up for sure."""
    found = pulsar.metadata
    if found is None:
        return
    if found.unreadable:
        name, problem = next(iter(sorted(found.unreadable.items())))
        count = len(found.unreadable)
        app.terminal.warn(
            f"{count} of Pulsar's managed ledgers or schemas unreadable: kept as stored, their ledgers not known to "
            f"be backed up (first: {name}: {problem})"
        )
    if found.compaction_unknown:
        topic = sorted(found.compaction_unknown)[0]
        app.terminal.warn(
            f"{len(found.compaction_unknown)} topic(s) whose compacted ledger is unknown (first: {topic}): its "
            "compaction cursor's ledger could not be read"
        )


def _check_pulsar_selected(app, pulsar, plan) -> None:
    """Every ledger Pulsar's metadata needs is among the ledgers planned: refused when one is not selected
    (exit 2) or does not exist (exit 3)."""
    from admin.backup.pulsar import missing_from_backup
    from bookie.errors import InvalidArgument, Unsafe

    missing = missing_from_backup(pulsar, [ledger.ledger_id for ledger in plan.ledgers])
    absent = [lid for lid in missing if not app.client.core.ledgers.exists(lid)]
    if absent:
        raise Unsafe(
            f"{len(absent)} ledger(s) Pulsar's metadata references do not exist (first: {pulsar.describe(absent[0])}): "
            "deleted since it was read (run the backup again) or lost (bkctl pulsar missing)"
        )
    if missing:
        raise InvalidArgument(
            f"{len(missing)} ledger(s) Pulsar's metadata references are not selected (first: "
            f"{pulsar.describe(missing[0])}): select them too, or back up --all"
        )


@contextlib.contextmanager
def _spark(master, spark_conf):
    """The backup's Spark session, its log kept only when Spark fails on its own."""
    from admin.export.session import spark_log, spark_session

    with spark_log("bkctl-backup-") as log, spark_session(master, spark_conf, log) as spark:
        yield spark

import click

from bkctl.bookie._offline import directory_options
from bkctl.bookie._targets import bookies_argument
from bkctl.completers import complete_ledger_ids
from bkctl.options import output_option


def _views(app, bookie_ids, all_bookies, offline: bool, dirs: tuple, ledger_id: int | None):
    """``(bookieId, view or None, error or None)`` of each bookie: from its admin service, or its directories."""
    if offline:
        from admin.usage.sources import offline_view
        from bkctl.bookie._offline import bookie_config, require_ledger_dirs
        from bookie.errors import InvalidArgument

        if len(bookie_ids) != 1 or all_bookies:
            raise InvalidArgument("offline, name the one BOOKIE whose directories these are")
        config = bookie_config(app, *dirs)
        require_ledger_dirs(config)
        return [(bookie_ids[0], offline_view(config, bookie_ids[0], ledger_id), None)]
    from admin.bookie_admin import STORAGE_USAGE_TIMEOUT, fan_out
    from bkctl.bookie._targets import target_bookies

    outcomes = fan_out(
        target_bookies(app, bookie_ids, all_bookies),
        "storage usage",
        lambda admin: admin.storage_usage(ledger_id),
        STORAGE_USAGE_TIMEOUT,
        tls=app.client_tls,
    )
    return [(o.bookie_id, o.result, o.error) for o in outcomes]


def with_iso_reasons(doc: dict) -> dict:
    """The document with each reason's time (ms) in ISO-8601 beside it."""
    from bkctl.terminal import with_iso_times

    doc["reasons"] = [with_iso_times(r, "nextRunTime") if "nextRunTime" in r else r for r in doc["reasons"]]
    return doc


@click.command("usage")
@bookies_argument(http=False)
@click.option("--offline", is_flag=True, help="Read the bookie's directories (-c's bk_server.conf's, or the flags').")
@directory_options
@click.option(
    "--threshold",
    type=click.FloatRange(0, 1),
    metavar="X",
    help="Also what a compaction at this usage threshold would reclaim (reclaimableBytes is then at X).",
)
@click.option(
    "--logs", "top", type=click.IntRange(0), default=10, show_default=True, metavar="N", help="Show the N largest logs."
)
@click.option(
    "--ledger",
    "ledger_id",
    type=click.IntRange(0),
    metavar="L",
    shell_complete=complete_ledger_ids,
    help="Where ledger L is and what keeps it.",
)
@output_option
@click.pass_obj
def usage(app, bookie_ids, all_bookies, offline, journal_dirs, ledger_dirs, index_dirs, threshold, top, ledger_id):
    """Explain a bookie's disk space: what it holds against what the metadata says, and why it is not freed

    Bytes by kind (journal, entry logs, index) and the disks; the expected bytes (the entries of every ledger whose
    ensembles name the bookie, by write set); each entry log's live and dead bytes with its ledgers' state and
    Pulsar owner; what minor and major compaction would reclaim at the bookie's thresholds (and at --threshold),
    with the bytes they would copy; and the reasons space is held, with bytes each. From a running bookie's admin
    service, or with --offline (or --journal-dir/--ledger-dir) from one bookie's directories, a Java bookie's too,
    read only. -o json: one document per bookie (a list for several). Exit 6 when a bookie does not answer, 7 when
    it does not report its storage.
    """
    import time

    from admin.usage.explain import document, explain, ledger_detail
    from admin.usage.sources import ledgers_naming
    from bkctl.bookie._usage_text import show_ledger, show_usage
    from bkctl.errors import exit_for_errors

    dirs = (journal_dirs, ledger_dirs, index_dirs)
    views = _views(app, bookie_ids, all_bookies, offline or any(dirs), dirs, ledger_id)
    for _, _, error in views:
        if error is not None:
            app.terminal.warn(str(error))
    found = [(bookie_id, view) for bookie_id, view, error in views if error is None]
    if not found:  # every bookie failed: its warning is the whole answer
        exit_for_errors(error for _, _, error in views)
    held = {lid for _, view in found for log in view.logs for lid in log.ledgers}
    held |= {lid for _, view in found for lid in view.local_ledgers}
    metadata = ledgers_naming(
        app.metadata, [view.bookie_id or b for b, view in found], held, lambda exc: app.terminal.warn(str(exc))
    )
    now = time.time()
    explained = [explain(view, metadata, bookie_id, now, threshold) for bookie_id, view in found]
    if ledger_id is not None:
        docs = [ledger_detail(e, ledger_id) for e in explained]
    else:
        docs = [with_iso_reasons(document(e, top)) for e in explained]

    def render() -> None:
        for i, (e, doc) in enumerate(zip(explained, docs, strict=True)):
            if i:
                app.terminal.line()
            if ledger_id is not None:
                show_ledger(app, doc)
            else:
                show_usage(app, e, doc, top)

    app.terminal.document(docs if len(bookie_ids) > 1 or all_bookies else docs[0], render)
    exit_for_errors(error for _, _, error in views)

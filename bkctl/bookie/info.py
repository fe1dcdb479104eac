import click

from bkctl.bookie._targets import bookies_argument
from bkctl.options import output_option
from bkctl.terminal import format_bytes


@click.command()
@bookies_argument(http=False)
@output_option
@click.pass_obj
def info(app, bookie_ids: tuple[str, ...], all_bookies: bool):
    """Show bookies' disk capacity and free space (GET_BOOKIE_INFO), ours or Apache BookKeeper bookies

    REASON: why a read-only bookie is read-only (operator, disk-threshold, journal-failure; unknown for a bookie
    that does not publish it, as Java bookies).

    Exit 6 when a bookie asked for does not answer (every other bookie is still shown).
    """
    from bkctl.bookie._targets import target_bookies
    from bkctl.errors import exit_for_errors
    from bookie.errors import BKError

    docs, failed = [], []
    for bookie in target_bookies(app, bookie_ids, all_bookies):
        doc = {
            "bookieId": bookie.bookie_id,
            "state": bookie.state,
            "readOnlyReasons": bookie.read_only_reasons,
            "totalDiskCapacity": None,
            "freeDiskSpace": None,
        }
        try:
            total, free = app.client.bookie_info(bookie.bookie_id, timeout=5)
            doc.update(totalDiskCapacity=total, freeDiskSpace=free)
        except BKError as exc:
            app.terminal.warn(str(exc))
            failed.append(exc)
        docs.append(doc)

    def size(value):
        return None if value is None else format_bytes(value)

    def used(doc):
        total, free = doc["totalDiskCapacity"], doc["freeDiskSpace"]
        return None if not total else f"{100 * (total - free) / total:.0f}%"

    def reasons(doc):
        return "unknown" if doc["readOnlyReasons"] is None else doc["readOnlyReasons"]

    rows = [
        [d["bookieId"], d["state"], size(d["totalDiskCapacity"]), size(d["freeDiskSpace"]), used(d), reasons(d)]
        for d in docs
    ]
    headers = ["BOOKIE", "STATE", "TOTAL", "FREE", "USED", "REASON"]
    app.terminal.document(docs, lambda: app.terminal.table(headers, rows, "no bookies registered"))
    exit_for_errors(failed)

import click

from bkctl.options import complete_bookie_ids, output_option


@click.command()
@click.argument("bookie_id", metavar="[BOOKIE]", required=False, shell_complete=complete_bookie_ids)
@click.option("--all", "all_bookies", is_flag=True, help="Every registered bookie.")
@output_option
@click.pass_obj
def info(app, bookie_id: str | None, all_bookies: bool):
    """Show a bookie's disk capacity and free space (GET_BOOKIE_INFO), ours or an Apache BookKeeper bookie

    Exit 6 when a bookie asked for does not answer (with --all: every other bookie is still shown).
    """
    from bkctl.errors import exit_for_errors
    from bookie.errors import BKError, InvalidArgument
    from bookie.meta.registration import BookieRegistry

    registry = BookieRegistry(app.metadata)
    if bool(bookie_id) == all_bookies:
        raise InvalidArgument("name one BOOKIE or pass --all")
    bookies = [registry.get(bookie_id)] if bookie_id else registry.list(writable=True, readonly=True)
    docs, failed = [], []
    for bookie in bookies:
        doc = {"bookieId": bookie.bookie_id, "state": bookie.state, "totalDiskCapacity": None, "freeDiskSpace": None}
        try:
            total, free = app.client.bookie_info(bookie.bookie_id, timeout=5)
            doc.update(totalDiskCapacity=total, freeDiskSpace=free)
        except BKError as exc:
            app.terminal.warn(str(exc))
            failed.append(exc)
        docs.append(doc)

    def gib(value):
        return None if value is None else f"{value / 2**30:.1f} GiB"

    def used(doc):
        total, free = doc["totalDiskCapacity"], doc["freeDiskSpace"]
        return None if not total else f"{100 * (total - free) / total:.0f}%"

    rows = [[d["bookieId"], d["state"], gib(d["totalDiskCapacity"]), gib(d["freeDiskSpace"]), used(d)] for d in docs]
    app.terminal.document(
        docs, lambda: app.terminal.table(["BOOKIE", "STATE", "TOTAL", "FREE", "USED"], rows, "no bookies registered")
    )
    exit_for_errors(failed)

import click

from bkctl.bookie._offline import directory_options
from bkctl.options import dry_run_option, output_option


@click.command("expand-storage")
@directory_options
@dry_run_option
@output_option
@click.pass_obj
def expand_storage(app, journal_dirs, ledger_dirs, index_dirs, dry_run):
    """Add ledger or index directories to a stopped bookie's cookie (updatecookie --expandstorage)

    First add the new directories to ledgerDirectories (or indexDirectories) in -c's bk_server.conf. The command
    then checks, as a bookie started with allowStorageExpansion=true does, the cookie in the metadata store and
    every directory's current/VERSION against the cookie that configuration gives: same bookie id, cluster
    instance id and journal directories, every ledger and index directory of the cookie still configured, each
    directory the cookie knows still holding its cookie, each new one empty. Then it writes that cookie into every
    directory (the new ones get their current/) and replaces the stored one by a compare-and-set on the version
    read. The bookie, ours or Java's, then starts with all its directories. Nothing to do (exit 0) when the
    configuration adds no directory. Refused while the bookie runs, and when a check fails (exit 3); exit 5 when
    the bookie has no cookie (it never started). -o json: the cookie's fields, znodeVersion, addedDirs,
    stampedDirs, storedCookieReplaced and result (expanded, unchanged, or would be expanded (dry run)).
    """
    from bkctl.bookie._offline import bookie_config, stopped
    from bookie.errors import Unsafe
    from bookie.meta.registration import require_not_registered
    from bookie.server.cookie_check import CookieMismatch, expand, plan_expansion
    from bookie.server.network import BookieNetwork

    config = bookie_config(app, journal_dirs, ledger_dirs, index_dirs)
    bookie_id = BookieNetwork.of(config).bookie_id
    require_not_registered(app.metadata, bookie_id, "expand its storage")  # a Java bookie holds no directory lock
    with stopped(config, "expand its storage"):
        try:
            plan = plan_expansion(app.metadata, bookie_id, config)
        except CookieMismatch as exc:
            raise Unsafe(f"cannot expand its storage: {exc}") from None
        version = plan.version
        if plan.changes and not dry_run:
            version = expand(app.metadata, plan)
    result = "unchanged" if not plan.changes else "would be expanded (dry run)" if dry_run else "expanded"
    doc = {
        "bookieId": bookie_id,
        "instanceId": plan.cookie.instance_id,
        "journalDirs": list(plan.cookie.journal_dirs),
        "ledgerDirs": list(plan.cookie.ledger_dirs),
        "indexDirs": list(plan.cookie.index_dirs) if plan.cookie.index_dirs is not None else None,
        "znodeVersion": version,
        "addedDirs": [str(d) for d in plan.added],
        "stampedDirs": [str(d) for d in plan.stamp],
        "storedCookieReplaced": plan.replace_stored,
        "result": result,
        "dryRun": dry_run,
    }

    def show() -> None:
        for d in plan.added:
            app.terminal.line(f"{d} {'would be added (dry run)' if dry_run else 'added'}")
        if plan.changes:
            app.terminal.line(f"cookie/{bookie_id} {result}")
        else:
            app.terminal.line(f"cookie/{bookie_id} unchanged: nothing to do, it lists every configured directory")

    app.terminal.document(doc, show)

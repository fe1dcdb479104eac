import click

from bkctl.options import settings_option


@click.command()
@click.option("--conf", "conf_file", type=click.Path(dir_okay=False), help="bk_server.conf [default: bkctl's -c].")
@click.option("--port", type=click.IntRange(1, 65535), help="bookiePort.")
@click.option("--journal-dir", help="journalDirectories.")
@click.option("--ledger-dir", help="ledgerDirectories.")
@click.option("--skip-journal-corruption", is_flag=True,
              help="Start even if the journal is corrupt in the middle, skipping the damaged records (they are "
                   "logged and counted in bkctl_journal_corrupt_records_skipped; skipReplayJournalInvalidRecord).")
@settings_option("Any configuration key, e.g. --set journalSyncData=false (repeatable).")
@click.pass_obj
def run(app, conf_file, port, journal_dir, ledger_dir, skip_journal_corruption, settings):
    """Run a bookie in the foreground (logs to stderr; SIGTERM or Ctrl-C shuts it down cleanly)

    Configuration: BookKeeper's bk_server.conf keys and defaults, then -u, then these flags. A bookie whose
    directories or cookie do not match its cluster, whose directories another bookie holds, whose ports are taken,
    or whose journal is corrupt before its end refuses to start, exit 1.
    """
    import logging

    from bookie.errors import BKError
    from bookie.server.bookie import run as run_bookie
    from bookie.server.claim import StartRefused
    from bookie.server.config import BookieConfig

    overrides = dict(settings)
    if app.service_uri_flag:
        overrides["metadataServiceUri"] = app.service_uri_flag
    for key, value in (("bookiePort", port), ("journalDirectories", journal_dir), ("ledgerDirectories", ledger_dir)):
        if value is not None:
            overrides[key] = str(value)
    if skip_journal_corruption:
        overrides["skipReplayJournalInvalidRecord"] = "true"
    config = BookieConfig.load(conf_file or app.conf_path, overrides)
    root = logging.getLogger()
    root.setLevel(logging.DEBUG if app.terminal.verbosity > 1 else logging.INFO)
    for handler in root.handlers:
        handler.setLevel(root.level)
    # ZooKeeper connection losses matter to a bookie's operator; kazoo's routine chatter does not
    logging.getLogger("kazoo").setLevel(logging.DEBUG if app.terminal.verbosity > 1 else logging.WARNING)
    for key in config.unused_keys:  # a Java bookie's bk_server.conf: say what it sets that this bookie ignores
        logging.getLogger("bookie.server.config").warning("%s is not used by this bookie: ignored", key)
    try:
        run_bookie(config)
    except (OSError, StartRefused) as exc:
        raise BKError(f"bookie {config.bookie_id} cannot start: {exc}") from None

import click

from bkctl.options import log_format_option, settings_option


@click.command()
@click.option("--conf", "conf_file", type=click.Path(dir_okay=False), help="bk_server.conf [default: bkctl's -c].")
@click.option("--port", type=click.IntRange(1, 65535), help="bookiePort.")
@click.option(
    "--journal-dir",
    type=click.Path(file_okay=False),
    multiple=True,
    help="journalDirectories; repeat it for several (a journal per directory).",
)
@click.option(
    "--ledger-dir",
    type=click.Path(file_okay=False),
    multiple=True,
    help="ledgerDirectories; repeat it for several (entry logs and index files spread over them).",
)
@click.option(
    "--skip-journal-corruption",
    is_flag=True,
    help="Start even if the journal is corrupt in the middle, skipping the damaged records (they are "
    "logged and counted in bkctl_journal_corrupt_records_skipped; skipReplayJournalInvalidRecord).",
)
@settings_option("Any configuration key, e.g. --set journalSyncData=false (repeatable).")
@log_format_option(default=None)
@click.option(
    "--print-systemd-unit",
    "print_unit",
    is_flag=True,
    help="Print a systemd unit that runs this bookie with these options (and httpServerEnabled=true for "
    "its readiness probe), instead of running it.",
)
@click.option(
    "--print-dockerfile",
    is_flag=True,
    help="Print a Dockerfile of an image that runs this bookie with these options, instead of running it.",
)
@click.pass_obj
def run(
    app,
    conf_file,
    port,
    journal_dir,
    ledger_dir,
    skip_journal_corruption,
    settings,
    log_format,
    print_unit,
    print_dockerfile,
):
    """Run a bookie in the foreground (logs to stderr; SIGTERM or Ctrl-C shuts it down cleanly)

    Configuration: BookKeeper's bk_server.conf keys and defaults, then -u, then these flags. Who the bookie is and
    where it listens mean what they mean in BookKeeper: listeningInterface is a network interface name (none: every
    interface), advertisedAddress, bookieId, useHostNameAsBookieID, useShortHostName, allowLoopback,
    prometheusStatsHttpAddress, httpServerHost. A setting it cannot honour (an unknown interface, a loopback
    bookie address without allowLoopback) is refused, exit 2. A bookie whose directories or cookie do not match
    its cluster, whose directories another bookie holds, whose ports are taken, or whose journal is corrupt before
    its end refuses to start, exit 1.

    --print-systemd-unit and --print-dockerfile print a service definition made from the same options: readiness on
    /api/v1/bookie/is_ready, SIGTERM for a clean stop, a non-root user, private state directories.
    """
    import os

    from bookie.errors import InvalidArgument
    from bookie.logs import configure_server
    from bookie.server.config import BookieConfig
    from bookie.server.main import run_bookie

    overrides = dict(settings)
    if app.service_uri_flag:
        overrides["metadataServiceUri"] = app.service_uri_flag
    if port is not None:
        overrides["bookiePort"] = str(port)
    for key, dirs in (("journalDirectories", journal_dir), ("ledgerDirectories", ledger_dir)):
        if dirs:
            overrides[key] = ",".join(dirs)
    if skip_journal_corruption:
        overrides["skipReplayJournalInvalidRecord"] = "true"
    conf_file = conf_file or app.conf_path
    if print_unit or print_dockerfile:
        if print_unit and print_dockerfile:
            raise InvalidArgument("give --print-systemd-unit or --print-dockerfile, not both")
        _print_service(app, conf_file and os.path.abspath(conf_file), overrides, log_format, print_unit)
        return
    config = BookieConfig.load(conf_file, overrides)
    configure_server(log_format or app.log_format, debug=app.terminal.verbosity > 1)
    run_bookie(config)


def _print_service(app, conf_file: str | None, overrides: dict[str, str], log_format: str | None, unit: bool):
    """The same options, made into ``bkctl`` arguments (absolute paths; the HTTP server on for readiness)."""
    import os

    from bkctl import __version__
    from bkctl.bookie._service import BookieService
    from bookie.server.config import BookieConfig

    args = ["-u", app.service_uri_flag] if app.service_uri_flag else []
    args += ["bookie", "run", *(["--conf", conf_file] if conf_file else [])]
    if app.service_uri_flag:  # passed as -u
        del overrides["metadataServiceUri"]
    if not BookieConfig.load(conf_file, overrides).httpServerEnabled:
        overrides["httpServerEnabled"] = "true"
    for key in ("journalDirectories", "ledgerDirectories", "indexDirectories"):
        if key in overrides:
            overrides[key] = ",".join(os.path.abspath(d.strip()) for d in overrides[key].split(",") if d.strip())
    for key, value in overrides.items():
        args += ["--set", f"{key}={value}"]
    if log_format or app.log_format != "text":
        args += ["--log-format", log_format or app.log_format]
    service = BookieService(tuple(args), BookieConfig.load(conf_file, overrides), conf_file, __version__)
    app.terminal.line((service.systemd_unit() if unit else service.dockerfile()).rstrip("\n"))

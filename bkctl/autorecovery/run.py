import click


@click.command()
@click.option(
    "--open-ledger-grace",
    type=click.FloatRange(0),
    default=30.0,
    show_default=True,
    metavar="SECONDS",
    help="How long an open ledger's writer may fix its ensemble before the ledger is fenced "
    "(openLedgerRereplicationGracePeriod).",
)
@click.option("--poll", type=click.FloatRange(0.1), default=1.0, show_default=True, metavar="SECONDS")
@click.pass_obj
def run(app, open_ledger_grace, poll):
    """Run autorecovery in the foreground: auditor election, marking lost bookies' ledgers, re-replication

    Logs to stderr; SIGTERM or Ctrl-C stops it. Run several for availability: one audits, all re-replicate. Its id
    in the auditor election is a bookie id, as BookKeeper's autorecovery writes: the id that a bookie with -c's
    configuration has (bookieId, advertisedAddress, listeningInterface, bookiePort...; BookKeeper's defaults
    without -c), so that run beside a bookie, with its bk_server.conf, it is named after that bookie.
    """
    from bookie.autorecovery.main import auditor_id, run_autorecovery
    from bookie.logs import configure_server

    configure_server(app.log_format, debug=app.terminal.verbosity > 1)
    name = auditor_id(app.config)
    run_autorecovery(app.client, name, poll=poll, open_grace=open_ledger_grace)

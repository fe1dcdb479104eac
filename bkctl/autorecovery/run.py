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
    import asyncio
    import logging
    import signal

    from admin.autorecovery import AutoRecovery
    from bkctl import logs

    logs.configure(logging.INFO, app.log_format)
    logging.getLogger("kazoo").setLevel(logging.WARNING)
    name = _auditor_id(app.config)
    client = app.client
    stop = asyncio.Event()

    def request_stop(*_):
        client.loop.call_soon_threadsafe(stop.set)

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    client.run(AutoRecovery(client.core, name, poll=poll, open_grace=open_ledger_grace).run(stop))


def _auditor_id(properties: dict[str, str]) -> str:
    """AutoRecoveryMain's BookieImpl.getBookieId(conf). A loopback address is allowed: this process listens on
    nothing, and the id only names it (BookKeeper's refusal would stop autorecovery on a host named 127.0.x.x)."""
    from bookie.server.config import BookieConfig
    from bookie.server.network import BookieNetwork

    keys = (
        "bookieId",
        "advertisedAddress",
        "listeningInterface",
        "useHostNameAsBookieID",
        "useShortHostName",
        "bookiePort",
    )
    config = BookieConfig.load(overrides={k: v for k, v in properties.items() if k in keys})
    config.allowLoopback = True
    return BookieNetwork.of(config).bookie_id

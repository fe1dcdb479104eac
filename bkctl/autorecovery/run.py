import click


@click.command()
@click.option("--open-ledger-grace", type=click.FloatRange(0), default=30.0, show_default=True, metavar="SECONDS",
              help="How long an open ledger's writer may fix its ensemble before the ledger is fenced "
                   "(openLedgerRereplicationGracePeriod).")
@click.option("--poll", type=click.FloatRange(0.1), default=1.0, show_default=True, metavar="SECONDS")
@click.pass_obj
def run(app, open_ledger_grace, poll):
    """Run autorecovery in the foreground: auditor election, marking lost bookies' ledgers, re-replication

    Logs to stderr; SIGTERM or Ctrl-C stops it. Run several for availability: one audits, all re-replicate.
    """
    import asyncio
    import logging
    import os
    import signal
    import socket

    from admin.autorecovery import AutoRecovery

    logging.getLogger().setLevel(logging.INFO)
    for handler in logging.getLogger().handlers:
        handler.setLevel(logging.INFO)
    logging.getLogger("kazoo").setLevel(logging.WARNING)
    client = app.client
    stop = asyncio.Event()

    def request_stop(*_):
        client.loop.call_soon_threadsafe(stop.set)

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    name = f"{socket.gethostname()}:{os.getpid()}"
    client.run(AutoRecovery(client.core, name, poll=poll, open_grace=open_ledger_grace).run(stop))

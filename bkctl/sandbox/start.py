import click

from bkctl.options import output_option, sandbox_dir_option, settings_option


@click.command()
@click.option("--bookies", type=click.IntRange(0, 32), default=3, show_default=True, help="Bookies to run.")
@click.option("--zk-port", type=click.IntRange(1, 65535), help="ZooKeeper's port [default: the last one, or free].")
@click.option("--no-init", is_flag=True, help="ZooKeeper only, left empty: no cluster, no bookies.")
@click.option("--autorecovery", is_flag=True, help="Also run `bkctl autorecovery run` (auditor and re-replication).")
@click.option(
    "--secure",
    is_flag=True,
    help="TLS and roles: a throw-away CA in DIR/tls, TLS required on the bookies, admin operations for bkctl's "
    "admin certificate only (bkctl here uses it by itself). A sandbox once secure stays so.",
)
@settings_option("A bookie configuration key for every bookie, e.g. --set journalSyncData=false (repeatable).")
@sandbox_dir_option
@output_option
@click.pass_obj
def start(
    app,
    bookies: int,
    zk_port: int | None,
    no_init: bool,
    autorecovery: bool,
    secure: bool,
    settings: dict,
    state_dir: str | None,
):
    """Start the sandbox: ZooKeeper on 127.0.0.1, a cluster in it, and its bookies

    Data survives `sandbox stop`: starting the same directory again brings the same cluster back. Starts only what
    does not run: a bookie still running is kept (also when ZooKeeper was down), a decommissioned one comes back
    formatted, as a new bookie. New bookies run
    with journalFlushWhenQueueEmpty=true and flushEntrylogBytes=524288, BookKeeper's settings for low add latency
    (--set overrides them). --set is written into every bookie's configuration; a bookie already running keeps its
    earlier value until it restarts (a warning names it).
    """
    from shlex import quote

    from bkctl.sandbox.render import show
    from bookie.local.sandbox import Sandbox, default_state_dir
    from bookie.local.zookeeper import zookeeper_classpath

    zookeeper_classpath()  # no ZooKeeper to run: one line saying where to get one, before anything is made

    sandbox = Sandbox(state_dir)
    try:
        sandbox.start(
            bookies=bookies,
            zk_port=zk_port,
            init=not no_init,
            settings=settings,
            autorecovery=autorecovery,
            secure=secure,
        )
    finally:
        for note in sandbox.notes:
            app.terminal.warn(note)
    show(app, sandbox.status())
    if sandbox.dir != default_state_dir().absolute():
        # the other commands look for the sandbox in BKCTL_SANDBOX_DIR (or the default directory), not in this one
        app.terminal.note(
            f"other bkctl commands use this sandbox with: export BKCTL_SANDBOX_DIR={quote(str(sandbox.dir))}"
        )

import click

from bkctl.bookie._offline import directory_options
from bkctl.options import output_option


@click.command("init")
@directory_options
@output_option
@click.pass_obj
def init_bookie(app, journal_dirs, ledger_dirs, index_dirs):
    """Check that a new bookie can start on these directories (initbookie)

    As BookKeeper's initbookie: its journal, ledger and index directories are empty, no bookie is registered
    under its id and the metadata store holds no cookie for it; the bookie's first start then writes its cookies.
    The directories and id are -c's bk_server.conf's. Exit 3 naming each problem (`bookie format` clears them).
    """
    from admin.offline.format import init_problems
    from bkctl.bookie._offline import bookie_config
    from bkctl.errors import CheckFailed
    from bookie.server.network import BookieNetwork

    config = bookie_config(app, journal_dirs, ledger_dirs, index_dirs)
    bookie_id = BookieNetwork.of(config).bookie_id
    problems = init_problems(app.metadata, bookie_id, config.all_dirs)
    doc = {"bookieId": bookie_id, "directories": [str(d) for d in config.all_dirs], "problems": problems}
    app.terminal.document(
        doc,
        lambda: app.terminal.line(f"bookie/{bookie_id} can be initialised here") if not problems else None,
    )
    for problem in problems:
        app.terminal.warn(problem)
    if problems:
        raise CheckFailed(f"bookie {bookie_id} cannot start as a new bookie here: {len(problems)} problem(s)")

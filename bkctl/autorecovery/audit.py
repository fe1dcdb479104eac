import click

from bkctl.options import output_option


@click.command("who-is-auditor")
@output_option
@click.pass_obj
def who_is_auditor(app):
    """Print the elected auditor (exit 5 when no autorecovery is running)"""
    from bookie.errors import NotFound
    from bookie.meta.underreplication import UnderReplicationManager

    auditor = UnderReplicationManager(app.metadata).auditor()
    if auditor is None:
        raise NotFound("no auditor: no `bkctl autorecovery run` is running")
    app.terminal.document({"auditor": auditor[1]}, lambda: app.terminal.line(auditor[1]))


@click.command("trigger-audit")
@output_option
@click.pass_obj
def trigger_audit(app):
    """Make the auditor look for lost bookies now and mark their ledgers without waiting for the delay

    Exit 5 when no auditor is running, 1 when autorecovery is disabled.
    """
    from bookie.meta.underreplication import UnderReplicationManager

    auditor = UnderReplicationManager(app.metadata).trigger_audit()
    app.terminal.document({"auditor": auditor}, lambda: app.terminal.line(f"audit triggered (auditor {auditor})"))

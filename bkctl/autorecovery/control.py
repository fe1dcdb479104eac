import click

from bkctl.options import dry_run_option, output_option
from bkctl.terminal import format_bytes, with_iso_times


@click.command()
@output_option
@click.pass_obj
def status(app):
    """Show whether autorecovery is enabled, its delay, the auditor, the workers and the under-replicated count

    Workers: the autorecovery processes standing in the auditor election, each a replication worker. Then each
    ledger a bkctl worker is re-replicating, and how far: entries and bytes copied, of the bytes its lost replicas
    hold (a BookKeeper worker does not say). Exit 3 when autorecovery is enabled but no auditor or no worker runs:
    nothing would re-replicate a lost bookie's ledgers.
    """
    from bkctl.errors import CheckFailed
    from bookie.meta.replication_progress import ReplicationProgress
    from bookie.meta.underreplication import UnderReplicationManager

    ur = UnderReplicationManager(app.metadata)
    replicating = [with_iso_times(p.doc(), "startedAt", "updatedAt") for p in ReplicationProgress(app.metadata).list()]
    auditor = ur.auditor()
    doc = {
        "enabled": ur.is_enabled(),
        "lostBookieRecoveryDelay": ur.lost_bookie_recovery_delay(),
        "auditor": auditor[1] if auditor else None,
        "workers": ur.workers(),
        "underReplicatedLedgers": ur.count(),
        "replicating": replicating,
    }

    def text():
        app.terminal.fields(
            [
                ("Autorecovery", "enabled" if doc["enabled"] else "disabled"),
                ("Lost bookie recovery delay", f"{doc['lostBookieRecoveryDelay']} s"),
                ("Auditor", doc["auditor"]),
                ("Replication workers", doc["workers"]),
                ("Under-replicated ledgers", doc["underReplicatedLedgers"]),
            ]
        )
        for p in replicating:
            app.terminal.line(
                f"ledger/{p['ledgerId']} being re-replicated by {p['worker']}: {p['entries']} entries, "
                f"{format_bytes(p['bytes'])} of about {format_bytes(p['totalBytes'])} copied"
            )

    app.terminal.document(doc, text)
    if doc["enabled"] and (doc["auditor"] is None or not doc["workers"]):
        raise CheckFailed(
            "autorecovery is enabled but no auditor or replication worker runs: nothing will re-replicate the "
            "ledgers of a lost bookie (`bkctl autorecovery run` starts both)"
        )


def _toggle(app, enabled: bool, dry_run: bool) -> None:
    from bookie.meta.underreplication import UnderReplicationManager

    word = "enabled" if enabled else "disabled"
    if not dry_run:
        UnderReplicationManager(app.metadata).set_enabled(enabled)
    app.terminal.document(
        {"enabled": enabled, "dryRun": dry_run},
        lambda: app.terminal.line(f"autorecovery would be {word} (dry run)" if dry_run else f"autorecovery {word}"),
    )


@click.command()
@dry_run_option
@output_option
@click.pass_obj
def enable(app, dry_run):
    """Let the replication workers re-replicate marked ledgers"""
    _toggle(app, True, dry_run)


@click.command()
@dry_run_option
@output_option
@click.pass_obj
def disable(app, dry_run):
    """Pause the replication workers (ledgers are still marked)"""
    _toggle(app, False, dry_run)


@click.command("lost-bookie-recovery-delay")
# BookKeeper's auditor parses the znode as a Java int: a larger value would break it, not wait longer
@click.option("--set", "seconds", type=click.IntRange(0, 2**31 - 1), metavar="SECONDS", help="Set the delay.")
@output_option
@click.pass_obj
def lost_bookie_recovery_delay(app, seconds):
    """Show or set how long the auditor waits before marking a lost bookie's ledgers"""
    from bookie.meta.underreplication import UnderReplicationManager

    ur = UnderReplicationManager(app.metadata)
    if seconds is not None:
        ur.set_lost_bookie_recovery_delay(seconds)
    value = ur.lost_bookie_recovery_delay()
    app.terminal.document({"lostBookieRecoveryDelay": value}, lambda: app.terminal.line(f"{value} s"))

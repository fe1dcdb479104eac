"""bench write / bench read: the ledger client against the cluster."""

import click

from bkctl.completers import complete_ledger_ids
from bkctl.options import output_option, quorum_options


def _show(app, result: dict, what: str) -> None:
    lat = result["latencyMs"]
    app.terminal.document(
        result,
        lambda: app.terminal.fields(
            [
                (what, f"{result['entries']:,} entries in {result['seconds']} s"),
                ("Throughput", f"{result['entriesPerSec']:,} entries/s, {result['mbPerSec']} MB/s"),
                (
                    "Latency" if "latencyWindow" not in result else f"Per {result['latencyWindow']:,} entries",
                    f"p50 {lat['p50']} ms, p95 {lat['p95']} ms, p99 {lat['p99']} ms, max {lat['max']} ms",
                ),
                (
                    "CPU",
                    f"{result['cpuSeconds']} s in this process "
                    f"({result['cpuSeconds'] / max(result['entries'], 1) * 1e5:.2f} s per 100k entries)",
                ),
            ]
        ),
    )


def _delete_interrupted(app, created: list[int], exc: KeyboardInterrupt) -> KeyboardInterrupt:
    """Interrupted (Ctrl-C, SIGTERM): the bench ledgers are deleted, as they would have been at the end; say so."""
    from bookie.daemon import interruption
    from bookie.errors import NoSuchLedger

    for ledger_id in created:
        try:
            app.client.delete_ledger(ledger_id)
        except NoSuchLedger:
            pass  # the benchmark's own clean-up got there first
    what = (
        f"bench ledger{'s' if len(created) > 1 else ''} {', '.join(map(str, created))} deleted"
        if created
        else "no bench ledger was created"
    )
    return type(exc)(f"{interruption(exc)} ({what})")


def _workload(command):
    for option in reversed(
        [
            click.option("--entry-size", type=click.IntRange(1), default=1024, show_default=True),
            click.option("--ledgers", type=click.IntRange(1), default=1, show_default=True),
            click.option(
                "--max-outstanding",
                type=click.IntRange(1),
                default=5000,
                show_default=True,
                help="Adds in flight at most.",
            ),
            click.option("--entries", type=click.IntRange(1), help="Stop after this many entries."),
            click.option("--time", "seconds", type=click.FloatRange(0.1), help="Stop after this many seconds."),
        ]
    ):
        command = option(command)
    return quorum_options(command)


@click.command()
@_workload
@click.option("--rate", type=click.FloatRange(1), help="Entries per second to offer [default: as fast as possible].")
@output_option
@click.pass_obj
def write(app, ensemble, write_quorum, ack_quorum, entry_size, ledgers, max_outstanding, entries, seconds, rate):
    """Write entries through the ledger client; report entries/s, MB/s and add latency (p50/p95/p99/max)

    Without --entries or --time it writes for 10 seconds. The ledgers are deleted afterwards, also when a write
    fails or the command is interrupted (Ctrl-C, SIGTERM).
    """
    from admin.bench import client

    if entries is None and seconds is None:
        seconds = 10.0
    created: list[int] = []
    try:
        with app.terminal.progress("writing", total=entries) as advance:
            result, _ = app.client.run(
                client.write(
                    app.client.core,
                    ensemble,
                    write_quorum,
                    ack_quorum,
                    entry_size,
                    ledgers,
                    max_outstanding,
                    entries,
                    seconds,
                    rate,
                    advance,
                    created=created,
                )
            )
    except KeyboardInterrupt as exc:
        raise _delete_interrupted(app, created, exc) from None
    _show(app, result, "Wrote")


@click.command()
@_workload
@click.option(
    "--ledger",
    "ledger_id",
    type=int,
    shell_complete=complete_ledger_ids,
    help="Read this closed bench ledger instead of writing one first.",
)
@output_option
@click.pass_obj
def read(app, ensemble, write_quorum, ack_quorum, entry_size, ledgers, max_outstanding, entries, seconds, ledger_id):
    """Read a closed ledger sequentially through the client; report entries/s, MB/s and time per 4096 entries

    The time per window of 4096 entries, or of a tenth of a shorter ledger (-o json: latencyMs, per latencyWindow
    entries). Without --ledger it first writes one (--entries, default 100,000; not timed), reads it, and deletes
    it (also when interrupted).
    """
    from admin.bench import client

    created: list[int] = []
    try:
        if ledger_id is None:
            _, (ledger_id,) = app.client.run(
                client.write(
                    app.client.core,
                    ensemble,
                    write_quorum,
                    ack_quorum,
                    entry_size,
                    1,
                    max_outstanding,
                    entries or 100_000,
                    None,
                    None,
                    keep=True,
                    created=created,
                )
            )
        with app.terminal.progress("reading") as advance:
            result = app.client.run(client.read(app.client.core, ledger_id, advance))
    except KeyboardInterrupt as exc:
        raise _delete_interrupted(app, created, exc) from None
    except BaseException:
        for created_id in created:
            app.client.delete_ledger(created_id)
        raise
    for created_id in created:
        app.client.delete_ledger(created_id)
    _show(app, result, "Read")

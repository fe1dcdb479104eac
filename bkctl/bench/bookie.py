import click

from bkctl.completers import complete_bookie_ids
from bkctl.options import output_option


@click.command()
@click.option(
    "--bookie",
    "bookie_id",
    metavar="BOOKIE",
    shell_complete=complete_bookie_ids,
    help="The bookie to drive [default: the first writable].",
)
@click.option("--entry-size", type=click.IntRange(1, 4 << 20), default=1024, show_default=True)
@click.option("--entries", type=click.IntRange(1), default=200_000, show_default=True)
@click.option("--ledgers", type=click.IntRange(1), default=1, show_default=True)
@click.option(
    "--batch",
    "batch_entries",
    type=click.IntRange(1),
    default=256,
    show_default=True,
    help="Adds sent together (one write).",
)
@click.option(
    "--max-outstanding",
    type=click.IntRange(1),
    default=32,
    show_default=True,
    help="Such groups in flight: lower it to see latency at lighter load.",
)
@click.option(
    "--raw-dir",
    type=click.Path(file_okay=False),
    help="Where to run the raw fsync loop [default: the sandbox's directory, else the temp dir].",
)
@click.option(
    "--storage",
    type=click.Choice(["interleaved", "db"]),
    help="Start a bookie of this storage for the run (InterleavedLedgerStorage or DbLedgerStorage; in a temporary "
    "directory beside the raw loop's, registered in the cluster while it runs, then stopped and its cookie "
    "removed), drive it, restart it, and read everything back in order: its sequential reads.",
)
@output_option
@click.pass_obj
def bookie(app, bookie_id, entry_size, entries, ledgers, batch_entries, max_outstanding, raw_dir, storage):
    """Drive one bookie (ours or Java) with pipelined adds, no ledger client, and compare with a raw fsync loop

    Reports entries/s, MB/s and p50/p95/p99/max add latency, then the same disk's raw group-commit append+fsync
    rate with the same entry size, and the ratio of the two. With --storage, a bookie of that storage of its own,
    and its sequential read rate after a restart (DbLedgerStorage's read-ahead, or the interleaved index).
    """
    import tempfile
    from pathlib import Path

    from admin.bench.bookie import BookieBench, raw_group_commit, scratch_bookie
    from bookie.errors import InvalidArgument, NotEnoughBookies
    from bookie.local.bookies import wait_registered
    from bookie.local.sandbox import Sandbox
    from bookie.meta.registration import BookieRegistry

    sandbox = Sandbox()
    directory = Path(raw_dir) if raw_dir else (sandbox.dir if sandbox.running() else Path(tempfile.gettempdir()))
    registry = BookieRegistry(app.metadata)
    if storage:
        if bookie_id:
            raise InvalidArgument("give --bookie or --storage, not both")
        with (
            tempfile.TemporaryDirectory(dir=directory, prefix=f"bench-{storage}-") as scratch,
            scratch_bookie(app.metadata, str(app.service_uri), storage, Path(scratch)) as started,
        ):
            target = registry.get(started.bookie_id)
            app.terminal.info(f"driving a {storage} bookie {target.bookie_id}: {entries} entries of {entry_size} bytes")
            bench = BookieBench(
                target.bookie_id, target.address(), entry_size, entries, ledgers, batch_entries, max_outstanding
            )
            result = bench.run()
            started.stop()
            started.start()
            wait_registered(app.metadata, [started])
            result["sequentialRead"] = bench.read_back()
            result["storage"] = storage
    else:
        if bookie_id:
            target = registry.get(bookie_id)
        else:
            writable = registry.list()
            if not writable:
                raise NotEnoughBookies("no writable bookie to benchmark")
            target = writable[0]
        app.terminal.info(f"driving bookie {target.bookie_id}: {entries} entries of {entry_size} bytes")
        result = BookieBench(
            target.bookie_id, target.address(), entry_size, entries, ledgers, batch_entries, max_outstanding
        ).run()
    raw = raw_group_commit(directory, entry_size, entries)
    result["rawEntriesPerSec"] = raw["entriesPerSec"]
    result["ratio"] = round(result["entriesPerSec"] / raw["entriesPerSec"], 3) if raw["entriesPerSec"] else None
    result["bookieId"] = target.bookie_id

    def table():
        lat = result["latencyMs"]
        app.terminal.fields(
            [
                ("Bookie", target.bookie_id),
                ("Entries", f"{entries} x {entry_size} B in {result['seconds']} s"),
                ("Throughput", f"{result['entriesPerSec']:,} entries/s, {result['mbPerSec']} MB/s"),
                ("Add latency", f"p50 {lat['p50']} ms, p95 {lat['p95']} ms, p99 {lat['p99']} ms, max {lat['max']} ms"),
                ("Raw fsync loop", f"{raw['entriesPerSec']:,} entries/s ({directory})"),
                ("Ratio", result["ratio"]),
                *(
                    [
                        (
                            "Sequential reads",
                            f"{read['entriesPerSec']:,} entries/s, {read['mbPerSec']} MB/s "
                            f"({read['usPerEntry']} us/entry, {storage} storage, after a restart)",
                        )
                    ]
                    if (read := result.get("sequentialRead"))
                    else []
                ),
            ]
        )

    app.terminal.document(result, table)

import click

from bkctl.options import output_option, quorum_options


@click.command()
@quorum_options
@click.option("-n", "--entries", type=click.IntRange(1), default=1000, show_default=True)
@output_option
@click.pass_obj
def simpletest(app, ensemble, write_quorum, ack_quorum, entries):
    """Create a ledger, write entries, read them back, verify, delete it: a health probe (exit 1 on failure)"""
    import os
    import time

    from bookie.errors import BKError

    payloads = [os.urandom(16) + b"%08d" % i for i in range(entries)]
    ledger = app.client.create_ledger(ensemble, write_quorum, ack_quorum, "crc32c", b"simpletest")
    try:
        started = time.perf_counter()
        ledger.add_entries(payloads)
        ledger.close()
        wrote = time.perf_counter() - started
        started = time.perf_counter()
        reader = app.client.open_ledger(ledger.ledger_id, b"simpletest", recovery=False)
        got = [e.payload for e in reader.iter_entries(0, reader.last_add_confirmed)]
        read_seconds = time.perf_counter() - started
    finally:
        app.client.delete_ledger(ledger.ledger_id)
    if got != payloads:
        raise BKError(f"ledger {ledger.ledger_id}: read back {len(got)} entries that differ from the {entries} written")
    doc = {
        "ledgerId": ledger.ledger_id,
        "entries": entries,
        "writeSeconds": round(wrote, 3),
        "readSeconds": round(read_seconds, 3),
        "ok": True,
    }
    app.terminal.document(
        doc,
        lambda: app.terminal.line(
            f"ok: ledger {ledger.ledger_id}, {entries} entries written in {wrote:.2f} s and read back in "
            f"{read_seconds:.2f} s, then deleted"
        ),
    )

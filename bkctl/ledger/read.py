import click

from bkctl.completers import complete_ledger_ids
from bkctl.options import output_option, password_options, read_password


def _render(payload: bytes, fmt: str) -> str:
    import base64

    if fmt == "hex":
        return payload.hex()
    if fmt == "base64":
        return base64.b64encode(payload).decode()
    return payload.decode("utf-8", "replace")


@click.command()
@click.argument("ledger_id", metavar="ID", shell_complete=complete_ledger_ids)
@click.option("--from", "first", type=click.IntRange(0), default=0, help="First entry [default: 0].")
@click.option("--to", "last", type=click.IntRange(0), help="Last entry [default: the last one, or the LAC].")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "hex", "base64", "raw"]),
    default="text",
    show_default=True,
    help="How payloads are printed; raw writes the bytes back to back.",
)
@click.option("--follow", is_flag=True, help="Keep reading new entries of an open ledger as they are confirmed.")
@password_options
@output_option
@click.pass_obj
def read(app, ledger_id, first, last, fmt, follow, password, password_file):
    """Print a ledger's entries, one per line (-o json: a JSON array of objects; with --follow, one object a line)

    Never fences: an open ledger is read up to its LAC, and its writer keeps going. A corrupt replica is reported
    on stderr and the entry read from another one. -o json and yaml give each entry's ledgerId, entryId, length
    and payload (base64).
    """
    import base64

    from bkctl.ledger.entry_range import entry_range
    from bookie.meta.paths import parse_ledger_id

    lid = parse_ledger_id(ledger_id)
    handle = app.client.open_ledger(lid, read_password(password, password_file), recovery=False)
    end = entry_range(lid, first, last, handle.last_add_confirmed, follow)

    def batches():
        """The entries, as read: up to ``end``, then (--follow) as the LAC moves on."""
        yield handle.iter_entries(first, end)
        position = max(end, first - 1)
        while follow and (last is None or position < last):
            lac = handle.wait_for_lac(position, timeout=10)
            if lac > position:
                stop = lac if last is None else min(lac, last)
                yield handle.iter_entries(position + 1, stop)
                position = stop
            elif app.client.ledger_metadata(lid).is_closed and handle.read_lac() <= position:
                return  # closed and fully read

    def checked(batch):
        """A batch, then the corrupt replicas met while reading it (on stderr)."""
        seen = len(handle.corruptions)
        yield from batch
        for message in handle.corruptions[seen:]:
            app.terminal.warn(message)

    if app.terminal.output in ("json", "yaml"):

        def entry_doc(entry):
            payload = base64.b64encode(entry.payload).decode()
            return {"ledgerId": lid, "entryId": entry.entry_id, "length": len(entry.payload), "payload": payload}

        entries = (entry for batch in batches() for entry in checked(batch))
        app.terminal.documents(entries, entry_doc, lines=follow)
        return
    for batch in batches():
        app.terminal.payloads(
            e.payload if fmt == "raw" else _render(e.payload, fmt).encode() + b"\n" for e in checked(batch)
        )

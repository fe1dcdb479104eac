import click

from bkctl.options import key_values, output_option, password_options, quorum_options, read_password


def _chunks(stream):
    """The input in raw reads of its file descriptor. Not through its buffered reader: the client reads the input
    on a thread of its own, and a read blocked in a buffered reader (a quiet pipe) holds the reader's lock, which
    an interrupted command's exit then waits for and aborts on."""
    import io
    import os

    try:
        fd = stream.fileno()
    except (AttributeError, OSError, io.UnsupportedOperation):  # an in-memory stream: it never blocks
        yield from iter(lambda: stream.read(1 << 16), b"")
        return
    while chunk := os.read(fd, 1 << 16):
        yield chunk


def _records(stream, delimiter: str):
    if delimiter == "none":
        yield b"".join(_chunks(stream))
        return
    rest = b""
    for chunk in _chunks(stream):
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        yield from lines
    if rest:
        yield rest


@click.command()
@quorum_options
@click.option(
    "--digest",
    type=click.Choice(["crc32", "crc32c", "mac", "dummy"], case_sensitive=False),
    default="crc32c",
    show_default=True,
)
@password_options
@click.option(
    "--meta", "custom", multiple=True, callback=key_values(), metavar="KEY=VALUE", help="Custom metadata (repeatable)."
)
@click.option("--input", "source", type=click.File("rb"), help="Entries to write: a file, or - for stdin.")
@click.option(
    "--delimiter",
    type=click.Choice(["newline", "none"]),
    default="newline",
    show_default=True,
    help="newline: one entry per line; none: the whole input is one entry.",
)
@click.option("--no-close", is_flag=True, help="Leave the ledger open after writing.")
@output_option
@click.pass_obj
def create(
    app, ensemble, write_quorum, ack_quorum, digest, password, password_file, custom, source, delimiter, no_close
):
    """Create a ledger, write one entry per input record, and close it; print its id

    If writing fails (an oversized entry, too few bookies) or the command is interrupted (Ctrl-C, SIGTERM), the
    ledger is closed at its last acknowledged entry, and the error names it and how many entries it holds; a
    ledger nothing was written to is deleted again. Acknowledged entries are never deleted.
    """
    from bookie.daemon import interruption
    from bookie.errors import BKError

    secret = read_password(password, password_file)
    metadata = {key: value.encode() for key, value in custom.items()}
    ledger = app.client.create_ledger(ensemble, write_quorum, ack_quorum, digest, secret, metadata)
    entries = 0
    try:
        if source is not None:
            with app.terminal.progress(f"ledger {ledger.ledger_id}") as advance:

                def counted():
                    nonlocal entries
                    for record in _records(source, delimiter):
                        entries += 1
                        advance()
                        yield record

                ledger.add_entries(counted())
        md = None if no_close else ledger.close()
    except (BKError, KeyboardInterrupt) as exc:
        reason = str(exc) if isinstance(exc, BKError) else interruption(exc)
        raise type(exc)(f"{reason} ({_wind_up(app, ledger, no_close)})") from None
    doc = {
        "ledgerId": ledger.ledger_id,
        "entries": entries,
        "length": ledger.length,
        "state": md.state.name if md else "OPEN",
    }
    app.terminal.document(doc, lambda: app.terminal.line(str(ledger.ledger_id)))


def _wind_up(app, ledger, no_close: bool) -> str:
    """What becomes of a ledger whose writing failed or was interrupted; says so. Acknowledged entries are kept:
    closed at the last one (left OPEN with --no-close, or when closing fails: then recovery closes it). Only a
    ledger without any acknowledged entry is deleted again."""
    from bookie.errors import BKError

    lid = ledger.ledger_id
    md = failure = None
    if not no_close:
        try:  # first, as it waits for the adds in flight: some may still be acknowledged
            md = ledger.close_acknowledged()
        except BKError as exc:
            failure = exc
    acknowledged = ledger.last_add_confirmed + 1
    if acknowledged == 0:
        try:
            app.client.delete_ledger(lid)
        except BKError as exc:
            return f"ledger {lid} left with no entry: deleting it failed: {exc}"
        return f"ledger {lid} deleted again: nothing written"
    if md is not None:
        return f"ledger {lid} closed with its {md.last_entry_id + 1} acknowledged entries"
    if no_close:
        return f"ledger {lid} left OPEN (--no-close) with {acknowledged} acknowledged entries"
    try:  # a recovery may have closed it meanwhile (the writer was fenced): then say how
        md = app.client.ledger_metadata(lid)
    except BKError:
        md = None
    if md is not None and md.is_closed:
        return f"ledger {lid} was closed by its recovery with {md.last_entry_id + 1} entries"
    return (
        f"ledger {lid} left OPEN with {acknowledged} acknowledged entries: closing it failed ({failure}); "
        f"`bkctl ledger recover {lid}` closes it"
    )

"""Offline tools over a (stopped) bookie's files, reading them with the same format modules the bookie uses."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from bkctl.options import output_option

if TYPE_CHECKING:
    from bkctl.app import Application


@click.group()
def inspect():
    """Read a bookie's journal, entry log, index, lastMark or DbLedgerStorage index files offline"""


@inspect.command()
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--ledger", "ledger_id", type=int, help="Only this ledger's records.")
@output_option
@click.pass_obj
def journal(app, path, ledger_id):
    """List a journal file's records: offset, kind, ledger, entry, size (like BookKeeper's readjournal)

    Damaged records are skipped up to the next whole write and reported on stderr (exit 3), so an operator sees
    what a bookie refuses to replay, and what follows the damage.
    """
    from pathlib import Path

    from bkctl.errors import CheckFailed
    from bookie.storage.journal import JournalScan

    scan = JournalScan(Path(path), skip_corruption=True)
    records = (r for r in scan if ledger_id is None or r.ledger_id == ledger_id)
    app.terminal.stream(
        records,
        ["OFFSET", "KIND", "LEDGER", "ENTRY", "SIZE"],
        lambda r: [r.offset, r.kind, r.ledger_id, r.entry_id if r.kind == "entry" else None, len(r.data)],
        lambda r: {
            "offset": r.offset,
            "kind": r.kind,
            "ledgerId": r.ledger_id,
            "entryId": r.entry_id if r.kind == "entry" else None,
            "size": len(r.data),
        },
        empty="no records",
    )
    if scan.unfinished is not None:
        offset, count = scan.unfinished
        app.terminal.warn(
            f"{path}: {count} records from offset {offset} are a write a crash cut short (never acknowledged, not "
            "replayed, not listed)"
        )
    if scan.torn_tail is not None:
        app.terminal.warn(f"{path}: torn tail at offset {scan.torn_tail} (the last write cut short by a crash)")
    for damage in scan.skipped:
        app.terminal.warn(
            f"{path}: corrupt journal record at offset {damage.offset} ({damage.reason}); "
            f"{damage.resume - damage.offset} bytes skipped"
        )
    if scan.skipped:
        raise CheckFailed(
            f"{path}: {len(scan.skipped)} damaged region(s); a bookie refuses to replay this journal "
            "unless started with --skip-journal-corruption"
        )


@inspect.command()
@click.argument("path", type=click.Path(exists=True))
@click.option("--ledger", "ledger_id", type=int, help="Only this ledger's entries.")
@click.option("--map", "map_only", is_flag=True, help="Only the ledgers map (rebuilt by scanning when missing).")
@click.option(
    "--usage",
    is_flag=True,
    help="PATH is a ledger directory: the usage of each of its entry logs, as garbage collection sees it.",
)
@click.option(
    "--index-dir",
    type=click.Path(exists=True, file_okay=False),
    multiple=True,
    help="With --usage: the bookie's index directories, when not PATH (repeat it: with several ledger or index "
    "directories, all of them, so that a ledger indexed on another disk counts as live).",
)
@output_option
@click.pass_obj
def entrylog(app, path, ledger_id, map_only, usage, index_dir):
    """List an entry log's entries (position, size, ledger, entry) or its ledgers map (like readlog)

    With --usage, PATH is a stopped bookie's ledger directory: per entry log, its size, the bytes of ledgers the
    bookie still has an index for, and the usage (what minor and major compaction compare to their thresholds).
    """
    from pathlib import Path

    from bookie.errors import InvalidArgument
    from bookie.storage.entry_log import read_ledgers_map, rebuild_ledgers_map, scan_log

    if usage:
        _usage(app, Path(path), [Path(d) for d in index_dir or [path]])
        return
    if Path(path).is_dir():
        raise InvalidArgument(f"{path} is a directory: name an entry log file, or pass --usage")
    if map_only:
        stored = read_ledgers_map(Path(path))
        ledgers = stored if stored is not None else rebuild_ledgers_map(Path(path))
        source = "stored" if stored is not None else "rebuilt"
        docs = [{"ledgerId": lid, "bytes": size, "map": source} for lid, size in sorted(ledgers.items())]
        app.terminal.document(
            docs,
            lambda: app.terminal.table(
                ["LEDGER", "BYTES", "MAP"], [[d["ledgerId"], d["bytes"], d["map"]] for d in docs], "empty entry log"
            ),
        )
        return
    entries = (e for e in scan_log(Path(path)) if ledger_id is None or e[2] == ledger_id)
    app.terminal.stream(
        entries,
        ["POS", "SIZE", "LEDGER", "ENTRY"],
        list,
        lambda e: {"pos": e[0], "size": e[1], "ledgerId": e[2], "entryId": e[3]},
        empty="no entries",
    )


def _usage(app, ledger_dir, index_dirs) -> None:
    from functools import partial

    from bookie.errors import NotFound
    from bookie.storage.db.kv import LEDGERS, has_database
    from bookie.storage.dirs import LedgerDirs
    from bookie.storage.entry_log import list_log_ids, log_path
    from bookie.storage.gc import entry_log_usage
    from bookie.storage.ledger_cache import LedgerCache

    if not (ledger_dir / "current").is_dir():
        raise NotFound(f"{ledger_dir} is not a ledger directory (no current/ in it)")
    log_ids = list_log_ids(ledger_dir)
    db_dirs = [d for d in dict.fromkeys(index_dirs) if has_database(d, LEDGERS)]
    if db_dirs:  # DbLedgerStorage: its ledgers indexes
        from bookie.storage.db.offline import ledgers

        local = {lid for d in db_dirs for lid in ledgers(d)}
    else:
        local = set(LedgerCache(LedgerDirs(list(dict.fromkeys(index_dirs)))).ledger_ids())
    logs = entry_log_usage(partial(log_path, ledger_dir), log_ids, local.__contains__)
    docs: list[dict[str, Any]] = [
        {
            "logId": m.log_id,
            "file": f"{m.log_id:x}.log",
            "totalSize": m.total_size,
            "remainingSize": m.remaining_size,
            "usage": round(m.usage, 4),
            "ledgers": len(m.ledgers),
        }
        for m in logs
    ]
    rows = [[d["file"], d["totalSize"], d["remainingSize"], f"{100 * d['usage']:.1f}%", d["ledgers"]] for d in docs]
    app.terminal.document(
        docs, lambda: app.terminal.table(["LOG", "BYTES", "LIVE", "USAGE", "LEDGERS"], rows, "no entry logs")
    )


@inspect.command()
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@output_option
@click.pass_obj
def index(app, path):
    """Show an index file's header (master key, fenced, explicit LAC) and entry -> location (like `ledger`)"""
    from pathlib import Path

    from bookie.storage.entry_log import split_location
    from bookie.storage.index import ENTRIES_PER_PAGE, LOCATION, IndexFile, ledger_id_of

    file = IndexFile(Path(path).parent, ledger_id_of(Path(path)) or 0, path=Path(path))
    header = file.read_header()
    locations = []
    for page_no in range(file.page_count()):
        page = file.read_page(page_no)
        for slot in range(ENTRIES_PER_PAGE):
            loc = LOCATION.unpack_from(page, slot * 8)[0]
            if loc:
                locations.append((page_no * ENTRIES_PER_PAGE + slot, *split_location(loc)))
    file.close()
    doc = {
        "ledgerId": ledger_id_of(Path(path)),
        "masterKey": header.master_key.hex(),
        "fenced": header.fenced,
        "explicitLac": header.explicit_lac.hex() if header.explicit_lac else None,
        "entries": [{"entryId": e, "logId": log_id, "pos": pos} for e, log_id, pos in locations],
    }

    def table():
        app.terminal.fields(
            [
                ("Ledger", doc["ledgerId"]),
                ("Master key", doc["masterKey"]),
                ("Fenced", "yes" if header.fenced else "no"),
                ("Explicit LAC", doc["explicitLac"]),
                ("Entries", len(locations)),
            ]
        )
        if locations:
            app.terminal.table(["ENTRY", "LOG", "POS"], [list(x) for x in locations])

    app.terminal.document(doc, table)


@inspect.command()
@click.argument("path", type=click.Path(exists=True))
@output_option
@click.pass_obj
def lastmark(app, path):
    """Show the lastMark of a ledger directory (or of a lastMark file): journal id and offset

    With several journal directories a ledger directory holds one mark per journal (lastMark.0, lastMark.1, ...):
    each is shown (-o json: a list, each with its file; with one journal, the one mark).
    """
    import re
    from pathlib import Path

    from bookie.errors import InvalidArgument, NotFound
    from bookie.storage.checkpoint import FILE, read_last_mark

    target = Path(path)
    pattern = re.compile(rf"{FILE}(\.\d+)?")
    if target.is_file() and not pattern.fullmatch(target.name):
        raise InvalidArgument(f"{path} is neither a ledger directory nor a {FILE} file")
    directory = target.parent.parent if target.is_file() else target
    names = (
        [target.name]
        if target.is_file()
        else sorted(
            (p.name for p in (directory / "current").glob(f"{FILE}*") if pattern.fullmatch(p.name)),
            key=lambda n: (len(n), n),
        )
    )
    marks = [(name, read_last_mark(directory, name)) for name in names]
    docs = [
        {"file": name, "journalId": m.journal_id, "journalFile": f"{m.journal_id:x}.txn", "offset": m.offset}
        for name, m in marks
        if m is not None
    ]
    if not docs:
        raise NotFound(f"no lastMark in {directory}/current")

    single = len(docs) == 1 and docs[0]["file"] == FILE

    def fields():
        for doc in docs:
            journal = f"{doc['journalFile']} (id {doc['journalId']})"
            mark = [] if single else [("Mark", doc["file"])]
            app.terminal.fields([*mark, ("Journal", journal), ("Offset", doc["offset"])])

    app.terminal.document({k: v for k, v in docs[0].items() if k != "file"} if single else docs, fields)


@inspect.command()
@click.argument("path", type=click.Path(exists=True, file_okay=False))
@click.option("--ledger", "ledger_id", type=int, help="Only this ledger's entries.")
@output_option
@click.pass_obj
def locations(app: Application, path: str, ledger_id: int | None) -> None:
    """List a DbLedgerStorage locations index: ledger, entry, entry log, position (like `ledger` on DbLedgerStorage)

    PATH is the bookie's index directory (its ledger directory unless indexDirectories is set), whose
    current/locations is the RocksDB database. Read-only: the index of a running bookie can be read too.
    """
    from pathlib import Path

    from bookie.storage.db.offline import locations as read_locations

    app.terminal.stream(
        read_locations(_db_dir(Path(path), "locations"), ledger_id),
        ["LEDGER", "ENTRY", "LOG", "POS"],
        list,
        lambda r: {"ledgerId": r[0], "entryId": r[1], "logId": r[2], "pos": r[3]},
        empty="no locations",
    )


@inspect.command()
@click.argument("path", type=click.Path(exists=True, file_okay=False))
@output_option
@click.pass_obj
def ledgers(app: Application, path: str) -> None:
    """List a DbLedgerStorage ledgers index: each ledger's fence, master key, explicit LAC and limbo state

    PATH is the bookie's index directory, whose current/ledgers is the RocksDB database. The master key itself is
    not shown (it is derived from the ledger's password), only whether the bookie has one.
    """
    from pathlib import Path

    from bookie.storage.db.offline import ledgers as read_ledgers

    found = read_ledgers(_db_dir(Path(path), "ledgers"))
    docs: list[dict[str, Any]] = [
        {
            "ledgerId": lid,
            "fenced": bool(d.fenced),
            "masterKey": bool(any(d.masterKey)),
            "explicitLac": bytes(d.explicitLac).hex() if d.HasField("explicitLac") else None,
            "limbo": bool(d.limbo),
        }
        for lid, d in sorted(found.items())
    ]
    rows = [
        [d["ledgerId"], _yes(d["fenced"]), _yes(d["masterKey"]), _yes(d["explicitLac"] is not None), _yes(d["limbo"])]
        for d in docs
    ]
    app.terminal.document(
        docs,
        lambda: app.terminal.table(["LEDGER", "FENCED", "MASTER KEY", "EXPLICIT LAC", "LIMBO"], rows, "no ledgers"),
    )


def _yes(value: object) -> str:
    return "yes" if value else "no"


def _db_dir(path: Path, name: str) -> Path:
    """The index directory of ``path``: the directory itself, or its parent when given ``current`` or the
    database's own directory."""
    from bookie.errors import NotFound
    from bookie.storage.db.kv import has_database

    for candidate in (path, path.parent, path.parent.parent):
        if has_database(candidate, name):
            return candidate
    raise NotFound(f"{path}: no DbLedgerStorage {name} index (current/{name}) in it")

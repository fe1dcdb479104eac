"""``bookie usage`` for people: a summary, the largest logs with their ledgers, the reasons."""

from __future__ import annotations

from admin.usage.reasons import plural
from bkctl.terminal import format_bytes


def _reclaim(reclaim, name: str) -> str:
    return f"{name} ({reclaim.threshold:g}): {format_bytes(reclaim.reclaimed)}, copying {format_bytes(reclaim.copied)}"


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds:.0f}s"


def show_usage(app, explained, doc: dict, top: int) -> None:
    """``doc``: the explanation's -o json document (admin/usage/explain.py's ``document``)."""
    view, terminal = explained.view, app.terminal
    reclaim = [_reclaim(explained.minor, "minor"), _reclaim(explained.major, "major")]
    if explained.at_threshold is not None:
        reclaim.append(_reclaim(explained.at_threshold, "at --threshold"))
    terminal.fields(
        [
            ("Bookie", f"{doc['bookieId']} ({view.source}, {view.storage}{', read-only' if view.read_only else ''})"),
            ("Bytes", ", ".join(f"{kind} {format_bytes(size)}" for kind, size in doc["bytesByKind"].items())),
            *[
                (f"Disk {d.kind}", f"{d.path}: {format_bytes(d.disk_free)} free of {format_bytes(d.disk_size)}")
                for d in view.dirs
            ],
            (
                "Entry logs",
                f"{format_bytes(doc['entryLogBytes'])} in {plural(len(explained.logs), 'log')}: "
                f"{format_bytes(doc['liveBytes'])} live, {format_bytes(doc['deadBytes'])} dead",
            ),
            (
                "Expected",
                f"{format_bytes(doc['expectedBytes'])} for {plural(doc['expectedLedgers'], 'ledger')}; "
                f"held {format_bytes(doc['entryLogBytes'])}, gap {format_bytes(max(0, doc['gapBytes']))}",
            ),
            ("Reclaimable", "; ".join(reclaim)),
        ]
    )
    logs = explained.logs[:top]
    if logs:
        terminal.line()
        terminal.table(
            ["LOG", "SIZE", "LIVE", "DEAD", "USAGE", "AGE", "LEDGERS", "NOTE"],
            [
                [
                    f"{log.log_id:x}",
                    format_bytes(log.size),
                    format_bytes(log.live),
                    format_bytes(log.dead),
                    f"{log.gc.usage:.0%}",
                    _age(log.age_s),
                    len(log.ledgers),
                    "active" if log.active else ("stalled" if log.stalled else ""),
                ]
                for log in logs
            ],
        )
        terminal.line()
        terminal.table(
            ["LOG", "LEDGER", "BYTES", "STATE", "OWNER"],
            [
                [f"{log.log_id:x}", ledger.ledger_id, format_bytes(size), str(ledger.state), ledger.owner]
                for log in logs
                for ledger, size in log.ledgers
            ],
            empty="no ledger in these logs",
        )
    if explained.reasons:
        terminal.line()
        terminal.table(
            ["REASON", "BYTES", "DETAIL"],
            [[r.reason, format_bytes(r.bytes), r.detail] for r in explained.reasons],
        )


def show_ledger(app, doc: dict) -> None:
    """``--ledger L``: the ledger on one bookie, then its logs."""
    expected = doc["expectedBytes"]
    app.terminal.fields(
        [
            ("Bookie", doc["bookieId"]),
            ("Ledger", f"{doc['ledgerId']} ({doc['state']})"),
            ("Owner", doc["owner"]),
            (
                "Expected",
                f"{format_bytes(expected)}, {doc['expectedEntries']} entries" if expected is not None else None,
            ),
            ("Held", f"{format_bytes(doc['heldBytes'])} in {plural(len(doc['logs']), 'log')}"),
        ]
    )
    if doc["logs"]:
        app.terminal.line()
        app.terminal.table(
            ["LOG", "BYTES", "LOG SIZE", "KEPT BY"],
            [
                [f"{d['logId']:x}", format_bytes(d["bytes"]), format_bytes(d["logBytes"]), d["keptBy"]]
                for d in doc["logs"]
            ],
        )
    if doc["entries"]:
        app.terminal.line()
        app.terminal.table(
            ["ENTRIES", "LOG"],
            [
                [f"{r['first']}-{r['last']}" if r["last"] > r["first"] else r["first"], f"{r['logId']:x}"]
                for r in doc["entries"]
            ],
        )

"""How cookies are shown: ``describe``-style fields for people, their JSON document for scripts; a change as one
line (``cookie/10.0.0.7:3181 created``), or its document with what happened (``"result": "created"``)."""

from __future__ import annotations


def show_cookie(app, doc: dict) -> None:
    def fields() -> None:
        app.terminal.fields(
            [
                ("Bookie", doc["bookieId"]),
                ("Instance id", doc["instanceId"]),
                ("Journal dirs", doc["journalDirs"]),
                ("Ledger dirs", doc["ledgerDirs"]),
                ("Index dirs", doc["indexDirs"]),
                *([("Znode version", doc["znodeVersion"])] if "znodeVersion" in doc else []),
            ]
        )

    app.terminal.document(doc, fields)


def show_change(app, doc: dict, result: str, **extra) -> None:
    """``result``: what happened, e.g. ``created``, ``would be deleted (dry run)``."""
    app.terminal.document(
        {**doc, **extra, "result": result}, lambda: app.terminal.line(f"cookie/{doc['bookieId']} {result}")
    )

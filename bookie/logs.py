"""Log records on stderr: one line each, as text for people or as JSON for log shippers (``--log-format``,
``BKCTL_LOG_FORMAT``).

text: ``2026-11-25T09:44:45.109+00:00 INFO bookie.server.bookie: message``. A record's line breaks (a traceback's)
are written as ``\\n``, so that every line a shipper or ``journalctl`` reads is one whole record.
json: one object per line, ``{"time", "level", "logger", "message"}``, and ``"exception"`` with the traceback's
text when the record has one.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import datetime

FORMATS = ("text", "json")
ENV = "BKCTL_LOG_FORMAT"


def _time(record: logging.LogRecord) -> str:
    """ISO 8601 with the UTC offset: unambiguous across hosts and time zones, and sorted as text."""
    return datetime.fromtimestamp(record.created).astimezone().isoformat(timespec="milliseconds")


def _traceback(formatter: logging.Formatter, record: logging.LogRecord) -> str:
    """The record's exception as text ("" when it has none); ``exc_text`` is where logging caches it."""
    return record.exc_text or (formatter.formatException(record.exc_info) if record.exc_info else "")


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = f"{_time(record)} {record.levelname} {record.name}: {record.getMessage()}"
        if traceback := _traceback(self, record):
            line += "\n" + traceback
        if record.stack_info:
            line += "\n" + self.formatStack(record.stack_info)
        return line.replace("\n", "\\n")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        document = {
            "time": _time(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if traceback := _traceback(self, record):
            document["exception"] = traceback
        return json.dumps(document, ensure_ascii=False)


class _StderrHandler(logging.StreamHandler):
    """Writes to the current ``sys.stderr`` (click's test runner swaps it per command)."""

    def __init__(self) -> None:
        super().__init__()

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


def configure(level: int, log_format: str = "text") -> None:
    """Log records of ``level`` and above to stderr in ``log_format``; called again, it changes both."""
    root = logging.getLogger()
    handler = next((h for h in root.handlers if isinstance(h, _StderrHandler)), None)
    if handler is None:
        handler = _StderrHandler()
        root.addHandler(handler)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    handler.setLevel(level)
    root.setLevel(level)


def configure_server(log_format: str, debug: bool = False) -> None:
    """A long-running process's logging (a bookie, autorecovery): INFO (DEBUG with ``debug``) in ``log_format``.
    ZooKeeper connection losses matter to its operator; kazoo's routine chatter does not (shown with ``debug``)."""
    configure(logging.DEBUG if debug else logging.INFO, log_format)
    logging.getLogger("kazoo").setLevel(logging.DEBUG if debug else logging.WARNING)

"""Log records: one line each, as text or JSON (bookie.logs)."""

import json
import logging

from bookie.logs import JsonFormatter, TextFormatter


def record(message="stored %d entries", args=(3,), level=logging.WARNING, exc_info=None, name="bookie.x"):
    return logging.LogRecord(name, level, __file__, 1, message, args, exc_info)


def failed():
    try:
        raise ValueError("bad\nvalue")
    except ValueError:
        import sys

        return sys.exc_info()


def test_text_is_one_line_with_time_level_logger_and_message():
    line = TextFormatter().format(record(exc_info=failed()))
    assert "\n" not in line
    time, level, logger, message = line.split(" ", 3)
    assert time[:4].isdigit() and time[10] == "T" and time[-6] in "+-"  # ISO 8601, with the offset
    assert (level, logger) == ("WARNING", "bookie.x:")
    assert message.startswith("stored 3 entries\\nTraceback (most recent call last):\\n")
    assert message.endswith("ValueError: bad\\nvalue")


def test_json_is_one_object_per_line_with_the_exception_in_one_field():
    line = JsonFormatter().format(record(exc_info=failed()))
    assert "\n" not in line
    document = json.loads(line)
    assert set(document) == {"time", "level", "logger", "message", "exception"}
    assert (document["level"], document["logger"], document["message"]) == ("WARNING", "bookie.x", "stored 3 entries")
    assert document["exception"].startswith("Traceback") and document["exception"].endswith("ValueError: bad\nvalue")
    assert "exception" not in json.loads(JsonFormatter().format(record()))

"""The one output object: progress goes to stderr on a terminal only, and can count megabytes too."""

import io
import sys

import pytest

from bkctl.terminal import Terminal, iso_time, with_iso_times


class TerminalStream(io.StringIO):
    def isatty(self):
        return True


def test_progress_counts_items_and_bytes_on_a_terminal(monkeypatch):
    stderr = TerminalStream()
    monkeypatch.setattr(sys, "stderr", stderr)
    with Terminal().progress("export 3 ledgers", total=10, total_bytes=2_000_000) as advance:
        advance(5, 1_000_000)
    assert "export 3 ledgers" in stderr.getvalue() and "5/10" in stderr.getvalue()
    assert "976.6 KiB/1.9 MiB" in stderr.getvalue()


def test_progress_with_bytes_shows_their_rate_and_the_time_they_leave(monkeypatch):
    stderr = TerminalStream()
    monkeypatch.setattr(sys, "stderr", stderr)
    import rich.progress  # noqa: F401 - rich keeps its own clock (time.monotonic bound at its import)

    now = [100.0]  # whatever looks first (the bar's start, its refresh thread): 100, then 2 s later from the advance
    monkeypatch.setattr("time.monotonic", lambda: now[0])
    with Terminal().progress("moving", total=4, unit="replicas", total_bytes=4 << 20) as advance:
        now[0] = 102.0
        advance(1, 1 << 20)
    shown = stderr.getvalue()
    assert "1/4" in shown and "1.0 MiB/4.0 MiB" in shown
    assert "512.0 KiB/s ETA 0:06" in shown  # 3 MiB left at 512 KiB/s


def test_no_progress_when_stderr_is_not_a_terminal(monkeypatch, capsys):
    with Terminal().progress("export", total=10, total_bytes=100) as advance:
        advance(5, 50)
    assert capsys.readouterr() == ("", "")


def test_a_stream_with_widths_known_up_front_prints_each_row_as_it_comes(capsys):
    printed = []

    def rows():
        for ledger_id in (1, 22):
            printed.append(capsys.readouterr().out)  # what was on stdout when this row was made
            yield ledger_id

    Terminal().stream(rows(), ["LEDGER", "N"], lambda i: [f"ledger/{i}", i], dict, "none", widths=[9, 0])
    assert printed[1] == "LEDGER      N\nledger/1    1\n"
    assert capsys.readouterr().out == "ledger/22   22\n"


def test_times_in_milliseconds_get_an_iso_8601_twin():
    assert iso_time(1_795_608_000_123) == "2026-11-25T12:00:00.123Z"
    assert iso_time(0) is None and iso_time(None) is None  # 0: BookKeeper's "never"
    doc = with_iso_times({"ledgerId": 3, "ctime": 1_795_608_000_000, "length": 9}, "ctime")
    assert list(doc.items()) == [
        ("ledgerId", 3),
        ("ctime", 1_795_608_000_000),
        ("ctimeIso", "2026-11-25T12:00:00.000Z"),
        ("length", 9),
    ]


def test_a_streamed_json_array_prints_nothing_when_the_first_item_fails(capsys):
    def failing():
        raise OSError("ZooKeeper went away")
        yield  # a generator

    terminal = Terminal(output="json")
    with pytest.raises(OSError):
        terminal.documents(failing(), lambda item: item)
    assert capsys.readouterr().out == ""
    assert terminal.documents(iter([1, 2]), lambda i: {"n": i}) == 2
    assert capsys.readouterr().out == '[\n  {"n": 1},\n  {"n": 2}\n]\n'

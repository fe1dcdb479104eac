"""The one output object: progress goes to stderr on a terminal only, and can count megabytes too."""

import io
import sys

from bkctl.terminal import Terminal


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


def test_no_progress_when_stderr_is_not_a_terminal(monkeypatch, capsys):
    with Terminal().progress("export", total=10, total_bytes=100) as advance:
        advance(5, 50)
    assert capsys.readouterr() == ("", "")

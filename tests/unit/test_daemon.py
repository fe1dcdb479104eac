"""The core's own processes (python -m bookie.server, python -m bookie.autorecovery): how an error or a signal ends
them, in the codes of bkctl's table."""

import signal

import pytest

from bkctl.errors import ExitCode, exit_code_for
from bookie import daemon
from bookie.errors import BKError, ClusterAlreadyInitialised, EntryTooLarge, InvalidArgument


@pytest.fixture(autouse=True)
def sigterm_restored():
    """daemon.run takes SIGTERM for the process: give pytest's handler back."""
    previous = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, previous)


def test_each_status_means_what_it_means_in_bkctls_table():
    assert (daemon.OK, daemon.FAILED, daemon.USAGE) == (ExitCode.OK, ExitCode.FAILED, ExitCode.USAGE)
    assert (daemon.INTERRUPTED, daemon.TERMINATED) == (ExitCode.INTERRUPTED, ExitCode.TERMINATED)


@pytest.mark.parametrize(
    "error",
    [InvalidArgument("bad key"), EntryTooLarge("too large"), BKError("cannot start"), ClusterAlreadyInitialised("x")],
)
def test_an_error_is_one_line_and_the_status_bkctl_gives_it(error, capsys):
    def main():
        raise error

    with pytest.raises(SystemExit) as ended:
        daemon.run(main)
    assert ended.value.code == exit_code_for(error)
    assert capsys.readouterr().err == f"error: {error}\n"


@pytest.mark.parametrize(
    ("interrupt", "line"),
    [(KeyboardInterrupt(), "error: interrupted"), (daemon.Terminated(), "error: terminated")],
)
def test_an_interrupt_exits_as_bkctl_does(interrupt, line, capsys):
    def main():
        raise interrupt

    with pytest.raises(SystemExit) as ended:
        daemon.run(main)
    assert ended.value.code == exit_code_for(interrupt)
    assert capsys.readouterr().err == line + "\n"


def test_a_clean_stop_exits_0(capsys):
    with pytest.raises(SystemExit) as ended:
        daemon.run(lambda: None)
    assert ended.value.code == 0 and capsys.readouterr().err == ""


def test_a_log_format_from_the_environment_is_checked(monkeypatch, capsys):
    monkeypatch.setenv("BKCTL_LOG_FORMAT", "xml")
    with pytest.raises(SystemExit) as ended:
        daemon.parse(daemon.parser("p", "d"), [])
    assert (
        ended.value.code == daemon.USAGE
        and "BKCTL_LOG_FORMAT='xml' is not one of text, json" in capsys.readouterr().err
    )

"""The core's own processes (python -m bookie.server, python -m bookie.autorecovery): how an error or a signal ends
them, in the codes of bkctl's table."""

import resource
import signal
import subprocess
import sys

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


def test_the_open_file_limit_is_raised_to_the_hard_one_and_half_goes_to_index_files():
    """A distribution's 1024 would have let a bookie keep fewer than 1024 ledgers' index files open: the JVM raises it
    for a Java bookie, and so does run_bookie."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard <= 256:
        pytest.fail(f"this test needs a finite hard limit on open files above 256, not {hard}")
    script = "from bookie import daemon; print(daemon.raise_open_file_limit(), daemon.index_file_budget())"
    out = subprocess.run(
        [sys.executable, "-c", script],
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard)),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert [int(n) for n in out] == [hard, hard // 2]

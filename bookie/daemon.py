"""What the core's own processes share — ``python -m bookie.server`` and ``python -m bookie.autorecovery``, which the
local harness and the sandbox start (bookie.local), so that the core never runs the CLI: their common option, how
SIGTERM reaches them, and how they end.

``bkctl bookie run`` and ``bkctl autorecovery run`` run the same functions, and exit with the codes of bkctl's one
table (bkctl/errors.py). These processes use a subset of those codes, each meaning what it means there
(tests/unit/test_daemon.py holds them together): 0 stopped cleanly, 1 failed, 2 a configuration or argument refused,
130 Ctrl-C, 143 SIGTERM before the process took that signal for its clean stop; an error is one line on stderr.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import signal
import sys
from collections.abc import Callable
from types import FrameType
from typing import NoReturn

from bookie.errors import BKError, InvalidArgument
from bookie.logs import ENV, FORMATS

OK, FAILED, USAGE, INTERRUPTED, TERMINATED = 0, 1, 2, 130, 143


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C's KeyboardInterrupt, so that the same clean-up paths run."""


def collect_less() -> None:
    """For a process that has started (its modules imported, its start-up objects made) and now moves entries:
    the start-up objects never die, so they leave every later collection (``gc.freeze``); young collections are
    fewer and larger (most per-entry objects die by reference counting anyway). A bookie: max add latency at 10k
    entries/s fell from 66-74 ms to 39-41 ms in alternating runs. bkctl reading a ledger: ~10% less CPU per entry
    (perf: a tenth of the client's CPU was the collector), either transport."""
    gc.freeze()  # no gc.collect() first: ~35 ms on every bkctl command that makes a client, for little garbage
    gc.set_threshold(50_000, 20, 50)


def raise_open_file_limit() -> int:
    """Raise the soft limit on open files to the hard one, as the JVM does for a Java bookie (``-XX:+MaxFDLimit``, on
    by default), and return the soft limit in force: a bookie keeps up to ``openFileLimit`` index files open, and
    distributions start processes with 1024."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (ValueError, OSError):  # an infinite hard limit above the kernel's nr_open: keep the soft one
            pass
    return soft


def index_file_budget() -> int:
    """How many index files a bookie may keep open: half the files this process may open (the rest are its sockets,
    journals, entry logs and RocksDB's files)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return (1 << 30) if soft == resource.RLIM_INFINITY else max(soft // 2, 16)


def raise_terminated(_signum: int, _frame: FrameType | None) -> None:
    """A SIGTERM handler: :class:`Terminated` in the main thread."""
    raise Terminated()


def interruption(exc: KeyboardInterrupt) -> str:
    """How an interrupt is reported: its own message if it has one (what was cleaned up), else what it was."""
    return str(exc) or ("terminated" if isinstance(exc, Terminated) else "interrupted")


def parser(prog: str, description: str) -> argparse.ArgumentParser:
    """An argument parser with the option every core process takes (``--log-format``); usage errors exit 2."""
    parsed = argparse.ArgumentParser(prog=prog, description=description)
    parsed.add_argument(
        "--log-format",
        choices=FORMATS,
        default=os.environ.get(ENV, "text"),
        help=f"log records on stderr: one line of text each, or one JSON object per line [env {ENV}; default: text]",
    )
    return parsed


def parse(parsed: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    args = parsed.parse_args(argv)
    if args.log_format not in FORMATS:  # argparse does not check a default against the choices
        parsed.error(f"{ENV}={args.log_format!r} is not one of {', '.join(FORMATS)}")
    return args


def run(main: Callable[[], None]) -> NoReturn:
    """Run ``main`` as the process's whole life, then exit with its status. Until ``main`` takes SIGTERM for its own
    clean stop (a bookie's event loop does), SIGTERM raises :class:`Terminated`, as Ctrl-C raises KeyboardInterrupt."""
    signal.signal(signal.SIGTERM, raise_terminated)
    try:
        main()
    except BKError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(USAGE if isinstance(exc, InvalidArgument) else FAILED)
    except KeyboardInterrupt as exc:
        print(f"error: {interruption(exc)}", file=sys.stderr)
        sys.exit(TERMINATED if isinstance(exc, Terminated) else INTERRUPTED)
    sys.exit(OK)

"""What the offline commands on a stopped bookie's files share: its directories, from its configuration (BookKeeper's
or ours) or flags, and the locks that refuse a running bookie."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from bkctl.options import settings_option

if TYPE_CHECKING:
    from bkctl.app import Application

F = TypeVar("F", bound=Callable[..., object])


def offline_options(command: F) -> F:
    """``--conf``, ``--journal-dir``, ``--ledger-dir``, ``--index-dir``, ``--set``: the bookie's directories."""
    for option in reversed(
        [
            click.option("--conf", "conf_file", type=click.Path(dir_okay=False), help="The bookie's bk_server.conf."),
            click.option("--journal-dir", type=click.Path(file_okay=False), help="journalDirectories."),
            click.option("--ledger-dir", type=click.Path(file_okay=False), help="ledgerDirectories."),
            click.option("--index-dir", type=click.Path(file_okay=False), help="indexDirectories."),
            settings_option("Any configuration key, e.g. --set ledgerDirectories=/d1,/d2 (repeatable)."),
        ]
    ):
        command = option(command)
    return command


@dataclass
class BookieDirs:
    journal: list[Path]
    ledger: list[Path]
    index: list[Path]  # one per ledger directory, of the same rank

    def pairs(self) -> list[tuple[Path, Path]]:
        return list(zip(self.ledger, self.index, strict=True))


def bookie_dirs(
    app: Application,
    conf_file: str | None,
    journal_dir: str | None,
    ledger_dir: str | None,
    index_dir: str | None,
    settings: dict[str, str],
) -> BookieDirs:
    """The directories of the configuration (``--conf``, else bkctl's ``-c``), with the flags over it."""
    from bookie.errors import InvalidArgument
    from bookie.server.config import BookieConfig

    overrides = dict(settings)
    for key, value in (
        ("journalDirectories", journal_dir),
        ("ledgerDirectories", ledger_dir),
        ("indexDirectories", index_dir),
    ):
        if value is not None:
            overrides[key] = str(value)
    config = BookieConfig.load(conf_file or app.conf_path, overrides)
    ledgers = [Path(d) for d in config.dirs("ledgerDirectories")]
    indexes = [Path(d) for d in config.dirs("indexDirectories")] or ledgers
    if len(indexes) != len(ledgers):
        raise InvalidArgument("ledgerDirectories and indexDirectories must list as many directories")
    for directory in {*ledgers, *indexes}:
        if not (directory / "current").is_dir():
            raise InvalidArgument(f"{directory} is not a bookie directory (no current/ in it)")
    return BookieDirs([Path(d) for d in config.dirs("journalDirectories")], ledgers, indexes)


@contextlib.contextmanager
def stopped(dirs: BookieDirs) -> Iterator[None]:
    """Hold the bookie's directory locks (bookie/server/claim.py) while changing its files: a running bookie of ours
    holds them, and refuses us. A running Java bookie holds no such lock; with DbLedgerStorage it holds RocksDB's
    own lock, which refuses the databases' opening."""
    from bookie.errors import BKError
    from bookie.server.claim import DirectoryLocked, DirectoryLocks

    locks = DirectoryLocks()
    try:
        locks.acquire([*dirs.journal, *dirs.ledger, *dirs.index])
    except DirectoryLocked as exc:
        raise BKError(f"the bookie is running: stop it first ({exc})") from None
    try:
        yield
    finally:
        locks.release()

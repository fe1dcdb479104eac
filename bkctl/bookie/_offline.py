"""What the offline bookie commands share: the bookie's directories, from -c's bk_server.conf as BookKeeper's shell
takes them from its -conf, or from flags; and the guarantee that no bookie of ours runs on them."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import click


def directory_options(command):
    """``--journal-dir``, ``--ledger-dir``, ``--index-dir`` (each repeatable): override -c's directories."""
    for name, key in (
        ("index", "indexDirectories"),
        ("ledger", "ledgerDirectories"),
        ("journal", "journalDirectories"),
    ):
        command = click.option(
            f"--{name}-dir",
            f"{name}_dirs",
            multiple=True,
            type=click.Path(file_okay=False),
            help=f"{key} (repeat it for several) [default: those of -c's bk_server.conf].",
        )(command)
    return command


def bookie_config(app, journal_dirs=(), ledger_dirs=(), index_dirs=()):
    """The stopped bookie's configuration: -c's bk_server.conf, its directories replaced by the flags given."""
    from bookie.errors import InvalidArgument
    from bookie.server.config import BookieConfig

    overrides = {
        key: ",".join(dirs)
        for key, dirs in (
            ("journalDirectories", journal_dirs),
            ("ledgerDirectories", ledger_dirs),
            ("indexDirectories", index_dirs),
        )
        if dirs
    }
    if not app.conf_path and not ({"journalDirectories", "ledgerDirectories"} <= overrides.keys()):
        raise InvalidArgument("name the bookie's directories: -c its bk_server.conf, or --journal-dir and --ledger-dir")
    return BookieConfig.load(app.conf_path, overrides)


@contextlib.contextmanager
def stopped(config, action: str) -> Iterator[None]:
    """Hold the bookie's directory locks (bookie/server/claim.py) while ``action`` runs: a bookie of ours running
    on them refuses it (exit 3). Only directories with a ``current/`` are locked (no bookie runs on the others). A
    Java bookie takes no such lock: stop it first."""
    from bookie.errors import Unsafe
    from bookie.server.claim import DirectoryLocked, DirectoryLocks

    locks = DirectoryLocks()
    try:
        locks.acquire([d for d in config.all_dirs if (d / "current").is_dir()])
        yield
    except DirectoryLocked as exc:
        raise Unsafe(f"cannot {action}: {exc}; stop that bookie first") from None
    finally:
        locks.release()


def dir_pairs(config) -> list[tuple[Path, Path]]:
    """Each ledger directory with the index directory of its rank, as DbLedgerStorage pairs them (one
    SingleDirectoryDbLedgerStorage each); every one must hold a bookie's files."""
    from bookie.errors import InvalidArgument

    if len(config.index_dirs) != len(config.ledger_dirs):
        raise InvalidArgument("ledgerDirectories and indexDirectories must list as many directories")
    for directory in {*config.ledger_dirs, *config.index_dirs}:
        if not (directory / "current").is_dir():
            raise InvalidArgument(f"{directory} is not a bookie directory (no current/ in it)")
    return list(zip(config.ledger_dirs, config.index_dirs, strict=True))


def require_ledger_dirs(config) -> None:
    """NotFound unless some ledger directory holds a bookie's files (a ``current/``)."""
    from bookie.errors import NotFound

    if not any((d / "current").is_dir() for d in config.ledger_dirs):
        dirs = ", ".join(map(str, config.ledger_dirs))
        raise NotFound(f"no bookie files in {dirs} (no current/ in any of them): not the bookie's directories?")

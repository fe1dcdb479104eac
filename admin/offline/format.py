"""bookieformat and initbookie on a stopped bookie's directories (BookieImpl.format, BookKeeperAdmin.initBookie).

Format empties every journal, ledger and index directory (each one's children, ``current`` with its cookie among
them), creating a missing one; the bookie then starts as a new bookie — with a new cookie, once its old one is gone
from the metadata store too. Init only checks that a new bookie could start here: every directory empty, no bookie
registered under its id, no cookie for it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from bookie.errors import NotFound
from bookie.files import fsync_dir, private_dirs
from bookie.meta.cookies import CookieStore
from bookie.meta.registration import BookieRegistry
from bookie.meta.store import MetadataStore

LOCK_FILE = "bookie.lock"  # a running format holds the bookie's lock (bookie/server/claim.py): not data


def format_plan(directories: list[Path]) -> list[Path]:
    """What format deletes: every child of each directory (the lock a formatting process holds aside)."""
    return [
        child
        for directory in directories
        if directory.is_dir()
        for child in sorted(directory.iterdir())
        if child.name != LOCK_FILE
    ]


def format_dirs(directories: list[Path]) -> list[Path]:
    """Empty the directories (BookieImpl.cleanDir), creating missing ones; return what was deleted. Durable on
    return: a power cut after a format must not bring the old cookie, journals and lastMark back."""
    deleted = format_plan(directories)
    for child in deleted:
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    for directory in directories:
        private_dirs(directory)
        fsync_dir(directory)
    return deleted


def init_problems(store: MetadataStore, bookie_id: str, directories: list[Path]) -> list[str]:
    """Why a new bookie could not start here (BookKeeperAdmin.initBookie's checks), empty when it could."""
    problems = [f"{d} is not empty (format the bookie first)" for d in directories if d.is_dir() and any(d.iterdir())]
    registered = {b.bookie_id for b in BookieRegistry(store).list(writable=True, readonly=True)}
    if bookie_id in registered:
        problems.append(f"bookie {bookie_id} is registered: a bookie with this id is running")
    try:
        CookieStore(store).read(bookie_id)
        problems.append(f"bookie {bookie_id} has a cookie in {CookieStore(store).path(bookie_id)} (format it first)")
    except NotFound:
        pass
    return problems

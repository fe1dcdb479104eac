"""The bookie's own files on a disk that loses power (tests/faults/lossyfs): each test here failed before the fix
it names, on the crash point given."""

from __future__ import annotations

import pytest
from faults.lossyfs.mount import fuse_missing

from admin.offline.format import format_dirs
from bookie.files import private_dirs, write_atomic

pytestmark = pytest.mark.root
if reason := fuse_missing():
    pytest.skip(f"lossyfs cannot mount here: {reason}", allow_module_level=True)


def test_directories_a_bookie_creates_survive_a_cut(disk):
    """A cut after the first start's cookie: ``<dir>/current`` (and ``<dir>``) came back missing, so the cookie and
    every journal and entry log in it were gone and the next start was refused (mkdir without fsyncing the parent)."""
    current = private_dirs(disk.mountpoint / "bookie" / "ledgers" / "current")
    write_atomic(current / "VERSION", b"cookie")
    disk.cut()
    disk.mount()
    assert (disk.mountpoint / "bookie" / "ledgers" / "current" / "VERSION").read_bytes() == b"cookie"


def test_a_format_stays_done_after_a_cut(disk):
    """Crash point: right after ``bkctl bookie format`` (before the bookie starts anew). The removals were never
    fsynced: the cut brought the old ``current`` back (its cookie, journals, lastMark), so the next start was
    refused (the cookie deleted from ZooKeeper) or ran on the old files instead of a new bookie."""
    journal, ledgers = disk.mountpoint / "journal", disk.mountpoint / "ledgers"
    for directory in (journal, ledgers):
        current = private_dirs(directory / "current")
        write_atomic(current / "VERSION", b"cookie")
    write_atomic(ledgers / "current" / "lastMark", b"\0" * 16)
    format_dirs([journal, ledgers, disk.mountpoint / "index"])
    disk.cut()
    disk.mount()
    assert [sorted(d.iterdir()) for d in (journal, ledgers)] == [[], []]
    assert (disk.mountpoint / "index").is_dir()


def test_a_first_start_cut_between_its_two_cookies_says_what_it_was(disk, cluster):
    """Crash point: a new bookie's cookie written to ZooKeeper, not yet to its directories. The next start is
    refused, as BookKeeper 4.17.4's is (it writes the directories' cookies first, without fsync, then ZooKeeper's:
    a cut after both leaves it this state too), and now says that a first start cut short leaves this."""
    from bookie.meta.cookies import CookieStore
    from bookie.server.config import BookieConfig
    from bookie.server.cookie_check import CookieMismatch, check_cookies

    journal, ledgers = disk.mountpoint / "journal", disk.mountpoint / "ledgers"
    config = BookieConfig.load(None, {"journalDirectories": str(journal), "ledgerDirectories": str(ledgers)})
    check = check_cookies(cluster, "127.0.0.1:3181", config)
    for directory in (journal, ledgers):
        private_dirs(directory / "current")  # and the first start's files
    CookieStore(cluster).write(check.cookie)
    disk.cut()
    disk.mount()
    with pytest.raises(CookieMismatch, match="a first start cut short between writing its cookie to ZooKeeper"):
        check_cookies(cluster, "127.0.0.1:3181", config)

"""The bookie's own files on a disk that loses power (tests/faults/lossyfs): each test here failed before the fix
it names, on the crash point given."""

from __future__ import annotations

import pytest
from faults.lossyfs.mount import LossyMount, fuse_missing

from bookie.files import private_dirs, write_atomic

pytestmark = pytest.mark.root
if reason := fuse_missing():
    pytest.skip(f"lossyfs cannot mount here: {reason}", allow_module_level=True)


@pytest.fixture
def disk(tmp_path):
    mount = LossyMount(tmp_path / "store", tmp_path / "mnt")
    mount.mount()
    yield mount
    mount.unmount()


def test_directories_a_bookie_creates_survive_a_cut(disk):
    """A cut after the first start's cookie: ``<dir>/current`` (and ``<dir>``) came back missing, so the cookie and
    every journal and entry log in it were gone and the next start was refused (mkdir without fsyncing the parent)."""
    current = private_dirs(disk.mountpoint / "bookie" / "ledgers" / "current")
    write_atomic(current / "VERSION", b"cookie")
    disk.cut()
    disk.mount()
    assert (disk.mountpoint / "bookie" / "ledgers" / "current" / "VERSION").read_bytes() == b"cookie"

"""The lossy disk mounted with FUSE, driven by the syscalls a bookie makes: a cut loses exactly what was not synced;
tears land on the boundary asked for; an armed cut fires right after the N-th sync and kills its process."""

from __future__ import annotations

import errno
import mmap
import os
import subprocess
import sys
import time

import pytest
from faults.lossyfs.mount import LossyMount, fuse_missing

pytestmark = pytest.mark.root
if reason := fuse_missing():
    pytest.skip(f"lossyfs cannot mount here: {reason}", allow_module_level=True)


def fsync_dir(path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def test_a_cut_keeps_what_was_synced_and_loses_the_rest(disk):
    root = disk.mountpoint
    (root / "current").mkdir()
    fsync_dir(root)
    with open(root / "current" / "journal", "wb") as f:
        f.write(b"acked" * 1000)
        f.flush()
        os.fsync(f.fileno())
        f.write(b"unacked" * 1000)
    (root / "current" / "not-synced").write_bytes(b"x" * 100)
    fsync_dir(root / "current")
    (root / "current" / "name-not-synced").write_bytes(b"y")
    with open(root / "current" / "VERSION.tmp", "wb") as f:
        f.write(b"cookie")
        f.flush()
        os.fsync(f.fileno())
    os.rename(root / "current" / "VERSION.tmp", root / "current" / "VERSION")  # the directory is not synced after

    assert [s.op for s in disk.syncs()] == ["fsyncdir", "fsync", "fsyncdir", "fsync"]
    assert set(disk.unsynced()) == {"/current/journal", "/current/not-synced", "/current/name-not-synced"}
    disk.cut()
    disk.mount()
    current = root / "current"
    assert sorted(os.listdir(current)) == ["journal", "not-synced"]
    assert (current / "journal").read_bytes() == b"acked" * 1000
    assert (current / "not-synced").read_bytes() == b""


def test_an_open_file_unlinked_stays_usable_and_leaves_its_directory_removable(disk):
    """A bookie's gc status reads an entry log compaction may have just removed: its fstat failed with ESTALE while
    lossyfs mounted with hard_remove (found by the crash-point sweep's delete-gc workload). ``bkctl bookie format``
    removes ``current`` while it holds ``current/bookie.lock`` open: without hard_remove, the file renamed to
    .fuse_hidden* stayed in the directory and rmdir failed with ENOTEMPTY (found by the format workload)."""
    current = disk.mountpoint / "journal" / "current"
    current.mkdir(parents=True)
    fd = os.open(current / "bookie.lock", os.O_CREAT | os.O_RDWR)
    try:
        os.unlink(current / "bookie.lock")
        assert os.listdir(current) == []
        assert os.pwrite(fd, b"pid", 0) == 3
        os.fsync(fd)
        assert os.fstat(fd).st_size == 3
        assert os.pread(fd, 3, 0) == b"pid"
        os.ftruncate(fd, 1)
        assert os.fstat(fd).st_size == 1
        os.rmdir(current)
        # the directory gone too, libfuse has no path left for the file: calls through its descriptor still work
        # (fstat, which the kernel sends without it, cannot: no bookie makes one there)
        assert os.pwrite(fd, b"id", 1) == 2
        os.fsync(fd)
        assert os.pread(fd, 3, 0) == b"pid"
    finally:
        os.close(fd)
    assert not current.exists()
    assert os.listdir(disk.mountpoint / "journal") == []


def test_a_clean_unmount_keeps_everything(disk):
    (disk.mountpoint / "d").mkdir()
    (disk.mountpoint / "d" / "f").write_bytes(b"z" * 9000)
    disk.unmount()
    disk.mount()
    assert (disk.mountpoint / "d" / "f").read_bytes() == b"z" * 9000


@pytest.mark.parametrize("tear", [512, 4096])
def test_the_last_unsynced_write_tears_on_the_boundary(disk, tear):
    path = disk.mountpoint / "log"
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
    os.write(fd, b"s" * 700)
    os.fsync(fd)
    os.write(fd, b"u" * 30000)  # one write (FUSE passes it whole: max_write is 128 KiB)
    fsync_dir(disk.mountpoint)
    tears = disk.cut(tear=tear, seed=11)
    try:
        os.close(fd)
    except OSError:  # the disk is gone
        pass
    disk.mount()
    data = path.read_bytes()
    [(torn_path, offset, kept)] = tears  # the kernel may split the write: the tear is in the last piece it passed
    assert torn_path == "/log" and offset >= 700 and offset + kept == len(data)
    assert len(data) % tear == 0 and 700 < len(data) < 30700
    assert data == b"s" * 700 + b"u" * (len(data) - 700)


def test_o_dsync_fdatasync_and_msync_are_syncs(disk):
    root = disk.mountpoint
    fd = os.open(root / "dsync", os.O_CREAT | os.O_WRONLY | os.O_DSYNC, 0o600)
    os.write(fd, b"d" * 100)
    os.close(fd)
    with open(root / "data", "wb") as f:
        f.write(b"f" * 100)
        f.flush()
        os.fdatasync(f.fileno())
    with open(root / "mapped", "wb") as f:
        f.truncate(8192)
        os.fsync(f.fileno())
    with open(root / "mapped", "r+b") as f, mmap.mmap(f.fileno(), 8192) as m:
        m[:5] = b"hello"
        m.flush()
    fsync_dir(root)

    ops = [s.op for s in disk.syncs()]
    assert "o_sync" in ops and "fdatasync" in ops and ops[-1] == "fsyncdir"
    disk.cut()
    disk.mount()
    assert (root / "dsync").read_bytes() == b"d" * 100
    assert (root / "data").read_bytes() == b"f" * 100
    assert (root / "mapped").read_bytes()[:5] == b"hello"


def test_an_armed_cut_fires_after_the_nth_sync_and_kills_the_writer(disk):
    """A writer syncs forever; armed at sync 5, the disk freezes after it, and the writer dies when the cut ends
    the disk: what it wrote after the 5th sync is not on the disk."""
    script = (
        "import os, sys\n"
        "fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o600)\n"
        "d = os.open(os.path.dirname(sys.argv[1]), os.O_RDONLY)\n"
        "sys.stdin.readline()\n"
        "os.fsync(d)\n"
        "n = 0\n"
        "while True:\n"
        "    n += 1\n"
        "    os.write(fd, b'%08d' % n)\n"
        "    os.fsync(fd)\n"
    )
    writer = subprocess.Popen(
        [sys.executable, "-c", script, str(disk.mountpoint / "w")], stdin=subprocess.PIPE, start_new_session=True
    )
    try:
        disk.arm(5, killpg=[writer.pid])  # the disk counts syncs from its mount: the writer starts once it is armed
        writer.stdin.write(b"go\n")
        writer.stdin.close()
        deadline = time.monotonic() + 30
        while not disk.frozen():
            assert time.monotonic() < deadline, "the armed cut never fired"
            time.sleep(0.05)
        syncs = disk.syncs()
        disk.cut()
        assert writer.wait(timeout=30) == -9
    finally:
        if writer.poll() is None:
            writer.kill()
    assert len(syncs) == 5 and [s.op for s in syncs] == ["fsyncdir"] + ["fsync"] * 4
    assert syncs == sorted(syncs, key=lambda s: s.at)
    disk.mount()
    assert (disk.mountpoint / "w").read_bytes() == b"".join(b"%08d" % n for n in range(1, 5))


def test_snapshots_hold_the_disk_after_each_sync(tmp_path):
    mount = LossyMount(tmp_path / "store", tmp_path / "mnt", snapshots=tmp_path / "snaps")
    mount.mount()
    try:
        with open(mount.mountpoint / "f", "wb") as f:
            for n in range(3):
                f.write(b"%d" % n * 10)
                f.flush()
                os.fsync(f.fileno())
        fsync_dir(mount.mountpoint)
    finally:
        mount.unmount()
    snaps = tmp_path / "snaps"
    assert sorted(int(p.name) for p in snaps.iterdir()) == [0, 1, 2, 3, 4, 5]  # 5: the unmount's sync
    sizes = [sum(f.stat().st_size for f in (snaps / str(n) / "inodes").glob("*")) for n in range(1, 4)]
    assert sizes == [10, 20, 30]
    assert not (snaps / "3" / "namespace.json").exists()  # the name "f" is durable from sync 4 on
    assert '"f"' in (snaps / "4" / "namespace.json").read_text()


def test_injected_errors_delays_and_free_space(disk):
    root = disk.mountpoint
    (root / "current").mkdir()
    (root / "current" / "0.log").write_bytes(b"entry" * 100)
    (root / "current" / "lastMark").write_bytes(b"mark")
    disk.inject("read", "*/0.log", "EIO")
    for _ in range(2):
        with pytest.raises(OSError) as failed:
            (root / "current" / "0.log").read_bytes()
        assert failed.value.errno == errno.EIO
    assert (root / "current" / "lastMark").read_bytes() == b"mark"
    [cleared] = disk.clear()
    assert cleared["hits"] >= 2  # the kernel retries a failed readahead: one read() may hit twice
    assert (root / "current" / "0.log").read_bytes() == b"entry" * 100

    disk.inject("sync", "/current/lastMark", None, delay=0.3)
    started = time.monotonic()
    with open(root / "current" / "lastMark", "rb") as f:
        os.fsync(f.fileno())
    assert time.monotonic() - started >= 0.3
    disk.inject("write", "*", "ENOSPC", count=1)
    with pytest.raises(OSError) as full:
        (root / "current" / "new").write_bytes(b"x")
    assert full.value.errno == errno.ENOSPC
    (root / "current" / "new").write_bytes(b"y")  # count 1: the next write works
    assert [(c["op"], c["hits"]) for c in disk.clear()] == [("sync", 1)]
    disk.set_usable(4096 * 10)
    assert os.statvfs(root).f_bavail * os.statvfs(root).f_frsize == 4096 * 10
    disk.set_usable(None)
    assert os.statvfs(root).f_bavail > 10

"""The lossy disk's model (tests/faults/lossyfs/model.py) without FUSE: what a power cut keeps and loses."""

from __future__ import annotations

import os

import pytest
from faults.lossyfs.model import Disk, Injection, materialize
from hypothesis import given, settings
from hypothesis import strategies as st


def reborn(disk: Disk, tear: int | None = None, seed: int = 0) -> Disk:
    disk.cut(tear, seed)
    return Disk(disk.store)


def write_file(disk: Disk, path: str, data: bytes, sync: bool) -> int:
    fh = disk.create(path, 0o600, os.O_WRONLY)
    disk.write(fh, data, 0)
    if sync:
        disk.fsync(fh, datasync=False)
    return fh


def test_unsynced_bytes_and_names_are_lost_synced_ones_kept(tmp_path):
    disk = Disk(tmp_path)
    disk.mkdir("/d", 0o700)
    disk.fsync_dir("/")
    write_file(disk, "/d/synced", b"a" * 5000, sync=True)
    write_file(disk, "/d/named-only", b"b" * 100, sync=False)
    disk.fsync_dir("/d")
    write_file(disk, "/d/never-named", b"c" * 100, sync=True)  # data synced, name not
    fh = disk.open("/d/synced", os.O_WRONLY)
    disk.write(fh, b"z" * 3000, 4000)  # unsynced overwrite and extension

    after = reborn(disk)
    assert sorted(after.listdir("/d")) == ["named-only", "synced"]
    assert after.read_path("/d/synced") == b"a" * 5000
    assert after.read_path("/d/named-only") == b""


def test_a_directory_whose_name_was_never_synced_is_gone_with_its_files(tmp_path):
    disk = Disk(tmp_path)
    disk.mkdir("/new", 0o700)
    write_file(disk, "/new/f", b"x", sync=True)
    disk.fsync_dir("/new")
    assert reborn(disk).listdir("/") == []


def test_rename_and_unlink_are_undone_until_the_directory_is_synced(tmp_path):
    disk = Disk(tmp_path)
    write_file(disk, "/cookie", b"old", sync=True)
    write_file(disk, "/gone", b"g", sync=True)
    disk.fsync_dir("/")
    write_file(disk, "/cookie.tmp", b"new", sync=True)
    disk.rename("/cookie.tmp", "/cookie")
    disk.unlink("/gone")

    after = reborn(disk)
    assert sorted(after.listdir("/")) == ["cookie", "gone"]
    assert after.read_path("/cookie") == b"old"

    write_file(after, "/cookie.tmp", b"new", sync=True)
    after.rename("/cookie.tmp", "/cookie")
    after.unlink("/gone")
    after.fsync_dir("/")
    again = reborn(after)
    assert again.listdir("/") == ["cookie"]
    assert again.read_path("/cookie") == b"new"


def test_a_file_libfuse_hides_is_unlinked_but_reachable_by_its_hidden_name(tmp_path):
    disk = Disk(tmp_path)
    disk.mkdir("/d", 0o700)
    disk.fsync_dir("/")
    fh = write_file(disk, "/d/log", b"entries", sync=True)
    disk.fsync_dir("/d")
    disk.rename("/d/log", "/d/.fuse_hidden0001")  # libfuse's unlink of an open file
    assert disk.listdir("/d") == []
    assert disk.attributes(disk.lookup("/d/.fuse_hidden0001"))["st_size"] == 7
    disk.fsync_dir("/d")
    disk.rmdir("/d")
    assert disk.read(fh, 7, 0) == b"entries"
    disk.release(fh)
    disk.unlink("/d/.fuse_hidden0001")  # libfuse, at the last close
    assert disk.hidden == {}
    assert reborn(disk).listdir("/d") == []  # the rmdir, never synced, is undone; the hidden name never existed


def test_truncate_then_extend_reads_zeros_and_survives_only_when_synced(tmp_path):
    disk = Disk(tmp_path)
    fh = write_file(disk, "/f", b"a" * 10000, sync=True)
    disk.fsync_dir("/")
    disk.truncate(None, 100, fh)
    disk.write(fh, b"b", 8000)
    assert disk.read_path("/f") == b"a" * 100 + bytes(7900) + b"b"
    assert reborn(disk).read_path("/f") == b"a" * 10000
    disk = Disk(tmp_path)
    fh = disk.open("/f", os.O_RDWR)
    disk.truncate(None, 100, fh)
    disk.write(fh, b"b", 8000)
    disk.fsync(fh, datasync=True)
    assert reborn(disk).read_path("/f") == b"a" * 100 + bytes(7900) + b"b"


def test_o_dsync_writes_are_synced_each_and_logged(tmp_path):
    disk = Disk(tmp_path)
    fh = disk.create("/j", 0o600, os.O_WRONLY | os.O_DSYNC)
    disk.fsync_dir("/")
    disk.write(fh, b"1234", 0)
    assert [(s.number, s.op, s.path) for s in disk.syncs] == [(1, "fsyncdir", "/"), (2, "o_sync", "/j")]
    assert reborn(disk).read_path("/j") == b"1234"


@pytest.mark.parametrize("tear", [512, 4096])
def test_a_torn_write_keeps_a_prefix_ending_on_the_boundary(tmp_path, tear):
    disk = Disk(tmp_path)
    fh = write_file(disk, "/journal", b"s" * 1000, sync=True)
    disk.fsync_dir("/")
    disk.write(fh, b"u" * 20000, 1000)  # unsynced: torn somewhere inside

    after = reborn(disk, tear=tear, seed=3)
    data = after.read_path("/journal")
    assert data[:1000] == b"s" * 1000
    assert len(data) % tear == 0 and 1000 < len(data) < 21000
    assert data[1000:] == b"u" * (len(data) - 1000)


def test_a_torn_overwrite_brings_back_what_the_lost_part_overwrote(tmp_path):
    disk = Disk(tmp_path)
    fh = write_file(disk, "/index", b"o" * 8192, sync=True)
    disk.fsync_dir("/")
    disk.write(fh, b"n" * 8192, 0)
    data = reborn(disk, tear=4096).read_path("/index")
    assert data == b"n" * 4096 + b"o" * 4096


def test_a_write_crossing_no_boundary_is_lost_whole_when_torn(tmp_path):
    disk = Disk(tmp_path)
    fh = write_file(disk, "/f", b"s" * 100, sync=True)
    disk.fsync_dir("/")
    disk.write(fh, b"u" * 300, 100)
    assert reborn(disk, tear=512).read_path("/f") == b"s" * 100


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["write", "fsync", "truncate"]), st.integers(0, 20000), st.integers(1, 9000)),
        max_size=25,
    )
)
def test_a_file_reads_as_written_and_after_a_cut_as_at_its_last_fsync(tmp_path_factory, ops):
    disk = Disk(tmp_path_factory.mktemp("store"))
    fh = disk.create("/f", 0o600, os.O_RDWR)
    disk.fsync_dir("/")
    live, synced = bytearray(), b""
    for n, (op, offset, length) in enumerate(ops):
        if op == "write":
            data = bytes([n % 251 + 1]) * length
            disk.write(fh, data, offset)
            live[len(live) :] = bytes(max(0, offset - len(live)))
            live[offset : offset + length] = data
        elif op == "truncate":
            disk.truncate(None, offset, fh)
            live = live[:offset] + bytes(max(0, offset - len(live)))
        else:
            disk.fsync(fh, datasync=False)
            synced = bytes(live)
        assert disk.read_path("/f") == live
    assert reborn(disk).read_path("/f") == synced


def test_materialize_lays_out_the_durable_tree(tmp_path):
    disk = Disk(tmp_path / "store")
    disk.mkdir("/current", 0o700)
    disk.fsync_dir("/")
    write_file(disk, "/current/lastMark", b"mark", sync=True)
    write_file(disk, "/current/unlinked", b"kept", sync=True)
    disk.fsync_dir("/current")
    disk.unlink("/current/unlinked")  # undone by the cut: its name is durable
    disk.cut()
    materialize(tmp_path / "store", tmp_path / "tree")
    assert sorted(p.name for p in (tmp_path / "tree" / "current").iterdir()) == ["lastMark", "unlinked"]
    assert (tmp_path / "tree" / "current" / "lastMark").read_bytes() == b"mark"
    assert oct((tmp_path / "tree" / "current").stat().st_mode & 0o777) == oct(0o700)


def test_a_short_write_takes_half_and_says_so(tmp_path):
    disk = Disk(tmp_path)
    disk.inject(Injection("write", "/f", error=None, short=True, count=1))
    fh = disk.create("/f", 0o600, os.O_WRONLY)
    assert disk.write(fh, b"abcdefgh", 0) == 4
    assert disk.write(fh, b"efgh", 4) == 4
    assert disk.read_path("/f") == b"abcdefgh"

"""The ledger directories' state machine (BookKeeper's LedgerDirsMonitor rules), on measured usage given by a table:
the real disk checker is exercised on small filesystems in tests/integration/server/test_disks.py."""

from pathlib import Path

import pytest

from bookie.storage.dirs import DiskSpace, DiskThresholds, LedgerDirs, NoWritableLedgerDir, disk_space

GB = 1 << 30
A, B, C = Path("/a"), Path("/b"), Path("/c")


class Disks:
    """Usage per directory, each on its own filesystem of 100 GB."""

    def __init__(self, **used: float):
        self.used = {Path("/" + k): v for k, v in used.items()}

    def __call__(self, d: Path) -> DiskSpace:
        return DiskSpace(int((1 - self.used[d]) * 100 * GB), 100 * GB, hash(d))


def make(disks: Disks, **thresholds) -> tuple[LedgerDirs, list]:
    events: list = []
    dirs = LedgerDirs(sorted(disks.used), DiskThresholds(**{"threshold": 0.9, "warn": 0.8, **thresholds}), disks)
    dirs.add_listener(lambda d, event: events.append((d, event)))
    return dirs, events


def test_one_full_dir_turns_read_only_alone_and_comes_back_under_the_threshold():
    disks = Disks(a=0.5, b=0.5, c=0.5)
    dirs, events = make(disks)
    assert not dirs.check() and dirs.writable == (A, B, C)
    disks.used[B] = 0.95
    assert dirs.check()
    assert dirs.writable == (A, C) and dirs.full == (B,) and dirs.has_writable and events == [(B, "full")]
    assert {dirs.pick_for_new_log() for _ in range(50)} == {A, C}
    assert {dirs.pick_for_new_index(exclude=A) for _ in range(20)} == {C}
    disks.used[B] = 0.85  # under the threshold (above warn): writable again while others are
    assert dirs.check() and dirs.writable == (A, B, C) and events[-1] == (B, "writable")
    assert dirs.usage(B) == pytest.approx(0.85)


def test_almost_full_is_told_so_that_an_entry_log_there_rolls():
    disks = Disks(a=0.85, b=0.1)
    dirs, events = make(disks)
    assert not dirs.check() and events == [(A, "almost_full")]


def test_all_full_needs_the_low_water_mark_to_come_back():
    disks = Disks(a=0.95, b=0.95)
    dirs, _ = make(disks, lwm=0.7)
    dirs.check()
    assert not dirs.has_writable and dirs.full == (A, B)
    disks.used[A] = 0.85  # A under the threshold, but all together (0.9) over the low water mark
    assert not dirs.check() and not dirs.has_writable
    disks.used[B] = 0.5  # 0.675 together: both under the threshold come back
    assert dirs.check() and dirs.writable == (A, B)


def test_with_no_writable_dir_new_files_go_where_room_is_left():
    disks = Disks(a=0.99, b=0.95)
    dirs, _ = make(disks, min_usable_for_new_log=2 * GB, min_usable_for_new_index=GB)
    dirs.check()
    assert dirs.pick_for_new_log() == B  # 5 GB left; A has 1 GB
    disks.used[B] = 0.999
    with pytest.raises(NoWritableLedgerDir, match="no writable directory among /a, /b"):
        dirs.pick_for_new_log()


def test_ledgers_are_bound_to_dirs_by_id_as_bookkeeper_does():
    dirs = LedgerDirs([A, B, C])
    assert [dirs.for_ledger(i) for i in (0, 1, 2, 3, -1, -2)] == [A, B, C, A, C, B]


def test_find_looks_in_every_dir_and_a_dir_twice_is_refused(tmp_path):
    dirs = LedgerDirs([tmp_path / "x", tmp_path / "y"])
    (tmp_path / "y" / "current" / "0").mkdir(parents=True)
    (tmp_path / "y" / "current" / "0" / "1.idx").write_bytes(b"")
    assert dirs.find("0/1.idx") == tmp_path / "y" / "current" / "0" / "1.idx"
    assert dirs.find("0/2.idx") is None
    with pytest.raises(ValueError, match="listed twice"):
        LedgerDirs([A, A])


def test_totals_count_one_filesystem_once(tmp_path):
    (tmp_path / "x").mkdir(), (tmp_path / "y").mkdir()
    dirs = LedgerDirs([tmp_path / "x", tmp_path / "y"])
    assert dirs.total_space() == disk_space(tmp_path).total

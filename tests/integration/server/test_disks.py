"""A bookie with several ledger disks, on real small filesystems: one disk filling up turns read-only alone (no new
entry log or index file goes there) while the bookie keeps writing to the others; all of them full make the bookie
read-only, and space given back makes it writable again."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from bookie.client import BookKeeper
from bookie.errors import NotFound
from bookie.meta.registration import BookieRegistry

from support.cluster import metrics
from support.waiting import wait_for

pytestmark = pytest.mark.root  # mounts small filesystems
FILLER = "filler"


@pytest.fixture
def disks(tmp_path):
    """Three 16 MB filesystems (tmpfs), unmounted at the end."""
    mounts = []
    try:
        for i in range(3):
            mount = tmp_path / f"disk{i}"
            mount.mkdir()
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)], check=True)
            mounts.append(mount)
        yield mounts
    finally:
        for mount in mounts:
            subprocess.run(["umount", "-l", str(mount)], check=True)


def fill(disk: Path, share: float) -> None:
    """Take the disk to ``share`` used with a filler file (or empty it of filler: share 0)."""
    filler = disk / FILLER
    filler.unlink(missing_ok=True)
    st = os.statvfs(disk)
    missing = int(share * st.f_blocks * st.f_frsize) - (st.f_blocks - st.f_bavail) * st.f_frsize
    if missing > 0:
        filler.write_bytes(bytes(missing))


def files(disk: Path, pattern: str) -> set[str]:
    return {p.name for p in (disk / "ledgers" / "current").glob(pattern)}


def write(uri: str, ledgers: int, entries: int) -> list[int]:
    with BookKeeper(uri) as bk:
        ids = []
        for _ in range(ledgers):
            ledger = bk.create_ledger(1, 1, 1)
            ledger.add_entries(b"%d-%d|" % (ledger.ledger_id, i) * 100 for i in range(entries))
            ledger.close()
            ids.append(ledger.ledger_id)
        return ids


def read_back(uri: str, ledger_ids: list[int], entries: int) -> None:
    with BookKeeper(uri) as bk:
        for ledger_id in ledger_ids:
            with bk.open_ledger(ledger_id, recovery=False) as reader:
                got = [e.payload for e in reader.iter_entries(0, entries - 1)]
                assert got == [b"%d-%d|" % (ledger_id, i) * 100 for i in range(entries)]


def test_a_full_ledger_disk_turns_read_only_alone_and_the_bookie_keeps_writing_to_the_others(
    harness, bkctl, cluster, disks
):
    uri = harness.service_uri
    (bookie,) = harness.start(
        1,
        ledgerDirectories=",".join(str(d / "ledgers") for d in disks),
        diskUsageThreshold=0.5,
        diskUsageWarnThreshold=0.45,
        diskCheckInterval=200,
        logSizeLimit=256 * 1024,
        minUsableSizeForIndexFileCreation=1 << 20,
    )
    writable_dirs = lambda: metrics(bookie).sum("bookie_ledger_writable_dirs")  # noqa: E731
    usage = lambda: sorted(s.value for s in metrics(bookie).matching(r"bookie_ledger_dir_.*_usage"))  # noqa: E731
    registry = BookieRegistry(cluster)

    def state():
        try:
            return registry.get(bookie.bookie_id).state
        except NotFound:  # between two registrations
            return None

    before = write(uri, 6, 300)  # ~1.8 MB over the three disks
    fill(disks[0], 0.7)
    wait_for(lambda: writable_dirs() == 2, "disk0 to turn read-only")
    wait_for(lambda: usage()[-1] > 69.9, "the disk check to see the whole filler")  # it may see it half written
    assert len(usage()) == 3 and usage()[0] < 45
    status = json.loads(bkctl("-u", uri, "bookie", "gc-status", bookie.bookie_id, "-o", "json").stdout)[0]
    assert [(d["path"], d["writable"]) for d in status["ledgerDirs"]] == [
        (str(d / "ledgers"), d != disks[0]) for d in disks
    ]
    assert "2/3" in bkctl("-u", uri, "bookie", "gc-status", bookie.bookie_id).stdout
    logs_on_full, indexes_on_full = files(disks[0], "*.log"), files(disks[0], "*/*/*.idx")
    logs_on_others = [files(disk, "*.log") for disk in disks[1:]]

    after = write(uri, 10, 1000)  # ~6 MB: new entry logs and ten new index files, on disk1 and disk2 only
    assert state() == "writable"
    assert files(disks[0], "*.log") == logs_on_full and files(disks[0], "*/*/*.idx") == indexes_on_full
    new_logs = [files(disk, "*.log") - known for disk, known in zip(disks[1:], logs_on_others, strict=True)]
    assert sum(map(len, new_logs)) >= 5  # in disk1 or disk2, at random
    read_back(uri, before + after, 300)

    for disk in disks[1:]:
        fill(disk, 0.9)
    wait_for(lambda: state() == "readonly", "the bookie to turn read-only")
    assert writable_dirs() == 0
    reasons = lambda: json.loads(bkctl("-u", uri, "bookie", "info", bookie.bookie_id, "-o", "json").stdout)[0][  # noqa: E731
        "readOnlyReasons"
    ]
    assert reasons() == ["disk-threshold"]
    # a second reason while read-only: the registration stays read-only and says both
    assert bkctl("-u", uri, "bookie", "readonly", bookie.bookie_id, "--on").exit_code == 0
    wait_for(lambda: reasons() == ["operator", "disk-threshold"], "both reasons published")
    off = bkctl("-u", uri, "bookie", "readonly", bookie.bookie_id, "--off")
    assert (off.exit_code, off.stdout) == (
        0,
        f"bookie/{bookie.bookie_id} stays read-only: every ledger (or index) directory is over diskUsageThreshold\n",
    )
    assert reasons() == ["disk-threshold"]  # registered before the bookie answered
    read_back(uri, before, 300)  # a read-only bookie still serves reads

    for disk in disks:
        fill(disk, 0)
    wait_for(lambda: state() == "writable", "the bookie to turn writable again")
    assert writable_dirs() == 3
    read_back(uri, write(uri, 1, 10), 10)

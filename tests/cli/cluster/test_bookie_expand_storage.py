"""`bookie expand-storage` on a real bookie (updatecookie --expandstorage): a ledger directory added to a stopped
bookie's configuration gets its cookie, the bookie restarts without allowStorageExpansion and writes to both
directories, its old ledgers read; and each refusal, with its exit code. (On a Java bookie: tests/interop/
test_expand_storage.py.)"""

import json
from pathlib import Path

import pytest

from bookie.client import BookKeeper
from bookie.meta.cookies import CookieStore, read_local_cookie

ENTRIES = 200


@pytest.fixture
def stopped_bookie(harness, tmp_path):
    """A bookie on one journal and one ledger dir, two ledgers of theirs written, then stopped. (bookie, ids)"""
    disks = tmp_path / "disks"
    (bookie,) = harness.start(
        1,
        journalDirectories=str(disks / "journal"),
        ledgerDirectories=str(disks / "ledgers0"),
        logSizeLimit=64 * 1024,
    )
    ids = write_ledgers(harness, 2)
    bookie.stop()
    return bookie, ids


def write_ledgers(harness, count: int) -> list[int]:
    ids = []
    with BookKeeper(harness.service_uri) as bk:
        for _ in range(count):
            ledger = bk.create_ledger(1, 1, 1, password=b"pw")
            ledger.add_entries(payload(ledger.ledger_id, i) for i in range(ENTRIES))
            ledger.close()
            ids.append(ledger.ledger_id)
    return ids


def payload(ledger_id: int, i: int) -> bytes:
    return b"%d:%d|" % (ledger_id, i) * 40


def reconfigure(harness, bookie, **settings) -> None:
    bookie.settings.update(settings)
    bookie.write_conf(harness.service_uri)


def expand(bkctl, bookie, *args):
    return bkctl("-c", str(bookie.conf_path), "bookie", "expand-storage", *args)


def logs(directory: str) -> set[str]:
    return {p.name for p in Path(directory, "current").glob("*.log")}


def test_a_ledger_directory_added_by_expand_storage_takes_writes_and_old_ledgers_read(
    bkctl, harness, stopped_bookie, tmp_path
):
    bookie, ids = stopped_bookie
    old, new = bookie.ledger_dirs[0], str(tmp_path / "disks" / "ledgers1")
    reconfigure(harness, bookie, ledgerDirectories=f"{old},{new}")
    cookies = CookieStore(harness.store)
    before = cookies.read(bookie.bookie_id)

    dry = expand(bkctl, bookie, "--dry-run", "-o", "json")
    assert dry.exit_code == 0, dry.stderr
    planned = json.loads(dry.stdout)
    assert (planned["result"], planned["addedDirs"], planned["ledgerDirs"]) == (
        "would be expanded (dry run)",
        [new],
        [old, new],
    )
    assert cookies.read(bookie.bookie_id) == before and read_local_cookie(new) is None  # nothing written

    done = expand(bkctl, bookie)
    assert (done.exit_code, done.stdout) == (0, f"{new} added\ncookie/{bookie.bookie_id} expanded\n"), done.stderr
    stored, version = cookies.read(bookie.bookie_id)
    assert (
        version == before[1] + 1 and stored.ledger_dirs == (old, new) and stored.journal_dirs == before[0].journal_dirs
    )
    assert all(read_local_cookie(d) == stored for d in bookie.data_dirs)
    again = expand(bkctl, bookie, "-o", "json")
    assert again.exit_code == 0 and json.loads(again.stdout)["result"] == "unchanged"
    cookies.write(before[0], version=version)  # as if cut short after stamping the directories: a rerun finishes it
    resumed = json.loads(expand(bkctl, bookie, "-o", "json").stdout)
    assert (resumed["result"], resumed["addedDirs"], resumed["stampedDirs"], resumed["storedCookieReplaced"]) == (
        "expanded",
        [],
        [],
        True,
    )
    assert cookies.read(bookie.bookie_id) == (stored, version + 2)

    old_logs = logs(old)
    harness.restart(bookie)  # without allowStorageExpansion: every cookie already lists both directories
    for _ in range(30):  # ~56 KB a ledger, 64 KB logs: each new log goes to a random directory (2^-30 to miss one)
        write_ledgers(harness, 1)
        if logs(new) and logs(old) - old_logs:
            break
    assert logs(new) and logs(old) - old_logs
    with BookKeeper(harness.service_uri) as bk:
        for ledger_id in ids:
            with bk.open_ledger(ledger_id, password=b"pw") as reader:
                assert [e.payload for e in reader.read(0, ENTRIES - 1)] == [
                    payload(ledger_id, i) for i in range(ENTRIES)
                ]

    running = expand(bkctl, bookie)
    assert running.exit_code == 3 and "stop it before you expand its storage" in running.stderr


def test_expand_storage_refuses_what_the_start_up_check_refuses(bkctl, harness, stopped_bookie, tmp_path):
    bookie, _ = stopped_bookie
    old, new = bookie.ledger_dirs[0], tmp_path / "disks" / "ledgers1"
    cookies = CookieStore(harness.store)
    before = cookies.read(bookie.bookie_id)

    nothing = expand(bkctl, bookie)
    assert (nothing.exit_code, nothing.stdout) == (
        0,
        f"cookie/{bookie.bookie_id} unchanged: nothing to do, it lists every configured directory\n",
    )

    (new / "current").mkdir(parents=True)
    (new / "current" / "0.log").write_bytes(b"x")  # another bookie's data, say
    reconfigure(harness, bookie, ledgerDirectories=f"{old},{new}")
    busy = expand(bkctl, bookie)
    assert busy.exit_code == 3 and len(busy.stderr.splitlines()) == 1
    assert f"{new} is added to the bookie's directories but is not empty" in busy.stderr

    (new / "current" / "0.log").unlink()
    journal = bookie.journal_dirs[0]
    reconfigure(harness, bookie, journalDirectories=f"{journal},{tmp_path / 'disks' / 'journal1'}")
    journals = expand(bkctl, bookie)
    assert journals.exit_code == 3 and "journal directories" in journals.stderr

    reconfigure(harness, bookie, journalDirectories=journal)
    Path(old, "current", "VERSION").unlink()  # a directory the cookie knows, wiped
    wiped = expand(bkctl, bookie)
    assert wiped.exit_code == 3 and f"{old} has no cookie but ZooKeeper has one" in wiped.stderr
    assert cookies.read(bookie.bookie_id) == before and read_local_cookie(new) is None  # nothing written

    other = tmp_path / "other.conf"  # a bookie that never started: another port
    other.write_text(bookie.conf_path.read_text().replace(f"bookiePort={bookie.port}", "bookiePort=1"))
    never = bkctl("-c", str(other), "bookie", "expand-storage")
    assert never.exit_code == 5 and "has no cookie" in never.stderr

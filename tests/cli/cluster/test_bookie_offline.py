"""The offline bookie commands on a real bookie's directories (two journals, three ledger dirs): list-files,
check-local on intact and damaged files, rebuild-index of a lost index file, format and init; each refused while
the bookie runs. (Against a Java bookie's directories and BookKeeper's shell: tests/interop/test_offline_tools.py.)"""

import json
from pathlib import Path

import pytest

from bookie.client import BookKeeper
from bookie.meta.cookies import CookieStore
from bookie.storage.entry_log import scan_log
from bookie.storage.index import index_name

LEDGERS, ENTRIES = 3, 400


@pytest.fixture
def stopped_bookie(harness, tmp_path):
    """A bookie of 2 journal and 3 ledger dirs, three ledgers of theirs written, then stopped. (bookie, ids)"""
    disks = tmp_path / "disks"
    (bookie,) = harness.start(
        1,
        journalDirectories=",".join(str(disks / f"journal{i}") for i in range(2)),
        ledgerDirectories=",".join(str(disks / f"ledgers{i}") for i in range(3)),
        logSizeLimit=64 * 1024,
    )
    with BookKeeper(harness.service_uri) as bk:
        ids = []
        for _ in range(LEDGERS):
            ledger = bk.create_ledger(1, 1, 1, password=b"pw")
            ledger.add_entries(b"%d:%d|" % (ledger.ledger_id, i) * 40 for i in range(ENTRIES))
            ledger.close()
            ids.append(ledger.ledger_id)
    bookie.stop()
    return bookie, ids


def run(bkctl, bookie, *args):
    return bkctl("-c", str(bookie.conf_path), "bookie", *args)


def files(bookie, pattern) -> set[str]:
    return {str(p.resolve()) for d in bookie.data_dirs for p in Path(d, "current").glob(pattern)}


def test_list_files_lists_every_kind_from_every_directory(bkctl, stopped_bookie):
    bookie, _ = stopped_bookie
    result = run(bkctl, bookie, "list-files", "-o", "json")
    assert result.exit_code == 0, result.stderr
    listed = json.loads(result.stdout)
    by_kind = {kind: [f["path"] for f in listed if f["kind"] == kind] for kind in ("journal", "entrylog", "index")}
    assert set(by_kind["journal"]) == files(bookie, "*.txn") and len(by_kind["journal"]) >= 2
    assert set(by_kind["entrylog"]) == files(bookie, "*.log") and len(by_kind["entrylog"]) >= 3
    assert set(by_kind["index"]) == files(bookie, "*/*/*.idx") and len(by_kind["index"]) == LEDGERS
    times = [f["modified"] for f in listed if f["kind"] == "entrylog"]
    assert times == sorted(times)  # oldest first, as BookKeeper's shell lists them
    only_logs = run(bkctl, bookie, "list-files", "--entrylog")
    assert only_logs.stdout.splitlines()[0].split() == ["KIND", "FILE", "SIZE"]
    assert {line.split()[1] for line in only_logs.stdout.splitlines()[1:]} == files(bookie, "*.log")


def test_inspect_lastmark_shows_the_mark_of_each_journal(bkctl, stopped_bookie):
    bookie, _ = stopped_bookie
    for directory in bookie.ledger_dirs:
        result = bkctl("bookie", "inspect", "lastmark", directory, "-o", "json")
        assert result.exit_code == 0, result.stderr
        marks = json.loads(result.stdout)
        assert [m["file"] for m in marks] == ["lastMark.0", "lastMark.1"]
        journals = [{p.name for p in Path(d, "current").glob("*.txn")} for d in bookie.journal_dirs]
        assert all(m["journalFile"] in journals[i] and m["offset"] > 512 for i, m in enumerate(marks))
    one = bkctl("bookie", "inspect", "lastmark", str(Path(bookie.ledger_dirs[0], "current", "lastMark.1")))
    assert one.stdout.splitlines()[0] == "Mark:    lastMark.1"


def test_check_local_passes_then_names_each_damaged_entry(bkctl, stopped_bookie, harness):
    bookie, ids = stopped_bookie
    ok = run(bkctl, bookie, "check-local")
    assert (ok.exit_code, ok.stdout) == (
        0,
        f"ok: {LEDGERS * ENTRIES} entries of {LEDGERS} ledgers point at their entries\n",
    )
    harness.restart(bookie)
    try:
        running = run(bkctl, bookie, "check-local")
        assert running.exit_code == 3 and "is locked by pid" in running.stderr and "stop that bookie" in running.stderr
    finally:
        bookie.stop()

    logs = sorted(Path(p) for p in files(bookie, "*.log") if Path(p).stat().st_size > 1024)  # with entries
    lost, damaged = logs[0], logs[1]
    lost_entries = {(lid, eid) for _, _, lid, eid in scan_log(lost) if lid in ids}
    lost.unlink()
    pos, _, ledger_id, entry_id = next(scan_log(damaged))
    with open(damaged, "r+b") as f:  # the first entry's ids: another entry's
        f.seek(pos + 8)
        f.write((entry_id + 1000).to_bytes(8, "big"))
    result = run(bkctl, bookie, "check-local", "-o", "json")
    assert result.exit_code == 3
    report = json.loads(result.stdout)
    problems = {(i["ledgerId"], i["entryId"]): i["problem"] for i in report["inconsistencies"]}
    assert problems == {**dict.fromkeys(lost_entries, "missing-log"), (ledger_id, entry_id): "wrong-entry"}
    assert report["entries"] == LEDGERS * ENTRIES and report["ledgers"] == LEDGERS
    assert result.stderr == (
        f"error: {len(problems)} of {LEDGERS * ENTRIES} index entries do not point at their entry "
        f"({len({lid for lid, _ in problems})} ledgers)\n"
    )


def test_rebuild_index_restores_a_lost_index_file(bkctl, stopped_bookie, harness):
    bookie, ids = stopped_bookie
    lost = ids[1]
    (index,) = [p for p in (Path(d, "current", index_name(lost)) for d in bookie.ledger_dirs) if p.exists()]
    index.unlink()
    dry = run(bkctl, bookie, "rebuild-index", str(lost), "--password", "pw", "--dry-run", "-o", "json")
    assert dry.exit_code == 0, dry.stderr
    rebuilt = {"ledgerId": lost, "entries": ENTRIES, "firstEntry": 0, "lastEntry": ENTRIES - 1, "newIndexFile": True}
    assert json.loads(dry.stdout) == [{**rebuilt, "dryRun": True}]
    assert not any(Path(d, "current", index_name(lost)).exists() for d in bookie.ledger_dirs)
    no_password = run(bkctl, bookie, "rebuild-index", str(lost))
    assert no_password.exit_code == 2 and "give the ledgers' password" in no_password.stderr
    done = run(bkctl, bookie, "rebuild-index", str(lost), "--password", "pw")
    assert done.exit_code == 0, done.stderr
    assert done.stdout.splitlines()[1].split() == [str(lost), str(ENTRIES), "0", str(ENTRIES - 1), "new"]
    assert run(bkctl, bookie, "check-local").exit_code == 0
    harness.restart(bookie)
    with BookKeeper(harness.service_uri) as bk, bk.open_ledger(lost, password=b"pw") as reader:
        assert [e.payload for e in reader.iter_entries(0, ENTRIES - 1)] == [
            b"%d:%d|" % (lost, i) * 40 for i in range(ENTRIES)
        ]
    running = run(bkctl, bookie, "rebuild-index", str(lost), "--password", "pw")
    assert running.exit_code == 3 and "cannot rebuild its index" in running.stderr


def test_format_erases_the_bookie_and_init_then_says_a_new_one_can_start(bkctl, stopped_bookie, harness, cluster):
    bookie, _ = stopped_bookie
    init = run(bkctl, bookie, "init", "-o", "json")
    assert init.exit_code == 3
    problems = json.loads(init.stdout)["problems"]
    assert len(problems) == len(bookie.data_dirs) + 1
    assert problems[-1].startswith(f"bookie {bookie.bookie_id} has a cookie")
    before = sorted(str(p) for d in bookie.data_dirs for p in Path(d).iterdir())
    dry = run(bkctl, bookie, "format", "--delete-cookie", "--dry-run", "-o", "json")
    assert dry.exit_code == 0, dry.stderr
    assert sorted(json.loads(dry.stdout)["deleted"]) == before and json.loads(dry.stdout)["cookieDeleted"]
    assert sorted(str(p) for d in bookie.data_dirs for p in Path(d).iterdir()) == before
    done = run(bkctl, bookie, "format", "--delete-cookie", "--yes")
    assert done.exit_code == 0, done.stderr
    assert done.stdout.splitlines()[-1] == f"cookie/{bookie.bookie_id} deleted"
    assert all(not any(Path(d).iterdir()) for d in bookie.data_dirs) and CookieStore(cluster).list() == []
    ok = run(bkctl, bookie, "init")
    assert (ok.exit_code, ok.stdout) == (0, f"bookie/{bookie.bookie_id} can be initialised here\n")
    harness.restart(bookie)  # starts as a new bookie, its cookie written anew
    assert CookieStore(cluster).list() == [bookie.bookie_id]
    running = run(bkctl, bookie, "format", "--yes")
    assert running.exit_code == 3 and "stop it before you format it" in running.stderr

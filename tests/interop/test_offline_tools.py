"""bkctl's offline bookie commands and cookie commands on a Java bookie (Apache BookKeeper 4.17.4, two journal dirs,
three ledger dirs), compared with what BookKeeper's own shell says about the same files and znodes: listfilesondisc,
localconsistencycheck (intact, then with an entry log lost and an entry overwritten), cookie_get and
cookie_generate; and a Java ledger's index file rebuilt by bkctl, then served by the Java bookie."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from bookie.conf import load_properties
from bookie.meta.cookies import Cookie
from bookie.storage.entry_log import scan_log
from bookie.storage.index import index_name

from interop.oracle import JavaCluster, bk_read, bk_write, require_oracle, run

require_oracle()

ENTRIES = 300
TEXT = "entry-" + "x" * 200


@pytest.fixture(scope="module")
def java(tmp_path_factory):
    """One Java bookie with 2 journal and 3 ledger dirs, three ledgers (E1 W1 A1) written, then stopped."""
    root = tmp_path_factory.mktemp("offline")
    disks = root / "disks"
    cluster = JavaCluster.start(
        root,
        1,
        "journalDirectories=" + ",".join(str(disks / f"journal{i}") for i in range(2)),
        "ledgerDirectories=" + ",".join(str(disks / f"ledgers{i}") for i in range(3)),
        "logSizeLimit=65536",
    )
    try:
        quorum = ["--ensemble", "1", "--write-quorum", "1", "--ack-quorum", "1"]
        cluster.ledgers = [  # the module's ledgers, kept with the cluster they are on
            bk_write(cluster.zk, "--n", str(ENTRIES), "--text", TEXT, "--suffix-index", *quorum) for _ in range(3)
        ]
        cluster.stop_bookie(1)
        yield cluster
    finally:
        cluster.stop()


def shell(java: JavaCluster, *args: str) -> list[str]:
    """BookKeeper's shell on the bookie's conf: its stdout lines, the log prefix (``12:00:00,000 INFO``) cut."""
    done = run("bk-shell", str(java.conf(1)), *args, timeout=120, check=False)
    return [re.sub(r"^\d\d:\d\d:\d\d,\d+ +[A-Z]+ +", "", line) for line in done.stdout.splitlines()]


def cli(bkctl, java: JavaCluster, *args: str):
    return bkctl("-c", str(java.conf(1)), *args)


def test_list_files_lists_what_listfilesondisc_lists_in_its_order(bkctl, java):
    printed = shell(java, "listfilesondisc", "-txn", "-log", "-idx")
    headers = {"Journal": "journal", "EntryLog/Ledger": "entrylog", "Index": "index"}
    theirs: dict[str, list[str]] = {}
    kind = None
    for line in printed:
        heading = re.match(r"-+ Printing the list of (\S+) Files -+", line)
        if heading:
            kind = headers[heading.group(1)]
        elif kind and line.startswith("/"):
            theirs.setdefault(kind, []).append(line)
    result = cli(bkctl, java, "bookie", "list-files", "-o", "json")
    assert result.exit_code == 0, result.stderr
    ours: dict[str, list[str]] = {}
    for f in json.loads(result.stdout):
        ours.setdefault(f["kind"], []).append(f["path"])
    assert ours == theirs and len(theirs["journal"]) == 2 and len(theirs["index"]) == 3 and len(theirs["entrylog"]) > 3


def test_check_local_agrees_with_localconsistencycheck_on_intact_and_damaged_files(bkctl, java, tmp_path):
    assert "=== Check passed ===" in shell(java, "localconsistencycheck")
    ok = cli(bkctl, java, "bookie", "check-local")
    assert (ok.exit_code, ok.stdout) == (0, f"ok: {3 * ENTRIES} entries of 3 ledgers point at their entries\n")

    disks = java.root / "disks"
    saved = tmp_path / "disks"
    shutil.copytree(disks, saved)  # undone at the end: the other tests read the same bookie
    try:
        logs = sorted(p for p in disks.glob("ledgers*/current/*.log") if p.stat().st_size > 1024)
        logs[0].unlink()
        pos, _, _, entry_id = next(scan_log(logs[1]))
        with open(logs[1], "r+b") as f:  # an entry's id overwritten: the index points at "another" entry
            f.seek(pos + 8)
            f.write((entry_id + 7).to_bytes(8, "big"))
        theirs = {
            tuple(map(int, m))
            for m in re.findall(r"^Ledger (\d+), entry (\d+):", "\n".join(shell(java, "localconsistencycheck")), re.M)
        }
        result = cli(bkctl, java, "bookie", "check-local", "-o", "json")
        assert result.exit_code == 3
        ours = {(i["ledgerId"], i["entryId"]) for i in json.loads(result.stdout)["inconsistencies"]}
        assert ours == theirs and len(theirs) > 1
    finally:
        shutil.rmtree(disks)
        shutil.copytree(saved, disks)


def test_cookie_get_and_generate_agree_with_the_shell(bkctl, java, tmp_path):
    conf = load_properties(java.conf(1))
    bookie_id = java.bookie_id(1)
    printed = shell(java, "cookie_get", bookie_id)
    text = "\n".join(printed[printed.index("---") + 1 : len(printed) - 1 - printed[::-1].index("---")])
    theirs = Cookie.decode(text.encode())
    got = cli(bkctl, java, "cookie", "get", bookie_id, "-o", "json")
    assert got.exit_code == 0, got.stderr
    doc = json.loads(got.stdout)
    assert (doc["journalDirs"], doc["ledgerDirs"], doc["instanceId"]) == (
        list(theirs.journal_dirs),
        list(theirs.ledger_dirs),
        theirs.instance_id,
    )
    assert tuple(conf["ledgerDirectories"].split(",")) == theirs.ledger_dirs
    java_file, our_file = tmp_path / "java.cookie", tmp_path / "our.cookie"
    dirs = ["-j", conf["journalDirectories"], "-l", conf["ledgerDirectories"], "-i", "an-instance"]
    assert "Successfully saved" in "\n".join(shell(java, "cookie_generate", bookie_id, *dirs, "-o", str(java_file)))
    ours = cli(
        bkctl,
        java,
        "cookie",
        "generate",
        bookie_id,
        "--journal-dirs",
        conf["journalDirectories"],
        "--ledger-dirs",
        conf["ledgerDirectories"],
        "--instance-id",
        "an-instance",
        "--output-file",
        str(our_file),
    )
    assert ours.exit_code == 0, ours.stderr
    assert our_file.read_bytes() == java_file.read_bytes()
    local = (Path(conf["ledgerDirectories"].split(",")[2]) / "current" / "VERSION").read_bytes()
    assert Cookie.decode(local) == theirs  # what the Java bookie wrote in its third ledger dir, read as ours reads it


def test_a_java_ledgers_index_rebuilt_by_bkctl_is_served_by_the_java_bookie(bkctl, java):
    ledger_id = java.ledgers[1]
    (index,) = list((java.root / "disks").glob(f"ledgers*/current/{index_name(ledger_id)}"))
    index.unlink()
    rebuilt = cli(bkctl, java, "bookie", "rebuild-index", str(ledger_id), "--password", "pw", "-o", "json")
    assert rebuilt.exit_code == 0, rebuilt.stderr
    assert json.loads(rebuilt.stdout)[0]["entries"] == ENTRIES
    assert "=== Check passed ===" in shell(java, "localconsistencycheck")
    java.start_bookie(1)
    try:
        expected = [(i, f"{TEXT}-{i}".encode()) for i in range(ENTRIES)]
        assert bk_read(java.zk, ledger_id, "--no-recovery") == expected
    finally:
        java.stop_bookie(1)

"""`bkctl cluster restore`: what it refuses before it writes anything (no Spark needed), and its plan. The restore
itself, with Spark: tests/spark/test_restore.py."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from bookie.client import BookKeeper
from bookie.meta.ledger_manager import LedgerManager

from support.backups import rewrite_manifest, write_backup
from support.cluster import shared_cluster


@pytest.fixture(scope="module")
def source(zookeeper, tmp_path_factory):
    """Three bookies and four closed ledgers: with a password and custom metadata, HMAC, empty, without password."""
    with (
        shared_cluster(zookeeper, tmp_path_factory.mktemp("restore-source"), 3) as harness,
        BookKeeper(harness.service_uri) as bk,
    ):
        ids = []
        for digest, password, count, meta in (
            ("crc32c", b"pw", 5, {"application": b"pulsar"}),
            ("mac", b"secret", 3, {}),
            ("crc32", b"pw", 0, {}),
            ("crc32c", b"", 2, {}),
        ):
            ledger = bk.create_ledger(3, 2, 2, digest, password, meta)
            if count:
                ledger.add_entries(b"entry-%d" % i for i in range(count))
            ledger.close()
            ids.append(ledger.ledger_id)
        yield harness, bk, ids


@pytest.fixture
def backup(source, tmp_path):
    _, bk, ids = source
    write_backup(tmp_path / "backup", bk, ids)
    return tmp_path / "backup"


def target_untouched(store) -> bool:
    """Nothing written: no ledger, and not even the id generator moved."""
    return not list(LedgerManager(store).iter_ledger_ids()) and store.exists(store.path("idgen")) is None


def test_a_backup_of_a_newer_format_is_refused(bkctl, backup, cluster, service_uri):
    rewrite_manifest(backup, formatVersion=2)
    done = bkctl("-u", service_uri, "cluster", "restore", "--from", str(backup), "--yes")
    assert (done.exit_code, done.stdout) == (2, "")
    assert done.stderr == "error: backup format 2 is newer than this bkctl reads (1)\n"
    assert target_untouched(cluster)


def flip(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (flip, r"data/part-00001.parquet: SHA-256 mismatch \(corrupt or changed\)"),
        (lambda p: p.write_bytes(p.read_bytes()[:-10]), "data/part-00001.parquet: .* bytes, the manifest says"),
        (os.remove, "data/part-00001.parquet: listed in the manifest but missing"),
        (lambda p: p.with_name("part-00009.parquet").write_bytes(b"x"), "data/part-00009.parquet: in the backup's"),
    ],
    ids=["flipped", "truncated", "missing", "extra"],
)
def test_a_damaged_data_file_is_named_and_nothing_is_written(bkctl, backup, cluster, service_uri, damage, message):
    damage(backup / "data" / "part-00001.parquet")
    done = bkctl("-u", service_uri, "cluster", "restore", "--from", str(backup), "--yes")
    assert (done.exit_code, done.stdout) == (3, "")
    assert done.stderr.startswith(f"error: backup at {backup}: ")
    assert len(done.stderr.splitlines()) == 1
    assert re.search(message, done.stderr)
    assert target_untouched(cluster)


def test_ids_the_target_has_are_refused(bkctl, source, backup, cluster, service_uri):
    _, bk, ids = source
    LedgerManager(cluster).create(ids[1], bk.ledger_metadata(ids[0]))  # another ledger under a backed-up id
    done = bkctl("-u", service_uri, "cluster", "restore", "--from", str(backup), "--yes")
    assert done.exit_code == 3
    assert done.stderr == (
        f"error: 1 ledger ids of the backup exist in the target (ledger {ids[1]}): pass --id-map FILE or --new-ids\n"
    )
    assert list(LedgerManager(cluster).iter_ledger_ids()) == [ids[1]]


def test_a_malformed_id_map_names_its_line(bkctl, backup, cluster, service_uri, tmp_path):
    (tmp_path / "ids.txt").write_text("# old new\n1 100\n2 two hundred\n")
    done = bkctl(
        "-u", service_uri, "cluster", "restore", "--from", str(backup), "--id-map", str(tmp_path / "ids.txt"), "--yes"
    )
    assert (done.exit_code, done.stdout) == (2, "")
    assert (
        done.stderr
        == f"error: {tmp_path / 'ids.txt'}, line 3: expected OLD NEW (two ledger ids), got '2 two hundred'\n"
    )
    assert target_untouched(cluster)


def test_passwords_the_backup_lacks_are_needed(bkctl, source, cluster, service_uri, tmp_path):
    _, bk, ids = source
    write_backup(tmp_path / "b", bk, ids, with_passwords=False)
    done = bkctl("-u", service_uri, "cluster", "restore", "--from", str(tmp_path / "b"), "--yes")
    assert (done.exit_code, done.stdout) == (4, "")
    assert done.stderr == (
        f"error: 3 ledgers have a password the backup does not include (ledger {ids[0]}, {ids[1]}, {ids[2]}): "
        "pass --password-file F\n"
    )
    assert target_untouched(cluster)


def test_the_plan_of_a_dry_run_writes_nothing(bkctl, source, backup, tmp_path):
    harness, bk, ids = source
    (tmp_path / "ids.txt").write_text("".join(f"{i} {i + 1000}\n" for i in ids))
    done = bkctl(
        *("-u", harness.service_uri, "cluster", "restore", "--from", str(backup)),
        *("--id-map", str(tmp_path / "ids.txt"), "--dry-run", "-o", "json"),
    )
    assert done.exit_code == 0, done.stderr
    plan = json.loads(done.stdout)
    assert (plan["ledgers"], plan["entries"], plan["bytes"], plan["create"]) == (4, 10, 10 * len(b"entry-0"), 4)
    assert plan["idMap"] == {str(i): i + 1000 for i in ids}
    assert not any(LedgerManager(bk.core.store).exists(i + 1000) for i in ids)


def test_a_rerun_into_the_source_finds_everything_restored_already(bkctl, source, backup):
    """A backup's ledgers, closed and equal in the cluster, are what a finished restore leaves: skipped."""
    harness, _, _ = source
    done = bkctl("-u", harness.service_uri, "cluster", "restore", "--from", str(backup), "--dry-run")
    assert done.exit_code == 0, done.stderr
    assert done.stdout.endswith(f"would restore 0 ledgers, 0 entries, 0 bytes from {backup} into "
                                f"{harness.service_uri} (4 restored already) (dry run)\n")  # fmt: skip


def test_without_yes_or_a_terminal_it_refuses_after_its_checks(bkctl, source, backup, tmp_path):
    harness, bk, ids = source
    (tmp_path / "ids.txt").write_text("".join(f"{i} {i + 1000}\n" for i in ids))
    done = bkctl(
        "-u", harness.service_uri, "cluster", "restore", "--from", str(backup), "--id-map", str(tmp_path / "ids.txt")
    )
    assert (done.exit_code, done.stdout) == (2, "")
    assert done.stderr == "error: refusing to restore into the cluster without --yes: no terminal to confirm on\n"
    assert not any(LedgerManager(bk.core.store).exists(i + 1000) for i in ids)


def test_a_rerun_with_nothing_left_to_write_starts_no_spark(bkctl, source, backup, monkeypatch):
    def no_spark(*_args, **_kwargs):
        raise AssertionError("Spark started")

    monkeypatch.setattr("admin.export.session.spark_session", no_spark)
    harness, _, ids = source
    done = bkctl("-u", harness.service_uri, "cluster", "restore", "--from", str(backup), "-o", "json")
    assert done.exit_code == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["ledgers"], report["created"], report["restoredAlready"]) == (0, [], sorted(ids))


def test_a_path_that_is_not_a_backup_is_one_line(bkctl, cluster, service_uri, tmp_path):
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir" / "manifest.json").mkdir(parents=True)
    for path, code, message in (
        (tmp_path / "file", 2, f"{tmp_path}/file is not a directory: not a backup"),
        (tmp_path / "dir", 2, f"cannot read {tmp_path}/dir/manifest.json: Is a directory"),
        (
            tmp_path / "none",
            5,
            f"{tmp_path}/none/manifest.json does not exist: not a backup, or one that did not finish",
        ),
        ("nosuch://x", 2, "cannot read nosuch://x: "),
    ):
        done = bkctl("-u", service_uri, "cluster", "restore", "--from", str(path), "--yes")
        assert (done.exit_code, done.stdout) == (code, ""), done.stderr
        assert done.stderr.startswith(f"error: {message}") and done.stderr.count("\n") == 1, done.stderr
    assert target_untouched(cluster)


def test_a_spark_that_does_not_start_is_named_with_its_log_and_nothing_is_written(source, backup, tmp_path):
    import subprocess
    import sys

    harness, _, ids = source
    before = list(LedgerManager(harness.store).iter_ledger_ids())
    (tmp_path / "ids.txt").write_text(f"{ids[0]} {max(before) + 1000}\n")  # one ledger to write, under a free id
    command = [sys.executable, "-m", "bkctl", "-u", harness.service_uri, "cluster", "restore", "--from", str(backup)]
    done = subprocess.run(
        [*command, "--id-map", str(tmp_path / "ids.txt"), "--yes", "--master", "bogus://x"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert (done.returncode, done.stdout) == (1, "")
    match = re.fullmatch(r"error: Spark did not start: .+ \(Spark's log: (.+)\)\n", done.stderr)
    assert match and "Exception in thread" in Path(match.group(1)).read_text()
    assert list(LedgerManager(harness.store).iter_ledger_ids()) == before


@pytest.mark.root  # mounts small filesystems
def test_a_target_too_small_for_the_data_is_refused_and_nothing_is_written(bkctl, zookeeper, source, tmp_path):
    import subprocess

    _, bk, _ = source
    big = bk.create_ledger(3, 2, 2, "crc32c", b"pw")
    big.add_entries(os.urandom(1 << 20) for _ in range(12))
    big.close()
    write_backup(tmp_path / "backup", bk, [big.ledger_id])
    bk.delete_ledger(big.ledger_id)
    disks = [tmp_path / "small" / f"bookie-{i}" for i in (1, 2, 3)]  # the harness's bookie directories
    mounted = []
    try:
        for disk in disks:
            disk.mkdir(parents=True)
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(disk)], check=True)
            mounted.append(disk)
        with shared_cluster(zookeeper, tmp_path / "small", 3) as small:
            done = bkctl("-u", small.service_uri, "cluster", "restore", "--from", str(tmp_path / "backup"), "--yes")
            assert (done.exit_code, done.stdout) == (3, "")
            assert re.fullmatch(
                r"error: the target is too small: its 3 writable bookies have \d+\.\d MB free below their disk-full "
                r"threshold \(95%\); the ledger takes 25\.2 MB with every replica\n",
                done.stderr,
            ), done.stderr
            assert target_untouched(small.store)
    finally:
        for disk in mounted:
            subprocess.run(["umount", "-l", str(disk)], check=True)

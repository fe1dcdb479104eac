"""`bkctl cluster restore` end to end with local Spark: a backup made by `bkctl cluster backup --data` restored into a
fresh cluster on the same ZooKeeper, compared ledger by ledger and entry by entry; and restores that fail after
their claim, which remove what they created, or keep it for a rerun that finishes them."""

from __future__ import annotations

import json
import os
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from admin.restore.plan import MARKER_KEY
from bookie.client import BookKeeper
from bookie.meta.idgen import generate_ledger_id
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.ledger_metadata import LedgerState

from support.backups import reseal, write_backup
from support.cluster import shared_cluster

QUORUMS = [(3, 2, 2), (3, 3, 2), (2, 2, 1), (1, 1, 1)]
DIGESTS = ["crc32c", "crc32", "mac", "dummy"]
SIZES = [0, 1, 3, 10, 40, 150]


def pulsar_metadata(i: int) -> dict[str, bytes]:
    return {
        "application": b"pulsar",
        "component": b"managed-ledger",
        "pulsar/managed-ledger": b"public/default/persistent/topic-%d" % i,
    }


@pytest.fixture(scope="module")
def source(zookeeper, tmp_path_factory):
    """A cluster of 3 bookies with 26 closed ledgers (every quorum and digest, passwords or none, Pulsar's custom
    metadata, one of two segments after an ensemble change) and an open one."""
    rng = random.Random(33)
    directory = tmp_path_factory.mktemp("restore-source")
    with shared_cluster(zookeeper, directory, 3) as harness, BookKeeper(harness.service_uri) as bk:
        closed = []
        for i in range(25):
            password = b"" if i % 5 == 0 else b"pw%d" % (i % 3)
            meta = pulsar_metadata(i) if i % 4 == 0 else {}
            ledger = bk.create_ledger(*QUORUMS[i % 4], DIGESTS[i % 4], password, meta)
            payloads = [os.urandom(rng.choice([0, 1, 64, 700, 3000])) for _ in range(SIZES[i % len(SIZES)])]
            if payloads:
                ledger.add_entries(payloads)
            ledger.close()
            closed.append(ledger.ledger_id)
        segments = bk.create_ledger(2, 2, 2, "crc32c", b"seg")
        segments.add_entries(b"before %d" % i for i in range(10))
        stopped = next(b for b in harness.bookies if b.bookie_id == segments.ensemble[0])
        stopped.stop()
        segments.add_entries(b"after %d" % i for i in range(10))  # the writer replaces the stopped bookie
        segments.close()
        harness.restart(stopped)
        closed.append(segments.ledger_id)
        assert len(bk.ledger_metadata(segments.ledger_id).segments) == 2
        writer = bk.create_ledger(3, 2, 2, "crc32c", b"open-pw")
        for i in range(10):  # one at a time: entry i carries LAC i - 1, so the backup holds entries 0..8
            writer.add_entry(b"open %d" % i)
        yield harness, bk, closed, writer.ledger_id
        writer.close()


@pytest.fixture(scope="module")
def backup(source, spark, tmp_path_factory):
    """The source backed up with `cluster backup --data --include-open --with-passwords`, in small data files (big
    ledgers span several)."""
    from click.testing import CliRunner

    from bkctl.cli import cli

    path = tmp_path_factory.mktemp("restore-backup") / "backup"
    args = ["--to", str(path), "--data", "--include-open", "--with-passwords", "--partition-bytes", "64k"]
    done = CliRunner().invoke(cli, ["-u", source[0].service_uri, "cluster", "backup", *args, "-o", "json"])
    assert done.exit_code == 0, done.output
    return path


@pytest.fixture(scope="module")
def target(zookeeper, tmp_path_factory):
    """A fresh cluster of 3 bookies on the same ZooKeeper."""
    with shared_cluster(zookeeper, tmp_path_factory.mktemp("restore-target"), 3) as harness:
        yield harness


def entries(bk: BookKeeper, ledger_id: int, last: int) -> list:
    """Every entry with its stored fields (ledger id, entry id, LAC, length, payload)."""
    with bk.open_ledger(ledger_id, bk.ledger_metadata(ledger_id).password, recovery=False) as reader:
        return reader.read(0, last) if last >= 0 else []


def test_a_backup_restored_into_a_fresh_cluster_is_the_source_again(bkctl, source, backup, target):
    _, bk, closed, opened = source
    assert len(pq.read_table(backup / "metadata" / "ledgers.parquet")) == 27
    done = bkctl("-u", target.service_uri, "cluster", "restore", "--from", str(backup), "--yes", "-o", "json")
    assert done.exit_code == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["ledgers"], report["idMap"], report["removed"], report["problems"]) == (27, {}, [], [])
    assert sorted(report["created"]) == sorted([*closed, opened]) and report["restoredAlready"] == []
    assert report["seconds"] > 0 and report["mbPerSec"] > 0

    with BookKeeper(target.service_uri) as restored:
        total = 0
        for ledger_id in closed:
            was, now = bk.ledger_metadata(ledger_id), restored.ledger_metadata(ledger_id)
            assert now.with_changes(segments=was.segments, c_token=was.c_token) == was, ledger_id
            assert len(now.segments) == 1 and MARKER_KEY not in now.custom_metadata
            copied = entries(restored, ledger_id, now.last_entry_id)
            assert copied == entries(bk, ledger_id, was.last_entry_id), ledger_id  # ids, LAC, length, payload
            total += len(copied)
        now = restored.ledger_metadata(opened)
        assert (now.state, now.last_entry_id) == (LedgerState.CLOSED, 8)  # closed at the LAC the backup held
        assert entries(restored, opened, 8) == entries(bk, opened, 8)
        assert now.password == b"open-pw" and now.length == sum(len(b"open %d" % i) for i in range(9))
        assert report["entries"] == total + 9
        assert generate_ledger_id(restored.core.store) > max([*closed, opened])


def tampered(bk: BookKeeper, ledger_ids: list[int], root, bad: int):
    """A backup of ``ledger_ids`` whose payload checksum of ``bad`` is wrong, sealed again: it passes every check
    before the writes, and fails the read-back of that ledger."""
    write_backup(root, bk, ledger_ids)
    path = root / "metadata" / "ledgers.parquet"
    table = pq.read_table(path)
    rows = table.to_pylist()
    for row in rows:
        if row["ledgerId"] == bad:
            row["payloadXor"] ^= 1
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
    reseal(root)
    return root


def with_entries(bk: BookKeeper, ledger_ids: list[int], count: int) -> list[int]:
    return [i for i in ledger_ids if bk.ledger_metadata(i).last_entry_id >= 9][:count]


def test_a_restore_that_fails_after_its_claim_removes_its_ledgers(bkctl, spark, source, target, tmp_path):
    _, bk, closed, _ = source
    ids = with_entries(bk, closed, 3)
    backup = tampered(bk, ids, tmp_path / "b", bad=ids[1])
    (tmp_path / "ids.txt").write_text("".join(f"{i} {i + 100}\n" for i in ids))
    args = ["--from", str(backup), "--id-map", str(tmp_path / "ids.txt"), "--yes", "-o", "json"]
    done = bkctl("-u", target.service_uri, "cluster", "restore", *args)
    assert done.exit_code == 1
    assert done.stderr.startswith(f"error: restore failed: ledger {ids[1] + 100}: payload checksum ")
    assert done.stderr.endswith("; created 3 ledgers, removed them\n")
    report = json.loads(done.stdout)
    assert sorted(report["created"]) == sorted(report["removed"]) == [i + 100 for i in ids]
    assert len(report["problems"]) == 1
    ledgers = LedgerManager(target.store)
    assert not any(ledgers.exists(i + 100) for i in ids)


def test_a_kept_partial_restore_is_finished_by_a_rerun(bkctl, spark, source, target, tmp_path):
    _, bk, closed, _ = source
    ids = with_entries(bk, closed, 3)
    backup = tampered(bk, ids, tmp_path / "b", bad=ids[2])
    (tmp_path / "ids.txt").write_text("".join(f"{i} {i + 200}\n" for i in ids))
    args = ["--from", str(backup), "--id-map", str(tmp_path / "ids.txt"), "--yes", "-o", "json"]
    failed = bkctl("-u", target.service_uri, "cluster", "restore", *args, "--keep-partial")
    assert failed.exit_code == 1
    assert failed.stderr.endswith(
        "; created 3 ledgers, kept them (--keep-partial): run the same restore again to finish\n"
    )
    ledgers = LedgerManager(target.store)
    partial = ledgers.read(ids[2] + 200)[0]
    assert partial.state == LedgerState.OPEN and MARKER_KEY in partial.custom_metadata

    write_backup(tmp_path / "good", bk, ids)  # the same ledgers, checksums right
    done = bkctl("-u", target.service_uri, "cluster", "restore", *args[:1], str(tmp_path / "good"), *args[2:])
    assert done.exit_code == 0, done.stderr
    report = json.loads(done.stdout)
    # the ledgers the failed run closed are skipped (those it had in flight when it stopped are written again)
    assert ids[2] + 200 in report["created"]
    assert sorted(report["created"] + report["restoredAlready"]) == [i + 200 for i in ids]
    for i in ids:
        now = ledgers.read(i + 200)[0]
        assert now.state == LedgerState.CLOSED and MARKER_KEY not in now.custom_metadata


def test_taken_ids_get_new_ones_and_progress_has_totals(spark, source, target, tmp_path):
    """--new-ids through the library: the ledger whose id another ledger holds is restored under a generated id
    (every entry framed again under it, checked against the source's checksum); the phases announce their totals."""
    from admin.backup.manifest import Manifest, read_ledgers
    from admin.restore.job import run_restore
    from admin.restore.plan import plan_restore

    from support.progress import RecordingProgress

    _, bk, closed, _ = source
    taken, kept = with_entries(bk, closed, 2)
    write_backup(tmp_path / "b", bk, [taken, kept])
    path = str(tmp_path / "b")
    with BookKeeper(target.service_uri) as restored:
        ledgers = restored.core.ledgers
        for ledger_id in (taken, kept):  # whatever an earlier test restored there
            if ledgers.exists(ledger_id):
                ledgers.delete(ledger_id)
        other = bk.ledger_metadata(kept).with_changes(ctime=1)
        ledgers.create(taken, other)
        plan = plan_restore(
            path, Manifest.load(path), read_ledgers(path), restored.core, room(restored), None, None, True
        )
        progress = RecordingProgress()
        report = run_restore(restored, spark, target.service_uri, plan, False, progress)
        (new,) = report.id_map.values()
        assert report.id_map == {taken: new} and new > kept and sorted(report.created) == sorted([new, kept])
        assert ledgers.read(taken)[0] == other
        was = bk.ledger_metadata(taken)
        assert restored.ledger_metadata(new).with_changes(segments=was.segments, c_token=was.c_token) == was
        fields = [e[1:] for e in entries(restored, new, was.last_entry_id)]  # all but the ledger id
        assert fields == [e[1:] for e in entries(bk, taken, was.last_entry_id)]
    progress.assert_complete()
    assert progress.named("claiming ledgers").total == 2
    assert (progress.named("restoring").total, progress.named("restoring").total_bytes) == (plan.entries, plan.bytes)


def test_a_retried_task_skips_the_ledgers_an_earlier_attempt_closed(source, target, tmp_path):
    """Spark runs a failed task again (on a cluster, up to spark.task.maxFailures): its ledgers closed by the first
    attempt are left as they are. The task's coroutine run twice, without Spark."""
    from admin.backup.manifest import Manifest, read_ledgers
    from admin.restore.job import RestoreReport, claim, ledger_jobs, restore_files
    from admin.restore.plan import plan_restore, tasks
    from bookie.progress import NO_PROGRESS

    _, bk, closed, _ = source
    ids = with_entries(bk, closed, 2)
    write_backup(tmp_path / "b", bk, ids)
    path, id_map = str(tmp_path / "b"), {i: i + 300 for i in ids}
    with BookKeeper(target.service_uri) as restored:
        plan = plan_restore(
            path, Manifest.load(path), read_ledgers(path), restored.core, room(restored), None, id_map, False
        )
        ledgers = claim(restored, plan, RestoreReport("retried"), NO_PROGRESS)
        (spec,) = tasks(plan.manifest, ledgers)
        first = restored.run(restore_files(restored.core, path, "retried", spec, ledger_jobs(spec, ledgers)))
        closed_first = [restored.ledger_metadata(i + 300) for i in ids]
        again = restored.run(restore_files(restored.core, path, "retried", spec, ledger_jobs(spec, ledgers)))
        assert [r["entries"] for r in first] == [bk.ledger_metadata(i).last_entry_id + 1 for i in ids]
        assert [r["entries"] for r in again] == [0, 0]
        assert [restored.ledger_metadata(i + 300) for i in ids] == closed_first
        assert all(md.state == LedgerState.CLOSED for md in closed_first)


def restore_plan(restored: BookKeeper, path, id_map: dict[int, int]):
    from admin.backup.manifest import Manifest, read_ledgers
    from admin.restore.plan import plan_restore

    return plan_restore(
        str(path), Manifest.load(str(path)), read_ledgers(str(path)), restored.core, room(restored), None, id_map, False
    )


def room(bk: BookKeeper):
    """The room of ``bk``'s writable bookies, as `cluster restore` plans with it."""
    from admin.restore.room import room_of

    return lambda: room_of(bk)


def test_a_failed_run_leaves_alone_the_ledgers_another_run_took_over(source, target, tmp_path):
    """Two runs of one backup: the second takes over the ledgers the first claimed (metadata rebuilt, a fresh
    cToken) and closes them; the first then fails, and its clean-up deletes none of them. A third run planned while
    they were open does not open them again. Without Spark: the claims, a task's coroutine, the clean-up."""
    from admin.restore.job import RestoreReport, claim, ledger_jobs, remove_run, restore_files
    from admin.restore.plan import tasks
    from bookie.errors import MetadataVersionConflict
    from bookie.progress import NO_PROGRESS

    _, bk, closed, _ = source
    ids = with_entries(bk, closed, 2)
    write_backup(tmp_path / "b", bk, ids)
    id_map = {i: i + 400 for i in ids}
    with BookKeeper(target.service_uri) as restored:
        first = RestoreReport("first")
        claim(restored, restore_plan(restored, tmp_path / "b", id_map), first, NO_PROGRESS)
        second_plan, third_plan = (restore_plan(restored, tmp_path / "b", id_map) for _ in range(2))
        assert [lg.action for lg in second_plan.ledgers] == ["redo", "redo"]
        second = RestoreReport("second")
        ledgers = claim(restored, second_plan, second, NO_PROGRESS)
        assert sorted(second.tokens) == sorted(first.tokens) == [i + 400 for i in ids]
        assert all(second.tokens[i] != first.tokens[i] for i in first.tokens)
        (spec,) = tasks(second_plan.manifest, ledgers)
        restored.run(restore_files(restored.core, str(tmp_path / "b"), "second", spec, ledger_jobs(spec, ledgers)))
        done = [restored.ledger_metadata(i + 400) for i in ids]
        assert all(md.state == LedgerState.CLOSED for md in done)

        assert remove_run(restored, first) == []
        with pytest.raises(MetadataVersionConflict, match="changed since the restore was planned"):
            claim(restored, third_plan, RestoreReport("third"), NO_PROGRESS)
        assert [restored.ledger_metadata(i + 400) for i in ids] == done


def test_an_interrupted_claim_removes_the_ledger_whose_create_was_under_way(source, target, tmp_path, monkeypatch):
    """Ctrl-C while a znode create runs in its thread: the create ends, and the clean-up finds and deletes it."""
    import signal

    from admin.restore.job import RestoreFailed, run_restore
    from bookie.progress import NO_PROGRESS

    _, bk, closed, _ = source
    (source_id,) = with_entries(bk, closed, 1)
    write_backup(tmp_path / "b", bk, [source_id])
    ledger_id = source_id + 500
    create = LedgerManager.create

    def interrupted(self, *args):
        os.kill(os.getpid(), signal.SIGINT)
        return create(self, *args)

    with BookKeeper(target.service_uri) as restored:
        plan = restore_plan(restored, tmp_path / "b", {source_id: ledger_id})
        monkeypatch.setattr(LedgerManager, "create", interrupted)
        with pytest.raises(RestoreFailed) as failed:
            run_restore(restored, None, target.service_uri, plan, False, NO_PROGRESS)
        monkeypatch.undo()
        assert isinstance(failed.value.cause, KeyboardInterrupt)
        assert str(failed.value) == "restore failed: KeyboardInterrupt; created 1 ledgers, removed them"
        assert failed.value.report.removed == [ledger_id]
        assert not restored.core.ledgers.exists(ledger_id)


def test_a_ledger_the_tasks_did_not_write_fails_the_restore(spark, source, target, tmp_path, monkeypatch):
    """The job checks what its tasks return: a ledger none of them wrote (here: left out of the tasks) fails the
    restore, and its ledgers are removed."""
    from admin.restore import job
    from admin.restore.job import RestoreFailed, run_restore
    from bookie.progress import NO_PROGRESS

    _, bk, closed, _ = source
    ids = with_entries(bk, closed, 2)
    write_backup(tmp_path / "b", bk, ids)
    jobs = job.ledger_jobs
    monkeypatch.setattr(job, "ledger_jobs", lambda spec, ledgers: {ids[0]: jobs(spec, ledgers)[ids[0]]})
    with BookKeeper(target.service_uri) as restored:
        plan = restore_plan(restored, tmp_path / "b", {i: i + 600 for i in ids})
        with pytest.raises(RestoreFailed) as failed:
            run_restore(restored, spark, target.service_uri, plan, False, NO_PROGRESS)
        assert str(failed.value) == (
            f"restore failed: the restore's tasks did not write 1 of its 2 ledgers (ledger {ids[1] + 600}); "
            "created 2 ledgers, removed them"
        )
        assert not any(restored.core.ledgers.exists(i + 600) for i in ids)

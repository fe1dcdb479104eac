"""`bkctl ledger copy` between two live clusters of real bookies on the session's ZooKeeper, with local Spark."""

import dataclasses
import json
import os
import threading

import pytest

from bookie.client import BookKeeper
from bookie.client.replay import LedgerReplay
from bookie.meta.ledger_metadata import LedgerState

from support.cluster import shared_cluster
from support.waiting import wait_for

QUORUMS = [(3, 2, 2), (3, 3, 2), (2, 2, 1), (1, 1, 1)]
DIGESTS = ["crc32c", "crc32", "mac", "dummy"]


@pytest.fixture(scope="module")
def target(zookeeper, tmp_path_factory):
    """The cluster copied into: three bookies of its own."""
    with shared_cluster(zookeeper, tmp_path_factory.mktemp("target"), 3) as harness:
        yield harness


def copy(bkctl, uri, to, *args):
    result = bkctl("-u", uri, "ledger", "copy", *args, "--to-cluster", to, "-o", "json")
    return result, json.loads(result.stdout) if result.exit_code == 0 else None


def write_ledgers(uri: str, count: int, tag: str) -> dict[int, list[bytes]]:
    """``count`` closed ledgers of every digest, quorum and a few sizes, with passwords and custom metadata."""
    ledgers = {}
    with BookKeeper(uri) as bk:
        for i in range(count):
            ledger = bk.create_ledger(
                *QUORUMS[i % 4],
                digest_type=DIGESTS[i % 4],
                password=b"pw%d" % (i % 3),
                custom_metadata={"app": tag.encode(), "index": b"%d" % i},
            )
            payloads = [os.urandom((i * 131 + e * 17) % 3000) for e in range([0, 1, 7, 60, 300][i % 5])]
            if payloads:
                ledger.add_entries(payloads)
            ledger.close()
            ledgers[ledger.ledger_id] = payloads
    return ledgers


def same_metadata(a, b) -> dict:
    """The fields of two ledgers' metadata that differ, ensembles (and the creation token) aside."""
    left, right = dataclasses.asdict(a), dataclasses.asdict(b)
    return {k: (left[k], right[k]) for k in left if k not in ("segments", "c_token") and left[k] != right[k]}


def entries(bk, lid: int, password: bytes, last: int):
    """Every entry up to ``last`` as stored: ids, LAC and length fields, payload."""
    return bk.open_ledger(lid, password, recovery=False).read(0, last) if last >= 0 else []


class Writer(threading.Thread):
    """Adds entries to an open ledger of the source, one at a time, until stopped; every add must succeed."""

    def __init__(self, uri: str):
        super().__init__(daemon=True)
        self.bk = BookKeeper(uri)
        self.ledger = self.bk.create_ledger(3, 2, 2, password=b"live", custom_metadata={"app": b"live"})
        self.acked: list[int] = []
        self.error: BaseException | None = None
        self.halt = threading.Event()

    def run(self):
        try:
            while not self.halt.is_set():
                self.acked.append(self.ledger.add_entry(b"live %d" % len(self.acked)))
        except BaseException as exc:  # noqa: BLE001 - judged by the test
            self.error = exc

    def stop(self):
        self.halt.set()
        self.join(30)
        md = self.ledger.close()
        self.bk.close()
        return md


def test_copy_between_live_clusters_while_a_writer_writes(bkctl, spark, three_bookies, target):
    source_uri, target_uri = three_bookies.service_uri, target.service_uri
    ledgers = write_ledgers(source_uri, 20, "copy")
    writer = Writer(source_uri)
    writer.start()
    try:
        wait_for(lambda: len(writer.acked) >= 20, "the writer's first entries")
        live = writer.ledger.ledger_id
        selected = f"{min(ledgers)}-{max(*ledgers, live)}"

        result, doc = copy(bkctl, source_uri, target_uri, selected, "--yes", "--partition-bytes", "64k")
        assert result.exit_code == 0, result.stderr
        assert doc["ledgers"] == doc["copied"] == 20 and doc["skipped"] == 0 and doc["leftOpen"] == [live]
        assert doc["entries"] == sum(map(len, ledgers.values()))
        assert doc["bytes"] == sum(len(p) for payloads in ledgers.values() for p in payloads)
        assert doc["problems"] == [] and doc["mbPerSec"] > 0 and len(doc["runId"]) == 12
        assert f"1 open ledger(s) left out (--include-open copies them up to their LAC): {live}" in result.stderr

        acked_before = len(writer.acked)
        result, doc = copy(bkctl, source_uri, target_uri, selected, "--yes", "--include-open")
        assert result.exit_code == 0, result.stderr
        assert (doc["copied"], doc["skipped"], doc["leftOpen"]) == (1, 20, [])
        assert doc["entries"] >= acked_before - 1  # up to the LAC it saw, which the writer has moved past since

        with BookKeeper(source_uri) as src, BookKeeper(target_uri) as dst:
            for lid, payloads in ledgers.items():
                md, copied = src.ledger_metadata(lid), dst.ledger_metadata(lid)
                assert same_metadata(md, copied) == {}, lid
                assert len(copied.segments) == 1 and copied.format_version == 3
                assert entries(dst, lid, md.password, md.last_entry_id) == entries(
                    src, lid, md.password, md.last_entry_id
                )
                assert [e.payload for e in entries(dst, lid, md.password, md.last_entry_id)] == payloads
            open_copy = dst.ledger_metadata(live)
            last = open_copy.last_entry_id
            assert open_copy.state == LedgerState.CLOSED and last == doc["entries"] - 1
            assert open_copy.custom_metadata == {"app": b"live"}
            assert entries(dst, live, b"live", last) == entries(src, live, b"live", last)
            assert open_copy.length == sum(len(b"live %d" % i) for i in range(last + 1))

        # Nothing new: finished copies are skipped, the open one's copy too (a closed copy is not extended).
        result, doc = copy(bkctl, source_uri, target_uri, selected, "--yes", "--include-open")
        assert result.exit_code == 0, result.stderr
        assert (doc["copied"], doc["skipped"], doc["entries"]) == (0, 21, 0)
        assert "copied earlier while open have more entries in the source now" in result.stderr
    finally:
        md = writer.stop()
    assert writer.error is None and writer.acked == list(range(len(writer.acked)))  # every add went through
    assert md.last_entry_id == len(writer.acked) - 1 > last


def test_a_foreign_ledger_id_in_the_target_refuses_the_copy(bkctl, spark, three_bookies, target):
    source_uri, target_uri = three_bookies.service_uri, target.service_uri
    ids = sorted(write_ledgers(source_uri, 3, "foreign"))
    with BookKeeper(source_uri) as src, BookKeeper(target_uri) as dst:
        taken = src.ledger_metadata(ids[1])
        dst.core.ledgers.create(ids[1], taken.with_changes(custom_metadata={"app": b"someone else"}))
        result = bkctl("-u", source_uri, "ledger", "copy", *map(str, ids), "--to-cluster", target_uri, "--yes")
        assert result.exit_code == 3
        assert result.stderr == (
            f"error: 1 ledger id(s) exist in the target and are not finished copies of the source's ledgers: "
            f"{ids[1]} (ledger {ids[1]}: its custom metadata differs); nothing copied\n"
        )
        assert not dst.core.ledgers.exists(ids[0]) and not dst.core.ledgers.exists(ids[2])
        assert dst.ledger_metadata(ids[1]).custom_metadata == {"app": b"someone else"}


def test_a_target_without_bookies_enough_is_refused_even_in_a_dry_run(bkctl, three_bookies, zookeeper):
    from bookie.meta.layout import init_cluster
    from bookie.meta.store import MetadataStore
    from bookie.meta.uri import parse_service_uri

    ids = sorted(write_ledgers(three_bookies.service_uri, 1, "few"))
    empty = f"zk+hierarchical://{zookeeper.address}/few{ids[0]}/ledgers"
    with MetadataStore(parse_service_uri(empty)) as store:
        init_cluster(store)
    for dry_run in (["--dry-run"], ["--yes"]):
        result = bkctl("-u", three_bookies.service_uri, "ledger", "copy", str(ids[0]), "--to-cluster", empty, *dry_run)
        assert (result.exit_code, result.stdout) == (3, "")
        assert result.stderr == f"error: the target has 0 writable bookies; ledger {ids[0]} needs an ensemble of 3\n"


def test_dry_run_writes_nothing_and_a_run_redoes_an_unfinished_copy(bkctl, spark, three_bookies, target):
    source_uri, target_uri = three_bookies.service_uri, target.service_uri
    ledgers = write_ledgers(source_uri, 4, "dry")
    ids = sorted(ledgers)
    with BookKeeper(source_uri) as src, BookKeeper(target_uri) as dst:
        md = src.ledger_metadata(ids[3])  # an interrupted run's: claimed, half written
        dst.run(LedgerReplay.claim(dst.core, ids[3], md, md.password, ("bkctl.copy", b"earlier")))

        result, doc = copy(bkctl, source_uri, target_uri, *map(str, ids), "--dry-run")
        assert result.exit_code == 0, result.stderr
        assert doc == {
            "ledgers": 4,
            "copy": 4,
            "redo": 1,
            "skipped": 0,
            "leftOpen": [],
            "entries": sum(map(len, ledgers.values())),
            "bytes": sum(len(p) for payloads in ledgers.values() for p in payloads),
            "tasks": 1,
            "dryRun": True,
        }
        assert not any(dst.core.ledgers.exists(lid) for lid in ids[:3])
        assert dst.ledger_metadata(ids[3]).custom_metadata["bkctl.copy"] == b"earlier"

        asked = bkctl("-u", source_uri, "ledger", "copy", *map(str, ids), "--to-cluster", target_uri)
        assert asked.exit_code == 2
        assert asked.stderr == "error: refusing to copy ledgers without --yes: no terminal to confirm on\n"
        assert not any(dst.core.ledgers.exists(lid) for lid in ids[:3])

        result, doc = copy(bkctl, source_uri, target_uri, *map(str, ids), "--yes")
        assert result.exit_code == 0, result.stderr
        assert doc["copied"] == 4
        redone = dst.ledger_metadata(ids[3])
        assert redone.state == LedgerState.CLOSED and "bkctl.copy" not in redone.custom_metadata
        assert [e.payload for e in entries(dst, ids[3], md.password, md.last_entry_id)] == ledgers[ids[3]]


def test_a_failed_copy_removes_its_unfinished_ledgers_and_names_the_ledger(bkctl, spark, three_bookies, target):
    source_uri, target_uri = three_bookies.service_uri, target.service_uri
    ids = sorted(write_ledgers(source_uri, 3, "fail"))
    with BookKeeper(source_uri) as src, BookKeeper(target_uri) as dst:
        broken = ids[2]  # 7 entries; its metadata claims 10
        md, version = src.core.ledgers.read(broken)
        src.core.ledgers.write(broken, md.with_changes(last_entry_id=9), version)
        result = bkctl("-u", source_uri, "ledger", "copy", *map(str, ids), "--to-cluster", target_uri, "--yes")
        assert result.exit_code == 5, result.stderr
        assert result.stderr.startswith(f"error: ledger {broken} entry ")
        assert result.stderr.endswith("; removed the run's unfinished copies from the target (1)\n")
        assert result.stderr.count("\n") == 1
        assert not dst.core.ledgers.exists(broken)
        marked = [lid for lid, md in dst.core.ledgers.iter_ledgers() if "bkctl.copy" in md.custom_metadata]
        assert marked == []


def test_the_targets_id_generator_is_moved_past_the_copied_ids(bkctl, spark, three_bookies, target):
    """Else every ledger created in the target later would try the copied ids one by one (LedgerExists, retry)."""
    from bookie.meta.idgen import generate_ledger_id

    ids = sorted(write_ledgers(three_bookies.service_uri, 2, "idgen"))
    result, doc = copy(bkctl, three_bookies.service_uri, target.service_uri, *map(str, ids), "--yes")
    assert result.exit_code == 0, result.stderr
    assert doc["copied"] == 2
    with BookKeeper(target.service_uri) as dst:
        assert generate_ledger_id(dst.core.store) > max(ids)


def test_a_retried_task_skips_the_ledgers_an_earlier_attempt_closed(three_bookies, target, monkeypatch):
    """Spark runs a failed task again: the ledgers its first attempt closed are left as they are, the others
    copied. The task run twice, without Spark."""
    from admin.copy import job
    from admin.copy.plan import plan_copy
    from admin.export.plan import parse_selection

    source_uri, target_uri = three_bookies.service_uri, target.service_uri
    ids = sorted(write_ledgers(source_uri, 3, "retried"))
    with BookKeeper(source_uri) as src, BookKeeper(target_uri) as dst:
        monkeypatch.setattr(job, "task_client", {source_uri: src, target_uri: dst}.__getitem__)
        plan = plan_copy(src, dst, parse_selection([str(i) for i in ids]), {}, False, 64 << 20)
        job.claim(dst, plan, "retried")
        (task,) = plan.tasks
        assert job._copy_task(source_uri, target_uri, "retried", task) == {"problems": []}
        closed = [dst.ledger_metadata(lid) for lid in ids]
        assert job._copy_task(source_uri, target_uri, "retried", task) == {"problems": []}
        assert [dst.ledger_metadata(lid) for lid in ids] == closed
        assert all(md.state == LedgerState.CLOSED and "bkctl.copy" not in md.custom_metadata for md in closed)

"""What usage says a compaction would reclaim is what bookie/storage/gc.py's run then reclaims: the same logs deleted
and compacted, the same bytes freed and copied, on real entry logs."""

from __future__ import annotations

import pytest

from admin.usage.explain import explain
from admin.usage.reclaim import GcLog, new_log_size, reclaimable
from admin.usage.sources import offline_view
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState, Segment
from bookie.server.config import BookieConfig
from bookie.storage.entry_log import HEADER_SIZE, list_log_ids, log_path
from bookie.storage.gc import GarbageCollector, GcConfig

from support.storage import add, records

ME = "me:3181"
RECORD = len(records(1, 0, 1))
PER_LOG = 10
# log 0: 50% live once ledger 2 goes; log 1: 10%; log 2: nothing live (deleted outright); log 3: 80%; log 4: current
LOGS = [{1: 5, 2: 5}, {3: 1, 4: 9}, {4: 10}, {5: 8, 6: 2}, {7: 1}]
DELETED = {2, 4, 6}


def closed(entries: int) -> LedgerMetadata:
    return LedgerMetadata(1, 1, 1, (Segment(0, (ME,)),), LedgerState.CLOSED, entries - 1, entries * 100)


@pytest.fixture
def storage(open_storage):
    storage = open_storage(entry_log_size_limit=HEADER_SIZE + PER_LOG * RECORD)
    next_entry: dict[int, int] = {}
    for counts in LOGS:
        for ledger_id, count in counts.items():
            first = next_entry.get(ledger_id, 0)
            assert add(storage, ledger_id, first, count) == []
            next_entry[ledger_id] = first + count
    storage.entry_logger.flush()
    assert list_log_ids(storage.config.ledger_dir) == [0, 1, 2, 3, 4]
    return storage


def view_of(storage, gc: GcConfig):
    """The storage as offline_view reads its directories, with the ledgers its index holds in memory (what only
    the running bookie knows: no index file is written yet)."""
    config = BookieConfig.load(
        None,
        {
            "journalDirectories": str(storage.config.ledger_dir),
            "ledgerDirectories": str(storage.config.ledger_dir),
            "majorCompactionThreshold": str(gc.major_threshold),
            "minorCompactionThreshold": str(gc.minor_threshold),
        },
    )
    view = offline_view(config, ME)
    assert [log.log_id for log in view.logs if log.active] == [storage.entry_logger.current_id]
    view.local_ledgers = dict.fromkeys(storage.ledger_ids(), -1)
    return view


@pytest.mark.parametrize(
    "threshold,compacted",
    [(0.0, []), (0.2, [1]), (0.6, [1, 0]), (0.85, [1, 0, 3]), (1.0, [1, 0, 3])],
)
def test_the_estimate_is_what_a_major_compaction_then_does(storage, threshold, compacted):
    gc_config = GcConfig(major_threshold=threshold, minor_threshold=0)
    metadata = {lid: closed(10) for counts in LOGS for lid in counts if lid not in DELETED}
    estimate = explain(view_of(storage, gc_config), metadata, now=0.0, threshold=threshold).at_threshold
    assert estimate is not None
    assert (ids(estimate.deleted), ids(estimate.compacted)) == ([2], compacted)

    before = sum(log_path(storage.config.ledger_dir, i).stat().st_size for i in (0, 1, 2, 3))
    run = GarbageCollector(storage, gc_config, lambda ids: set(ids) - DELETED).run((True, False))
    assert (run.logs_deleted, run.logs_compacted) == (1, len(compacted))
    assert (run.bytes_reclaimed, run.bytes_copied) == (estimate.reclaimed, estimate.copied)
    assert estimate.reclaimed <= before


def ids(keys: list[tuple[str, int]]) -> list[int]:
    return [log_id for _, log_id in keys]


def log(log_id, live, total=1000, size=4000, ledgers=1, **flags) -> GcLog:
    return GcLog(log_id, size, total, live, ledgers if live else 0, **flags)


def test_emptiest_first_stopping_at_the_first_log_not_under_the_threshold():
    logs = [log(1, 500), log(2, 100), log(3, 900), log(4, 300)]
    assert ids(reclaimable(logs, 0.5).compacted) == [2, 4]  # 1 is at 0.5: not under, and the run stops there
    assert ids(reclaimable(logs, 0.95).compacted) == [2, 4, 1, 3]
    got = reclaimable(logs, 0.35)
    assert (got.copied, got.reclaimed) == (400, 2 * 4000 - new_log_size(100, 1) - new_log_size(300, 1))


def test_logs_with_nothing_live_go_whatever_the_threshold_and_compaction_disabled():
    logs = [log(1, 0), log(2, 100), log(3, 0, active=True)]
    for got in (reclaimable(logs, 0.0), reclaimable(logs, 0.9, compact=False)):
        assert (ids(got.deleted), got.compacted, got.reclaimed, got.copied) == ([1], [], 4000, 0)


def test_the_active_log_is_never_taken_and_a_stalled_one_is_skipped_while_the_others_go_on():
    logs = [log(1, 100, stalled=True), log(2, 200), log(3, 50, active=True)]
    assert ids(reclaimable(logs, 0.5).compacted) == [2]

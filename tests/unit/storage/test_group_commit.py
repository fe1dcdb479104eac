import threading

from bookie.server.metrics import JournalStats
from bookie.server.prometheus import StatsProvider
from bookie.storage import journal as jf
from bookie.storage.group_commit import Journal


def record(entry_id):
    body = (1).to_bytes(8, "big") + entry_id.to_bytes(8, "big") + b"payload!"  # >= 24 bytes, as any entry
    return len(body).to_bytes(4, "big") + body


def test_a_group_is_acknowledged_once_durable_and_advances_the_log_mark(tmp_path):
    stats = JournalStats(StatsProvider().logger("journal"))
    journal = Journal(tmp_path, max_group_wait_ms=200, prealloc_mb=1, stats=stats)
    journal.start()
    acked = threading.Semaphore(0)
    try:
        start = journal.last_log_mark
        for entry_id in range(10):
            journal.log(record(entry_id), lambda error: acked.release())
        for _ in range(10):
            assert acked.acquire(timeout=5)
        assert journal.last_log_mark > start
    finally:
        journal.stop()
    assert stats.batch_entries.sum[1] == 10 and stats.sync.count[1] <= 2  # grouped, not one fsync per record
    assert stats.add_entry.count[1] == stats.queue_latency.count[1] == 10 and journal.queue_depth() == 0
    assert stats.write_bytes.value == 10 * (len(record(0)) - 4) and stats.flush_max_wait.value >= 1
    paths = [jf.journal_path(tmp_path, journal_id) for journal_id in jf.list_journal_ids(tmp_path)]
    replayed = [r for path in paths for r in jf.scan_journal(path)]
    assert len(replayed) == 10


def test_flush_when_queue_empty_does_not_wait_for_the_group_window(tmp_path):
    journal = Journal(tmp_path, max_group_wait_ms=60_000, prealloc_mb=1, flush_when_queue_empty=True)
    journal.start()
    acked = threading.Event()
    try:
        journal.log(record(0), lambda error: acked.set())
        assert acked.wait(10), "a lone record waited for the 60 s group window"
    finally:
        journal.stop()

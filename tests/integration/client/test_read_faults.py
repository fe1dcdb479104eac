"""Reading whole ledgers around failures: a replica lost mid-write, a stripe missing on one bookie."""

import pytest

from bookie.client import BookKeeper
from bookie.client.range_read import READ_WINDOW
from bookie.client.reader import MAX_ENTRY_READS
from bookie.errors import NoSuchLedger

from support.checks import wipe
from support.cluster import metric, reads_ok


def payload(i: int) -> bytes:
    return b"entry-%06d-" % i + b"r" * 40


def test_whole_ledger_reads_back_after_a_bookie_was_killed_mid_write(harness, client_config):
    bookies = harness.start(4)
    count = 120_000
    with BookKeeper(harness.service_uri, client_config) as bk:
        ledger = bk.create_ledger(3, 2, 2)
        victim_id = bk.ledger_metadata(ledger.ledger_id).segments[0].bookies[0]
        victim = next(b for b in bookies if b.bookie_id == victim_id)

        def entries():  # the bookie is killed with about a thousand adds in flight, a third of the way in
            for i in range(count):
                if i == count // 3:
                    victim.stop(kill=True)
                yield payload(i)

        last = ledger.add_entries(entries())
        md = ledger.close()
        assert last == md.last_entry_id == count - 1 and len(md.segments) >= 2

        reader = bk.open_ledger(ledger.ledger_id)
        read = 0
        for entry in reader.iter_entries(0, md.last_entry_id):
            assert entry.entry_id == read and entry.payload == payload(read)
            read += 1
        assert read == count


def test_a_stripe_lost_on_a_live_bookie_is_streamed_from_the_next_replica(harness, client_config):
    """Not one request per missing entry: the wiped bookie (which answers ENOLEDGER) gets at most one window of
    pipelined reads per range read (those in flight when the first failed), not one per entry it lost; and the reader
    never has more than MAX_ENTRY_READS single-entry reads in flight."""
    bookies = harness.start(3)
    count = 50_000
    with BookKeeper(harness.service_uri, client_config) as bk:
        ledger = bk.create_ledger(3, 2, 2)
        ledger.add_entries(payload(i) for i in range(count))
        md = ledger.close()
        wiped = next(b for b in bookies if b.bookie_id == md.segments[0].bookies[1])
        wipe(wiped)
        harness.restart(wiped)
        handle = bk.open_ledger(ledger.ledger_id)
        assert [e.payload for e in handle.iter_entries(0, count - 1)] == [payload(i) for i in range(count)]
        reads = metric(wiped, "bookkeeper_server_READ_ENTRY_REQUEST_count")  # answered, either way
        windows = -(-count // handle._reader.window)
        assert reads <= windows * READ_WINDOW < count // 3, f"{reads} reads for {windows} windows"
        assert handle._reader._requests().peak <= MAX_ENTRY_READS


def test_a_ledger_deleted_while_read_says_so(harness, bkctl, client_config):
    harness.start(3)
    with BookKeeper(harness.service_uri, client_config) as bk:
        ledger = bk.create_ledger(3, 2, 2)
        ledger.add_entries(payload(i) for i in range(3000))
        ledger.close()
        handle = bk.open_ledger(ledger.ledger_id)
        assert [e.entry_id for e in handle.read(0, 9)] == list(range(10))
        for args in (("ledger", "delete", str(ledger.ledger_id), "--yes"), ("bookie", "gc", "--all", "--wait")):
            result = bkctl("-u", harness.service_uri, *args)
            assert result.exit_code == 0, result.stderr
        with pytest.raises(NoSuchLedger, match=f"^ledger {ledger.ledger_id} was deleted$"):
            handle.read(0, 2999)


def test_entries_read_one_at_a_time_stay_within_the_bound(harness, client_config):
    """The last resort of a window (entries no stream gave): thousands of entries, never more than MAX_ENTRY_READS
    single-entry reads in flight, none of them CANCELLED by the bookie."""
    (bookie,) = harness.start(1)
    count = 6000
    with BookKeeper(harness.service_uri, client_config) as bk:
        ledger = bk.create_ledger(1, 1, 1)
        ledger.add_entries(payload(i) for i in range(count))
        ledger.close()
        reader = bk.open_ledger(ledger.ledger_id)._reader
        found = {}
        bk.run(reader._read_each(list(range(count)), found))
        assert [found[i].payload for i in range(count)] == [payload(i) for i in range(count)]
        assert reads_ok(bookie) == count
        assert 1 < reader._requests().peak <= MAX_ENTRY_READS

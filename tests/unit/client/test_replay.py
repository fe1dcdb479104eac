"""LedgerReplay's adds (bookie/client/replay.py) against stand-in bookies that record what they are sent: the framing
of stored fields, the write sets, every replica's ack awaited, bytes in flight bounded, failures named. The real
bookies' side is tests/integration/client/test_replay.py."""

import asyncio
import hashlib

import pytest

from bookie.client.bookie_client import EOK, LedgerEntries, RangeStopped, StatusCode
from bookie.client.config import ClientConfig
from bookie.client.replay import IN_FLIGHT_BYTES, LedgerReplay, ReplayEntry, payload_xor
from bookie.codec.availability import AvailabilityOfEntries
from bookie.codec.digest import Digester, DigestType, master_key
from bookie.codec.entry import frame_entry
from bookie.codec.records import pack_record
from bookie.codec.write_set import wanted_entries, write_set
from bookie.errors import BKError, CorruptData, InvalidArgument, OperationTimeout
from bookie.meta.ledger_metadata import LedgerMetadata, Segment

PASSWORD = b"unit-secret"
ENSEMBLE = ("b0:3181", "b1:3181", "b2:3181")


class StandIn:
    """A bookie that records adds and answers each one on the next turn of the loop (``status``), or never."""

    def __init__(self, bookie_id, status=EOK, answers=True):
        self.bookie_id, self.status, self.answers = bookie_id, status, answers
        self.failure = None
        self.adds = []
        self.unanswered = 0
        self.peak = 0

    def add(self, ledger_id, key, recovery, record, target, token, index):
        self.adds.append((ledger_id, key, recovery, record, token.entry_id, index))
        self.unanswered += len(record)
        self.peak = max(self.peak, self.unanswered)
        if self.answers:
            asyncio.get_running_loop().call_soon(self.answer, target, token, index, len(record))

    def answer(self, target, token, index, size):
        self.unanswered -= size
        target.added(token, index, self.status, self)

    def stored(self):
        """What it holds: entry id -> framed entry (the last add of each)."""
        return {add[4]: add[3][4:] for add in self.adds}

    async def read_range(self, ledger_id, first, last, timeout, stripe=None, high_priority=False):
        held = self.stored()
        chunk = []
        for entry_id in wanted_entries(
            first, last, stripe.bookie_index, stripe.ensemble_size, stripe.write_quorum_size
        ):
            if entry_id not in held:
                yield chunk
                yield RangeStopped(entry_id, StatusCode.ENOENTRY)
                return
            chunk.append((entry_id, held[entry_id]))
        yield chunk

    async def list_entries(self, ledger_ids, timeout):
        for ledger_id in ledger_ids:
            yield LedgerEntries(ledger_id, EOK, AvailabilityOfEntries.from_entries(self.stored()).encode())


class Core:
    tls = None

    def __init__(self, bookies, timeout=5.0):
        self.config = ClientConfig(add_entry_timeout=timeout)
        self.bookies = {b.bookie_id: b for b in bookies}

    def bookie(self, bookie_id):
        return self.bookies[bookie_id]


def replay_of(core, digest=DigestType.CRC32C, ledger_id=7, ensemble=ENSEMBLE, write_quorum=2):
    md = LedgerMetadata(
        ensemble_size=len(ensemble),
        write_quorum_size=write_quorum,
        ack_quorum_size=1,
        segments=(Segment(0, ensemble),),
        digest_type=digest,
        password=PASSWORD,
    )
    return LedgerReplay(core, ledger_id, md, 0, PASSWORD, ("bkctl.restore", b"run"))


def entries(count, size=100):
    return [ReplayEntry(i, i - 3, (i + 1) * size + 5, bytes([i % 256]) * size) for i in range(count)]


@pytest.mark.parametrize("digest", list(DigestType), ids=lambda d: d.name)
def test_each_entry_is_framed_with_its_stored_fields_and_sent_to_its_write_set(digest):
    bookies = [StandIn(b) for b in ENSEMBLE]
    given = entries(20)

    async def run():
        replay = replay_of(Core(bookies), digest)
        await replay.write(given[:7])
        await replay.write(iter(given[7:]))  # continues from entry 7

    asyncio.run(run())
    digester = Digester(digest, PASSWORD)
    for entry in given:
        record = pack_record(frame_entry(digester, 7, entry.entry_id, entry.lac, entry.length, entry.payload))
        sent = {index: add for index, bookie in enumerate(bookies) for add in bookie.adds if add[4] == entry.entry_id}
        assert sorted(sent) == sorted(write_set(entry.entry_id, 3, 2))
        assert all(add == (7, master_key(PASSWORD), False, record, entry.entry_id, i) for i, add in sent.items())


def test_entries_are_taken_in_order_from_zero_only():
    async def run():
        replay = replay_of(Core([StandIn(b) for b in ENSEMBLE]))
        with pytest.raises(InvalidArgument, match="ledger 7: entry 1 given where entry 0 comes next"):
            await replay.write(entries(3)[1:])
        await replay.write(entries(2))
        with pytest.raises(InvalidArgument, match="entry 0 given where entry 2 comes next"):
            await replay.write(entries(1))

    asyncio.run(run())


def test_bytes_in_flight_are_bounded_and_every_replica_is_awaited():
    bookies = [StandIn(b) for b in ENSEMBLE]
    size = 16 << 10
    count = 3 * IN_FLIGHT_BYTES // size

    async def run():
        await replay_of(Core(bookies), write_quorum=3).write(entries(count, size))
        return [b.unanswered for b in bookies]

    assert asyncio.run(run()) == [0, 0, 0]  # write returned once every replica had answered
    assert all(len(b.adds) == count for b in bookies)
    assert sum(b.peak for b in bookies) <= IN_FLIGHT_BYTES + 3 * (size + 64)


def test_a_refusing_bookie_fails_the_write_naming_ledger_entry_and_bookie_without_the_password():
    bookies = [StandIn(ENSEMBLE[0]), StandIn(ENSEMBLE[1], status=StatusCode.EIO), StandIn(ENSEMBLE[2])]

    async def run():
        replay = replay_of(Core(bookies), DigestType.HMAC)
        with pytest.raises(BKError) as failed:
            await replay.write(entries(10))
        with pytest.raises(BKError, match="b1:3181"):
            await replay.close(9, 1000)  # nothing after a failure: the caller abandons
        return str(failed.value), repr(replay)

    message, shown = asyncio.run(run())
    assert message == "ledger 7: bookie b1:3181 failed entry 0: EIO (501)"
    assert PASSWORD.decode() not in shown and "ledger_id=7" in shown


def test_a_replay_closes_at_the_last_entry_it_wrote_only():
    async def run():
        replay = replay_of(Core([StandIn(b) for b in ENSEMBLE]))
        with pytest.raises(InvalidArgument, match=r"^ledger 7: cannot close at entry 9: no entry was written$"):
            await replay.close(9, 1000)
        await replay.write(entries(3))
        with pytest.raises(InvalidArgument, match=r"^ledger 7: cannot close at entry 9: entries 0\.\.2 were written$"):
            await replay.close(9, 1000)

    asyncio.run(run())


def test_a_bookie_refusing_the_key_may_hold_a_deleted_ledger_of_the_id():
    bookies = [StandIn(ENSEMBLE[0], status=StatusCode.EUA), StandIn(ENSEMBLE[1]), StandIn(ENSEMBLE[2])]

    async def run():
        await replay_of(Core(bookies)).write(entries(3))

    with pytest.raises(BKError, match=r"bookie b0:3181 failed entry 0: unauthorized \(EUA\): wrong password.*, or a "):
        asyncio.run(run())


def test_a_bookie_that_never_answers_times_the_write_out_naming_it():
    bookies = [StandIn(ENSEMBLE[0]), StandIn(ENSEMBLE[1], answers=False), StandIn(ENSEMBLE[2])]

    async def run():
        await replay_of(Core(bookies, timeout=0.2)).write(entries(4))

    with pytest.raises(OperationTimeout, match=r"ledger 7: bookie b1:3181 did not acknowledge entry 0 within 0\.2 s"):
        asyncio.run(run())


def test_payload_xor_is_the_exports_checksum():
    pairs = [(0, b"a"), (1, b""), (5, b"payload")]
    expected = 0
    for entry_id, payload in pairs:
        digest = hashlib.blake2b(ledger_id_bytes(42) + entry_id.to_bytes(8, "big") + payload, digest_size=8).digest()
        expected ^= int.from_bytes(digest, "big")
    assert payload_xor(42, pairs) == expected
    assert payload_xor(42, []) == 0 and payload_xor(43, pairs) != expected


def ledger_id_bytes(ledger_id):
    return ledger_id.to_bytes(8, "big")


def damaged(bookie, entry_id, how):
    """Drop (``how`` None) or replace the last byte of (``how`` bytes) what ``bookie`` holds of ``entry_id``."""
    for i, add in enumerate(bookie.adds):
        if add[4] == entry_id:
            if how is None:
                del bookie.adds[i]
            else:
                bookie.adds[i] = (*add[:3], add[3][:-1] + how, *add[4:])
            return


@pytest.mark.parametrize("every_replica", [True, False], ids=["every-replica", "one-replica"])
def test_verify_finds_a_replica_that_lacks_an_entry_or_holds_another_payload(every_replica):
    given = entries(30)
    xor = payload_xor(7, ((e.entry_id, e.payload) for e in given))

    async def check(damage=None):
        bookies = [StandIn(b) for b in ENSEMBLE]
        replay = replay_of(Core(bookies), DigestType.CRC32C)
        await replay.write(given)
        if damage is not None:
            damage(bookies)
        await replay.verify(xor, every_replica=every_replica)

    asyncio.run(check())
    with pytest.raises(CorruptData, match="payload checksum"):
        asyncio.run(replay_checksum_differs(given, every_replica))  # the checksum of another ledger id
    # entry 4 is on bookies 1 and 2 (write set [1, 2]): the second replica lacks it
    lacks = "bookie b2:3181 does not return entry 4" if every_replica else "bookie b2:3181 lacks 1 of its entries"
    with pytest.raises(CorruptData, match=lacks):
        asyncio.run(check(lambda bookies: damaged(bookies[2], 4, None)))
    # a second replica whose bytes changed: its digest fails when it is read back; unread, it goes unseen
    if every_replica:
        with pytest.raises(CorruptData, match="ledger 7 entry 4: digest mismatch from b2:3181"):
            asyncio.run(check(lambda bookies: damaged(bookies[2], 4, b"!")))
    else:
        asyncio.run(check(lambda bookies: damaged(bookies[2], 4, b"!")))
    with pytest.raises(CorruptData, match="ledger 7 entry 4: digest mismatch from b1:3181"):
        asyncio.run(check(lambda bookies: damaged(bookies[1], 4, b"!")))


async def replay_checksum_differs(given, every_replica):
    replay = replay_of(Core([StandIn(b) for b in ENSEMBLE]))
    await replay.write(given)
    await replay.verify(payload_xor(8, ((e.entry_id, e.payload) for e in given)), every_replica=every_replica)

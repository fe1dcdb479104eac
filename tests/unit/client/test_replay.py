"""LedgerReplay's adds (bookie/client/replay.py) against stand-in bookies that record what they are sent: the framing
of stored fields, the write sets, every replica's ack awaited, bytes in flight bounded, failures named. The real
bookies' side is tests/integration/client/test_replay.py."""

import asyncio
import hashlib

import pytest

from bookie.client.bookie_client import EOK, StatusCode
from bookie.client.config import ClientConfig
from bookie.client.replay import IN_FLIGHT_BYTES, LedgerReplay, ReplayEntry, payload_xor
from bookie.codec.digest import Digester, DigestType, master_key
from bookie.codec.entry import frame_entry
from bookie.codec.records import pack_record
from bookie.codec.write_set import write_set
from bookie.errors import BKError, InvalidArgument, OperationTimeout
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


class Core:
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

"""Replaying a ledger under a chosen id (bookie/client/replay.py): claim, write, verify, close; resume and abandon."""

import pyarrow as pa
import pytest

from admin.export.part_files import LedgerStats
from bookie.client import BookKeeper
from bookie.client.bookie_client import EOK
from bookie.client.replay import LedgerReplay, ReplayEntry, payload_xor
from bookie.codec.digest import DigestType
from bookie.errors import (
    BKError,
    CorruptData,
    InvalidArgument,
    LedgerExists,
    MetadataVersionConflict,
    NoSuchLedger,
    ServiceUnavailable,
    Unauthorized,
)
from bookie.meta.ledger_metadata import LedgerState

from support.cluster import shared_cluster

PASSWORD = b"replay-secret"
MARKER = ("bkctl.restore", b"run-1")
CUSTOM = {"component": b"managed-ledger", "pulsar/managed-ledger": b"tenant/ns/persistent/topic"}
ENTRIES = 400


@pytest.fixture(scope="module")
def target(zookeeper, tmp_path_factory):
    """A second cluster (another root, its own three bookies): where ledgers are replayed under their own ids."""
    with shared_cluster(zookeeper, tmp_path_factory.mktemp("target"), 3) as harness:
        yield harness


@pytest.fixture(scope="module")
def clients(five_bookies, target):
    """The module's clients by (cluster, protocol), made as a test first asks for one."""
    made: dict[tuple[str, bool], BookKeeper] = {}

    def client(harness, config):
        key = (harness.service_uri, config.use_v2_wire_protocol)
        if key not in made:
            made[key] = BookKeeper(harness.service_uri, config)
        return made[key]

    yield client
    for bk in made.values():
        bk.close()


@pytest.fixture
def bk(clients, five_bookies, client_config):
    return clients(five_bookies, client_config)


def write_source(bk, digest=DigestType.CRC32, entries=ENTRIES, password=PASSWORD):
    """A closed ledger written by our client: varied payload sizes, custom metadata; its id and entries."""
    ledger = bk.create_ledger(3, 2, 2, digest_type=digest, password=password, custom_metadata=CUSTOM)
    ledger.add_entries((b"entry %d " % i + bytes(range(256)) * (i % 7) for i in range(entries)), max_outstanding=64)
    ledger.close()
    with bk.open_ledger(ledger.ledger_id, password=password) as reader:
        return ledger.ledger_id, reader.read(0, reader.last_add_confirmed)


def replay_entries(entries):
    return [ReplayEntry(e.entry_id, e.last_add_confirmed, e.length, e.payload) for e in entries]


def framed(bk, ledger_id, entry_id):
    """An entry's framed bytes as a bookie of its write set stores them."""
    md = bk.ledger_metadata(ledger_id)
    bookie = md.segment_of(entry_id).bookies[entry_id % md.ensemble_size]
    answer = bk.run(bk.core.bookie(bookie).read_entry(ledger_id, entry_id, 10.0, "test"))
    assert answer.status == EOK
    return answer.body


def replay(bk, ledger_id, source_md, entries, checksum_ledger_id=None, password=PASSWORD, **claim):
    """Claim, write, verify and close: the replayed ledger's metadata."""

    async def run():
        replayed = await LedgerReplay.claim(bk.core, ledger_id, source_md, password, MARKER, **claim)
        await replayed.add(entries[: len(entries) // 2])  # sent; verify waits for their acknowledgements
        await replayed.write(iter(entries[len(entries) // 2 :]))  # a second call continues where the first ended
        xor = payload_xor(checksum_ledger_id or ledger_id, ((e.entry_id, e.payload) for e in entries))
        await replayed.verify(xor, checksum_ledger_id)
        return await replayed.close(source_md.last_entry_id, source_md.length)

    return bk.run(run())


def same_fields(replayed, source):
    """Metadata equal field by field but the ensembles and the token of its creation."""
    assert replayed.with_changes(segments=source.segments, c_token=source.c_token) == source
    assert replayed.ctime == source.ctime and replayed.custom_metadata == CUSTOM and replayed.password == PASSWORD


@pytest.mark.parametrize("digest", [DigestType.CRC32, DigestType.HMAC], ids=lambda d: d.name)
def test_a_replay_under_the_same_id_on_another_cluster_is_byte_for_byte_the_source(
    bk, clients, target, client_config, digest
):
    ledger_id, entries = write_source(bk, digest)
    source_md = bk.ledger_metadata(ledger_id)
    other = clients(target, client_config)
    md = replay(other, ledger_id, source_md, replay_entries(entries))
    assert (md.state, md.last_entry_id, md.length) == (LedgerState.CLOSED, ENTRIES - 1, source_md.length)
    same_fields(other.ledger_metadata(ledger_id), source_md)
    with other.open_ledger(ledger_id, password=PASSWORD) as reader:
        assert reader.read(0, ENTRIES - 1) == entries  # ids, stored LAC and length fields, payloads
    for entry_id in (0, 1, 2, 199, ENTRIES - 1):
        assert framed(other, ledger_id, entry_id) == framed(bk, ledger_id, entry_id)


@pytest.mark.parametrize("digest", [DigestType.CRC32, DigestType.HMAC], ids=lambda d: d.name)
def test_a_replay_under_a_fresh_id_reads_back_the_same_entries(bk, digest):
    source_id, entries = write_source(bk, digest)
    source_md = bk.ledger_metadata(source_id)
    new_id = source_id + 10_000_000
    replay(bk, new_id, source_md, replay_entries(entries), checksum_ledger_id=source_id)
    same_fields(bk.ledger_metadata(new_id), source_md)
    with bk.open_ledger(new_id, password=PASSWORD) as reader:
        copy = reader.read(0, ENTRIES - 1)
    assert [(e.entry_id, e.last_add_confirmed, e.length, e.payload) for e in copy] == [
        (e.entry_id, e.last_add_confirmed, e.length, e.payload) for e in entries
    ]
    assert {e.ledger_id for e in copy} == {new_id}
    stats = LedgerStats()  # the checksum the export computes over its files is the one verify compares
    stats.add(
        pa.RecordBatch.from_pydict(
            {
                "ledgerId": [source_id] * ENTRIES,
                "entryId": list(range(ENTRIES)),
                "payload": [e.payload for e in entries],
            }
        )
    )
    assert stats.ledgers[source_id][4] == payload_xor(source_id, ((e.entry_id, e.payload) for e in entries))


def test_claiming_a_taken_id_raises_ledger_exists_and_leaves_it_alone(bk):
    ledger_id, _ = write_source(bk, entries=3)
    before = bk.ledger_metadata(ledger_id)
    with pytest.raises(LedgerExists, match=f"ledger {ledger_id} already exists"):
        bk.run(LedgerReplay.claim(bk.core, ledger_id, before, PASSWORD, MARKER))
    assert bk.ledger_metadata(ledger_id) == before


def test_verify_names_a_wrong_checksum_and_the_ledger_stays_marked(bk):
    source_id, entries = write_source(bk, entries=50)
    new_id = source_id + 20_000_000

    async def run():
        replayed = await LedgerReplay.claim(bk.core, new_id, bk.ledger_metadata(source_id), PASSWORD, MARKER)
        await replayed.write(replay_entries(entries))
        await replayed.verify(None)  # the replicas agree with each other
        right = payload_xor(source_id, ((e.entry_id, e.payload) for e in entries))
        await replayed.verify(right, source_id)
        await replayed.verify(right, source_id, every_replica=False)  # one replica read, the others' entry lists
        with pytest.raises(CorruptData, match=f"ledger {new_id}: payload checksum"):
            await replayed.verify(right ^ 1, source_id, every_replica=False)
        with pytest.raises(CorruptData, match=f"ledger {new_id}: payload checksum [0-9a-f]{{16}} .* expected"):
            await replayed.verify(right ^ 1, source_id)
        with pytest.raises(CorruptData, match=f"ledger {new_id}: payload checksum"):
            await replayed.verify(right)  # over the new id: not the source's checksum

    bk.run(run())
    md = bk.ledger_metadata(new_id)
    assert md.state == LedgerState.OPEN and md.custom_metadata[MARKER[0]] == MARKER[1]


def test_resume_then_close_commits_and_abandon_deletes(bk):
    source_id, entries = write_source(bk, entries=60)
    source_md = bk.ledger_metadata(source_id)
    new_id, dropped = source_id + 30_000_000, source_id + 40_000_000

    async def run():
        first = await LedgerReplay.claim(bk.core, new_id, source_md, PASSWORD, MARKER)
        await first.write(replay_entries(entries[:20]))  # then the run stops
        with pytest.raises(InvalidArgument, match=f"ledger {new_id} does not carry the marker bkctl.restore=run-2"):
            await LedgerReplay.resume(bk.core, new_id, PASSWORD, ("bkctl.restore", b"run-2"))
        with pytest.raises(Unauthorized, match=f"wrong password for ledger {new_id}"):
            await LedgerReplay.resume(bk.core, new_id, b"wrong", MARKER)
        again = await LedgerReplay.resume(bk.core, new_id, PASSWORD, MARKER)
        assert again.metadata == first.metadata
        await again.write(replay_entries(entries))  # from entry 0 again
        await again.verify(payload_xor(new_id, ((e.entry_id, e.payload) for e in entries)))
        closed = await again.close(source_md.last_entry_id, source_md.length)
        with pytest.raises(InvalidArgument, match=f"ledger {new_id} does not carry the marker"):
            await LedgerReplay.resume(bk.core, new_id, PASSWORD, MARKER)

        abandoned = await LedgerReplay.claim(bk.core, dropped, source_md, PASSWORD, MARKER)
        await abandoned.write(replay_entries(entries[:5]))
        await abandoned.abandon()
        await abandoned.abandon()  # already gone: nothing to do
        return closed

    closed = bk.run(run())
    assert (closed.state, closed.last_entry_id, closed.length) == (LedgerState.CLOSED, 59, source_md.length)
    assert MARKER[0] not in bk.ledger_metadata(new_id).custom_metadata
    with pytest.raises(NoSuchLedger):
        bk.ledger_metadata(dropped)


def test_a_close_after_someone_else_changed_the_ledger_is_refused(bk):
    source_id, entries = write_source(bk, entries=5)
    source_md = bk.ledger_metadata(source_id)
    new_id = source_id + 50_000_000

    async def run():
        replayed = await LedgerReplay.claim(bk.core, new_id, source_md, PASSWORD, MARKER)
        await replayed.write(replay_entries(entries))
        md, version = bk.core.ledgers.read(new_id)
        bk.core.ledgers.write(new_id, md.with_changes(custom_metadata={"someone": b"else"}), version)
        with pytest.raises(MetadataVersionConflict, match=f"ledger {new_id}: its metadata changed since it was"):
            await replayed.close(source_md.last_entry_id, source_md.length)
        with pytest.raises(MetadataVersionConflict, match="not deleted"):
            await replayed.abandon()

    bk.run(run())
    assert bk.ledger_metadata(new_id).custom_metadata == {"someone": b"else"}


def test_bad_input_and_a_failing_bookie_are_one_line_errors_without_the_password(bk, five_bookies):
    source_id, entries = write_source(bk, entries=10)
    source_md = bk.ledger_metadata(source_id)
    base = source_id + 60_000_000
    live = [b.bookie_id for b in five_bookies.bookies]

    async def run():
        with pytest.raises(
            ServiceUnavailable, match=f"ledger {base}: not enough writable bookies: need 6, 5 available"
        ):
            await LedgerReplay.claim(bk.core, base, source_md.with_changes(ensemble_size=6), PASSWORD, MARKER)
        with pytest.raises(InvalidArgument, match="is not 3 distinct bookies"):
            await LedgerReplay.claim(bk.core, base, source_md, PASSWORD, MARKER, ensemble=live[:2])
        replayed = await LedgerReplay.claim(bk.core, base, source_md, PASSWORD, MARKER, ensemble=live[:3])
        assert PASSWORD.decode() not in repr(replayed) and PASSWORD.decode() not in repr(replayed.metadata)
        with pytest.raises(InvalidArgument, match=f"ledger {base}: entry 1 given where entry 0 comes next"):
            await replayed.write(replay_entries(entries[1:]))
        await replayed.abandon()

        dead = "127.0.0.1:1"  # nothing listens there
        broken = await LedgerReplay.claim(bk.core, base + 1, source_md, PASSWORD, MARKER, ensemble=[*live[:2], dead])
        with pytest.raises(BKError) as failed:
            await broken.write(replay_entries(entries))
        message = str(failed.value)
        assert f"ledger {base + 1}: bookie {dead} failed entry " in message and "\n" not in message
        assert PASSWORD.decode() not in message
        with pytest.raises(BKError, match=f"bookie {dead}"):
            await broken.close(source_md.last_entry_id, source_md.length)  # a failed replay is not committed
        await broken.abandon()

    bk.run(run())

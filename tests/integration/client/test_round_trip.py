import pytest

from bookie.client import BookKeeper
from bookie.codec.digest import DigestType
from bookie.errors import EntryTooLarge, LedgerClosed, NoSuchLedger, NotEnoughBookies, Unauthorized
from bookie.meta.ledger_metadata import LedgerState

QUORUMS = [(1, 1, 1), (3, 2, 2), (3, 3, 2), (5, 3, 2)]


@pytest.fixture(scope="module")
def clients(five_bookies):
    """The module's clients, one per protocol, made as a test first asks for its protocol's."""
    made: dict[bool, BookKeeper] = {}
    yield (
        lambda config: (
            made.get(config.use_v2_wire_protocol)
            or made.setdefault(config.use_v2_wire_protocol, BookKeeper(five_bookies.service_uri, config))
        )
    )
    for client in made.values():
        client.close()


@pytest.fixture
def bk(clients, client_config):
    return clients(client_config)


@pytest.mark.parametrize("quorum", QUORUMS, ids=lambda q: "-".join(map(str, q)))
@pytest.mark.parametrize("digest", list(DigestType), ids=lambda d: d.name)
def test_round_trip(bk, quorum, digest):
    payloads = [b"entry %d " % i + bytes(range(256)) * (i % 5) for i in range(300)]
    ledger = bk.create_ledger(*quorum, digest_type=digest, password=b"secret", custom_metadata={"app": b"test"})
    assert ledger.add_entry(payloads[0]) == 0
    assert ledger.add_entries(payloads[1:], max_outstanding=50) == 299
    assert ledger.last_add_confirmed == 299
    md = ledger.close()
    assert (md.state, md.last_entry_id, md.length) == (LedgerState.CLOSED, 299, sum(map(len, payloads)))
    assert (md.ensemble_size, md.write_quorum_size, md.ack_quorum_size, md.digest_type) == (*quorum, digest)
    assert md.custom_metadata == {"app": b"test"} and md.password == b"secret"
    reader = bk.open_ledger(ledger.ledger_id, password=b"secret")
    assert reader.last_add_confirmed == 299
    assert [e.payload for e in reader.read(0, 299)] == payloads
    assert [e.payload for e in reader.iter_entries(100, 150)] == payloads[100:151]
    stream = reader.iter_entries(0, 299)
    assert next(stream).payload == payloads[0]
    stream.close()  # a reader that stops early leaves nothing behind
    assert reader.corruptions == []


def test_pipelined_adds_complete_in_order(bk):
    ledger = bk.create_ledger(3, 2, 2)
    futures = [ledger.add_entry_async(b"%d" % i) for i in range(2000)]
    assert [f.result(30) for f in futures] == list(range(2000))
    ledger.close()


def test_errors(bk):
    ledger = bk.create_ledger(3, 2, 2, password=b"right")
    with pytest.raises(EntryTooLarge, match="nothing written"):
        ledger.add_entry(b"x" * (bk.config.max_entry_size + 1))
    assert ledger.add_entry(b"ok") == 0  # the oversized entry took no entry id
    ledger.close()
    with pytest.raises(LedgerClosed):
        ledger.add_entry(b"late")
    with pytest.raises(Unauthorized, match=f"wrong password for ledger {ledger.ledger_id}"):
        bk.open_ledger(ledger.ledger_id, password=b"wrong")
    with pytest.raises(NoSuchLedger):
        bk.open_ledger(10**12)
    with pytest.raises(NotEnoughBookies, match="need 6, 5 available"):
        bk.create_ledger(6, 2, 2)


def test_open_ledger_without_recovery_reads_up_to_the_lac_and_tails(bk):
    writer = bk.create_ledger(3, 2, 2)
    for i in range(10):
        writer.add_entry(b"%d" % i)
    reader = bk.open_ledger(writer.ledger_id, recovery=False)
    assert reader.last_add_confirmed == 8  # the LAC rides on entry 9, which no later entry confirmed yet
    assert [e.payload for e in reader.read(0, 8)] == [b"%d" % i for i in range(9)]
    writer.add_entry(b"10")
    assert reader.wait_for_lac(8, timeout=10) == 9
    assert writer.add_entry(b"11") == 11  # the writer was not fenced
    writer.close()
    assert bk.ledger_metadata(writer.ledger_id).last_entry_id == 11


def test_delete(bk):
    ledger = bk.create_ledger(3, 2, 2)
    ledger.add_entry(b"x")
    ledger.close()
    bk.delete_ledger(ledger.ledger_id)
    with pytest.raises(NoSuchLedger):
        bk.ledger_metadata(ledger.ledger_id)

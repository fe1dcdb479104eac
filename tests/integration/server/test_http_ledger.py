"""The ledger endpoints of BookKeeper's HTTP admin API on our bookies, on ledgers written by our client."""

from __future__ import annotations

import base64
import json

import pytest

from bookie.client import BookKeeper

from support.cluster import http_call as call


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    from support.cluster import shared_cluster

    with shared_cluster(zookeeper, tmp_path_factory.mktemp("http-ledger"), bookies=2, http=True) as harness:
        yield harness


@pytest.fixture(scope="module")
def bookie(cluster):
    return cluster.bookies[0]


def get(bookie, path: str):
    status, _, text = call(bookie, "GET", path)
    assert status == 200, text
    return json.loads(text)


def test_a_ledger_is_listed_its_metadata_and_entries_read_then_deleted(cluster, bookie):
    with BookKeeper(cluster.service_uri) as bk:
        handle = bk.create_ledger(2, 2, 2, password=b"secret", custom_metadata={"app": b"orders"})
        handle.add_entries([b"alpha", b"beta", b"\xffraw"])
        handle.close()
        ensemble = bk.ledger_metadata(handle.ledger_id).segments[0].bookies
    lid = str(handle.ledger_id)
    assert get(bookie, "/api/v1/ledger/list")[lid] is None

    (doc,) = get(bookie, f"/api/v1/ledger/metadata?ledger_id={lid}").values()
    assert (doc["ledgerId"], doc["state"], doc["closed"], doc["lastEntryId"], doc["length"]) == (
        handle.ledger_id,
        "CLOSED",
        True,
        2,
        len(b"alphabeta\xffraw"),
    )
    assert (doc["ensembleSize"], doc["writeQuorumSize"], doc["ackQuorumSize"], doc["digestType"]) == (2, 2, 2, "CRC32")
    assert doc["allEnsembles"] == {"0": [{"id": b} for b in ensemble]}
    assert doc["customMetadata"] == {"app": base64.b64encode(b"orders").decode()}
    assert doc["password"] == base64.b64encode(b"******").decode()  # never the password
    assert get(bookie, "/api/v1/ledger/list?print_metadata=true&decode_meta=true")[lid] == doc
    serialized = get(bookie, "/api/v1/ledger/list?print_metadata=true")[lid]
    assert serialized.startswith("BookieMetadataFormatVersion\t3\n") and "secret" not in serialized

    assert get(bookie, f"/api/v1/ledger/read?ledger_id={lid}") == {"0": "alpha", "1": "beta", "2": "\ufffdraw"}
    assert get(bookie, f"/api/v1/ledger/read?ledger_id={lid}&start_entry_id=1") == {"1": "beta", "2": "\ufffdraw"}

    status, _, text = call(bookie, "DELETE", f"/api/v1/ledger/delete?ledger_id={lid}")
    assert (status, json.loads(text)) == (200, f"Deleted ledger: {lid}")
    assert lid not in get(bookie, "/api/v1/ledger/list")
    assert call(bookie, "GET", f"/api/v1/ledger/metadata?ledger_id={lid}")[0] == 500


def test_an_open_ledger_is_read_up_to_its_lac_and_its_writer_goes_on(cluster, bookie):
    with BookKeeper(cluster.service_uri) as bk:
        handle = bk.create_ledger(2, 2, 2)
        handle.add_entries(b"open-%d" % i for i in range(5))
        lac = bk.open_ledger(handle.ledger_id, recovery=False).last_add_confirmed
        read = get(bookie, f"/api/v1/ledger/read?ledger_id={handle.ledger_id}")
        assert read == {str(i): f"open-{i}" for i in range(len(read))} and lac < len(read) <= 5
        (doc,) = get(bookie, f"/api/v1/ledger/metadata?ledger_id={handle.ledger_id}").values()
        assert (doc["state"], doc["closed"], doc["lastEntryId"], doc["length"]) == ("OPEN", False, -1, 0)
        assert handle.add_entry(b"after the read") == 5  # not fenced
        handle.close()


def test_list_pages_count_as_bookkeepers_do(cluster, bookie):
    """ListLedgerService's pages: page 1 holds ledgers 1-99 (counted from 1), page 2 ledgers 100-199."""
    with BookKeeper(cluster.service_uri) as bk:
        for _ in range(105 - len(get(bookie, "/api/v1/ledger/list"))):
            bk.create_ledger(1, 1, 1).close()
    ids = list(get(bookie, "/api/v1/ledger/list"))
    assert len(ids) >= 105 and ids == sorted(ids, key=int)
    assert list(get(bookie, "/api/v1/ledger/list?print_metadata=true&page=1")) == ids[:99]
    assert list(get(bookie, "/api/v1/ledger/list?print_metadata=true&page=2")) == ids[99:199]
    assert list(get(bookie, "/api/v1/ledger/list?print_metadata=true")) == ids

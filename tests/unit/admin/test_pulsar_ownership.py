"""A ledger's owner from the custom metadata Pulsar gives it (apache/pulsar LedgerMetadataUtils), in every
spelling Pulsar has used, and topic names."""

from __future__ import annotations

import pytest

from admin.pulsar.ownership import Kind, owner_of, split_topic, topic_of_managed_ledger, topic_of_schema

ML = {"application": b"pulsar", "component": b"managed-ledger"}


@pytest.mark.parametrize("prefix", ["pulsar/", "psr/"])
def test_data_and_cursor_ledgers_in_both_spellings(prefix):
    data = owner_of({**ML, f"{prefix}managed-ledger": b"public/default/persistent/orders"})
    assert (data.kind, data.topic, data.managed_ledger) == (
        Kind.LEDGER,
        "persistent://public/default/orders",
        "public/default/persistent/orders",
    )
    cursor = owner_of({**ML, f"{prefix}managed-ledger": b"t/ns/persistent/x", f"{prefix}cursor": b"sub%20a"})
    assert (cursor.kind, cursor.cursor) == (Kind.CURSOR, "sub%20a")
    assert cursor.describe() == "persistent://t/ns/x cursor sub%20a"


def test_compacted_ledgers_new_and_old():
    new = owner_of(
        {"application": b"pulsar", "component": b"compacted-ledger", "pulsar/compactedTopic": b"persistent://t/n/x"}
    )
    old = owner_of({**ML, "compactedTopic": b"persistent://t/n/x", "compactedTo": b"\x08\x01"})  # Pulsar 2.2-2.5
    assert new.kind == old.kind == Kind.COMPACTED and new.topic == old.topic == "persistent://t/n/x"


def test_schema_ledgers_new_and_old():
    for key in ("pulsar/schemaId", "schemaId"):
        owner = owner_of({"application": b"pulsar", "component": b"schema", key: b"t/ns/orders"})
        assert (owner.kind, owner.schema_id, owner.topic) == (Kind.SCHEMA, "t/ns/orders", "persistent://t/ns/orders")
        assert owner.describe() == "schema t/ns/orders"


def test_what_is_not_pulsars_or_not_audited():
    assert owner_of({}) is None
    assert owner_of({"application": b"other", "component": b"managed-ledger"}) is None
    bucket = owner_of({"application": b"pulsar", "component": b"delayed-index-bucket"})
    assert bucket.kind == Kind.OTHER and bucket.describe() == "component delayed-index-bucket"
    assert owner_of(ML).kind == Kind.OTHER  # a managed ledger's component without its name


def test_topic_names():
    assert topic_of_managed_ledger("t/ns/persistent/a+b%2Fc") == "persistent://t/ns/a b/c"
    assert topic_of_managed_ledger("prop/cluster/ns/persistent/x") == "persistent://prop/cluster/ns/x"  # v1
    assert topic_of_managed_ledger("t/persistent/persistent/x") == "persistent://t/persistent/x"
    assert topic_of_schema("t/ns/x") == "persistent://t/ns/x"
    assert split_topic("persistent://t/ns/x-partition-0") == ("t", "t/ns", "persistent://t/ns/x-partition-0")
    assert split_topic("persistent://p/c/ns/x") == ("p", "p/c/ns", "persistent://p/c/ns/x")

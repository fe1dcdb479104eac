"""Who may read a ledger on a secured bookie, on both storages (interleaved and DbLedgerStorage).

BookKeeper's authorization is by role (BookieAuthZFactory): a connection whose certificate role is authorized may
read any ledger, and its clients send no master key on a plain read. So a role without admin rights reads closed
ledgers, its own from a new process and others'. Our opt-in ``bkctlReadRequiresMasterKey`` serves a non-admin role
only the ledgers whose key its connection showed."""

from __future__ import annotations

from pathlib import Path

import pytest
from integration.server.test_tls import Conn, client_context

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.storage.db import DB_LEDGER_STORAGE

from pki import bookie_tls, make_pki, tls_args
from support.cluster import shared_cluster
from support.storage import KEY

STORAGES = {"interleaved": {}, "db": {"ledgerStorageClass": DB_LEDGER_STORAGE}}


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Path:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module", params=sorted(STORAGES))
def storage(request) -> dict[str, str]:
    return STORAGES[request.param]


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory, pki, storage):
    settings = bookie_tls(pki, bkctlAdminRoles="admin", **storage)
    with shared_cluster(zookeeper, tmp_path_factory.mktemp("secure"), bookies=3, **settings) as harness:
        yield harness


@pytest.fixture(scope="module")
def keyed(zookeeper, tmp_path_factory, pki, storage):
    """A bookie of a cluster of its own with the per-ledger read check on."""
    settings = bookie_tls(pki, bkctlAdminRoles="admin", bkctlReadRequiresMasterKey="true", **storage)
    with shared_cluster(zookeeper, tmp_path_factory.mktemp("keyed"), bookies=1, **settings) as harness:
        yield harness.bookies[0]


def test_a_client_role_reads_closed_ledgers_from_a_new_process(cluster, pki, bkctl):
    client = ["-u", cluster.service_uri, *tls_args(pki, "client")]
    admin = ["-u", cluster.service_uri, *tls_args(pki, "admin")]
    own = bkctl(*client, "ledger", "create", "--password", "pw", "--input", "-", input="a\nb\nc\n")
    assert own.exit_code == 0, own.output
    others = bkctl(*admin, "ledger", "create", "--password", "pw", "--input", "-", input="x\ny\n")
    assert others.exit_code == 0, others.output
    for ledger, lines in ((own.stdout.strip(), ["a", "b", "c"]), (others.stdout.strip(), ["x", "y"])):
        read = bkctl(*client, "ledger", "read", ledger, "--password", "pw")
        assert read.exit_code == 0, read.output
        assert read.stdout.splitlines() == lines


def test_a_client_role_reads_raw_entries_without_a_key(cluster, pki):
    writer, reader = Conn(cluster.bookies[0].port), Conn(cluster.bookies[0].port)
    try:
        writer.start_tls(client_context(pki, "admin"))
        reader.start_tls(client_context(pki, "client"))
        assert writer.add(9101, 0) == pb.EOK
        assert reader.read(9101, 0) == pb.EOK
        assert reader.call(pb.READ_LAC, readLacRequest=pb.ReadLacRequest(ledgerId=9101)).status == pb.EOK
    finally:
        writer.close()
        reader.close()


def test_the_opt_in_check_serves_a_client_role_the_ledgers_whose_key_it_showed(keyed, pki):
    writer, reader = Conn(keyed.port), Conn(keyed.port)
    try:
        writer.start_tls(client_context(pki, "client"))
        reader.start_tls(client_context(pki, "client"))
        assert writer.add(9102, 0) == pb.EOK
        assert writer.read(9102, 0) == pb.EOK  # its add showed the key
        assert reader.read(9102, 0) == pb.EUA  # a read with no key
        assert reader.call(pb.READ_LAC, readLacRequest=pb.ReadLacRequest(ledgerId=9102)).status == pb.EUA
        keyed_read = pb.ReadRequest(ledgerId=9102, entryId=0, masterKey=b"\0" * 20)
        assert reader.call(pb.READ_ENTRY, readRequest=keyed_read).status == pb.EUA  # a wrong key shows nothing
        keyed_read.masterKey = KEY
        assert reader.call(pb.READ_ENTRY, readRequest=keyed_read).status == pb.EOK
        assert reader.read(9102, 0) == pb.EOK  # shown once, for the connection
        assert reader.call(pb.READ_LAC, readLacRequest=pb.ReadLacRequest(ledgerId=9102)).status == pb.EOK
    finally:
        writer.close()
        reader.close()
    admin = Conn(keyed.port)
    try:
        admin.start_tls(client_context(pki, "admin"))
        assert admin.read(9102, 0) == pb.EOK  # an admin role reads any ledger
    finally:
        admin.close()

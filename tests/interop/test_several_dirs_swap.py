"""Java bookies (Apache BookKeeper 4.17.4) and ours swap on the same disks when each bookie has two journal
directories and three ledger directories, with either ledger storage: the same file names in the same places (a
journal per journal dir, ``lastMark.0`` and ``lastMark.1`` in every ledger dir; InterleavedLedgerStorage: entry
logs spread over the ledger dirs with ids unique across them and ``lastId`` in each, index files in any ledger dir;
DbLedgerStorage: ledger L in directory L mod 3, each directory with its own entry logs, numbered from 0, and its own
RocksDB indexes), so each kind of bookie starts on what the other wrote — after a clean stop, and after a kill -9
that leaves records for journal replay — and serves every entry.

bk-cluster's ``--set`` gives every bookie of one start the same value, so each Java bookie is a bk-cluster of its
own, the three sharing the first one's ZooKeeper and ledgers root.
"""

from __future__ import annotations

import os
import re
import sys

import pytest

from bookie.client import BookKeeper
from bookie.conf import load_properties
from bookie.local.bookies import LocalBookie, wait_registered
from bookie.local.process import free_port
from bookie.meta.store import MetadataStore
from bookie.meta.uri import parse_service_uri

from interop.oracle import JavaCluster, java_read, java_write, require_oracle

require_oracle()

JOURNALS, LEDGER_DIRS = 2, 3
ENTRIES = 1500
TEXT = "entry-" + "x" * 400  # ~400 B: several 256 KB entry logs per bookie


def disks(directory) -> list[str]:
    journals = ",".join(str(directory / "disks" / f"journal{i}") for i in range(JOURNALS))
    ledgers = ",".join(str(directory / "disks" / f"ledgers{i}") for i in range(LEDGER_DIRS))
    # No periodic checkpoint (SyncThread, every flushInterval): the killed bookie must leave journal records after its
    # last lastMark for the other side to replay. With the default, a checkpoint fell between the last write and the
    # kill -9 once (0 records replayed: DbLedgerStorage, CI under load).
    return [
        f"journalDirectories={journals}",
        f"ledgerDirectories={ledgers}",
        "logSizeLimit=262144",
        "flushInterval=3600000",
    ]


@pytest.fixture(scope="module", params=["interleaved", "db"])
def javas(tmp_path_factory, request):
    root = tmp_path_factory.mktemp(f"swap-{request.param}")
    clusters: list[JavaCluster] = []
    try:
        for n in range(3):
            zk = clusters[0].zk if clusters else None
            directory = root / f"java{n}"
            clusters.append(JavaCluster.start(directory, 1, *disks(directory), zk=zk, storage=request.param))
        yield clusters
    finally:
        for cluster in reversed(clusters):  # the first one's ZooKeeper last
            cluster.stop()


@pytest.fixture(scope="module")
def store(javas):
    with MetadataStore(parse_service_uri(javas[0].service_uri)) as s:
        yield s


def ours_on(java: JavaCluster) -> LocalBookie:
    """Our bookie on a Java bookie's disks, with its bk_server.conf's settings (so its id and cookie), our ports."""
    settings = load_properties(java.conf(1))
    bookie = LocalBookie(
        1, str(java.root / "ours"), java.bookie_ports[0], free_port(), admin_port=free_port(), settings=settings
    )
    bookie.write_conf(java.service_uri)
    return bookie


def texts(count: int) -> list[bytes]:
    return [f"{TEXT}-{i}".encode() for i in range(count)]


def check_every_replica(bkctl, uri: str) -> None:
    """Every bookie answers every entry the write-set rule gives it (BookKeeper's ledger check, all entries)."""
    result = bkctl("-u", uri, "cluster", "check", "--replicas", "--verify-entries", "100", "--recheck-delay", "1")
    assert result.exit_code == 0, result.stdout + result.stderr


def test_java_and_our_bookies_swap_on_two_journals_and_three_ledger_dirs_each_way(javas, store, bkctl, classes):
    uri = javas[0].service_uri
    db = "DbLedgerStorage" in load_properties(javas[0].conf(1)).get("ledgerStorageClass", "")
    # ---- Java bookies write; two stop, one is killed -9 (its last records only in its journals) ----
    *closed, left_open = java_write(classes, uri, ENTRIES, TEXT, "close", "close", "close", "open")
    for java in javas[:2]:
        java.stop_bookie(1)
    javas[2].kill(1)
    for java in javas:
        ledgers = [java.root / "disks" / f"ledgers{i}" / "current" for i in range(LEDGER_DIRS)]
        assert all(list((java.root / "disks" / f"journal{i}" / "current").glob("*.txn")) for i in range(JOURNALS))
        logs = [p.name for d in ledgers for p in d.glob("*.log")]
        if db:  # each directory its own DbLedgerStorage: its own entry logs (ids from 0) and indexes; the killed
            # bookie's entries may still be only in its write cache and journals (no checkpoint: flushInterval)
            assert all((d / "locations" / "CURRENT").exists() for d in ledgers)
            assert java is javas[2] or all(list(d.glob("*.log")) for d in ledgers)
        else:
            # EntryLoggerAllocator: a lastId in every dir (DbLedgerStorage's loggers write theirs at a checkpoint)
            assert all((d / "lastId").exists() for d in ledgers)
            assert len(logs) == len(set(logs)) >= 3  # ids unique across the dirs
    for java in javas[:2]:  # a clean stop checkpoints: a mark per journal, in every ledger dir
        for i in range(LEDGER_DIRS):
            names = {p.name for p in (java.root / "disks" / f"ledgers{i}" / "current").glob("lastMark*")}
            assert names == {"lastMark.0", "lastMark.1"}

    # ---- our bookies start on the Java disks, replay the killed one's journals, serve every entry ----
    ours = [ours_on(java) for java in javas]
    for bookie in ours:
        bookie.start()
    try:
        wait_registered(store, ours, timeout=90)
        replayed = re.search(r"storage ready \((\d+) journal records replayed\)", ours[2].log_path.read_text())
        assert replayed and int(replayed.group(1)) > 0  # what the killed Java bookie had not checkpointed
        read = java_read(classes, uri, closed, recovery=False)
        assert all(read[ledger_id] == list(enumerate(texts(ENTRIES))) for ledger_id in closed)
        (recovered,) = java_read(classes, uri, [left_open]).values()  # recovery on our bookies closes it
        assert len(recovered) >= ENTRIES - 100 and recovered == list(enumerate(texts(len(recovered))))
        check_every_replica(bkctl, uri)

        # ---- the reverse: written through our bookies (Java's client, and ours), one killed -9 ----
        closed += java_write(classes, uri, ENTRIES, TEXT, "close", "close")
        with BookKeeper(uri) as bk:
            ledger = bk.create_ledger(3, 2, 2, password=b"pw")
            ledger.add_entries(texts(ENTRIES))
            ledger.close()
            closed.append(ledger.ledger_id)
        for bookie in ours:
            journals = bookie.settings["journalDirectories"].split(",")
            assert all(len(os.listdir(os.path.join(j, "current"))) > 2 for j in journals)  # both journals in use
    finally:
        ours[0].stop(kill=True)
        for bookie in ours[1:]:
            bookie.stop()

    # ---- Java bookies start on what ours wrote, replay ours's journals, serve every entry ----
    for java in javas:
        java.start_bookie(1)
    read = java_read(classes, uri, [*closed, left_open], recovery=False)
    assert [ledger_id for ledger_id in closed if read[ledger_id] != list(enumerate(texts(ENTRIES)))] == []
    assert read[left_open] == recovered
    if not db:  # Java's DbLedgerStorage does not answer GET_LIST_OF_ENTRIES_OF_LEDGER (UnsupportedOperationException)
        check_every_replica(bkctl, uri)
    print(f"ledgers {[*closed, left_open]} read back through both kinds of bookie", file=sys.stderr)

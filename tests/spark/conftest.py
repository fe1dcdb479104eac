"""One local Spark session for all export tests (starting one costs seconds), and a cluster of real bookies per
module. `bkctl ledger export` run in-process finds the session active and uses it as it is."""

import os
import random

import pytest

from bookie.client import BookKeeper

from support.cluster import shared_cluster


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from admin.export.session import spark_session
    from admin.export.source import BookKeeperDataSource

    log = tmp_path_factory.mktemp("spark") / "spark.log"
    with spark_session("local[2]", {}, log) as session:
        session.dataSource.register(BookKeeperDataSource)
        yield session


@pytest.fixture(scope="module")
def three_bookies(zookeeper, tmp_path_factory):
    """A cluster of three real bookies shared by a module's tests (each test uses its own ledgers)."""
    with shared_cluster(zookeeper, tmp_path_factory.mktemp("three"), 3) as harness:
        yield harness


QUORUMS = [(3, 2, 2), (3, 3, 2), (2, 2, 1), (1, 1, 1)]
DIGESTS = ["crc32c", "crc32", "mac", "dummy"]
SIZES = [0, 1, 3, 10, 40, 0, 150, 400, 1200, 2500]  # entries per ledger: empty ones included


def write_mixed(uri: str, count: int, seed: int = 7) -> dict[int, list[bytes]]:
    """``count`` closed ledgers of mixed sizes, quorums, digests and passwords: {ledgerId: payloads}."""
    rng = random.Random(seed)
    ledgers = {}
    with BookKeeper(uri) as bk:
        for i in range(count):
            ledger = bk.create_ledger(*QUORUMS[i % 4], digest_type=DIGESTS[i % 4], password=b"pw%d" % (i % 3))
            payloads = [os.urandom(rng.choice([0, 1, 64, 700, 3000])) for _ in range(SIZES[i % len(SIZES)])]
            if payloads:
                ledger.add_entries(payloads)
            ledger.close()
            ledgers[ledger.ledger_id] = payloads
    return ledgers


@pytest.fixture
def mixed_ledgers():
    """``mixed_ledgers(uri, count, seed)``: write closed ledgers of mixed sizes; {ledgerId: payloads}."""
    return write_mixed

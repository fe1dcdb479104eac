"""`bkctl bookie expand-storage` on a Java bookie (Apache BookKeeper 4.17.4): a ledger directory added to its
configuration gets the cookie BookKeeper's own `updatecookie -e` writes, byte for byte, in every directory and in
ZooKeeper; the Java bookie then starts on the three directories and serves the ledger written before."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bookie.meta.cookies import CookieStore

from interop.oracle import JavaCluster, bk_read, bk_write, require_oracle, run

require_oracle()

ENTRIES = 200


@pytest.fixture(scope="module")
def java(tmp_path_factory):
    """One Java bookie (journal, ledgers) with a ledger written (E1 W1 A1), then stopped."""
    root = tmp_path_factory.mktemp("expand")
    cluster = JavaCluster.start(root, 1)
    try:
        cluster.ledger = bk_write(cluster.zk, "--n", str(ENTRIES), "--text", "entry", "--suffix-index", *quorum())
        cluster.stop_bookie(1)
        yield cluster
    finally:
        cluster.stop()


def quorum() -> list[str]:
    return ["--ensemble", "1", "--write-quorum", "1", "--ack-quorum", "1"]


def cookies_of(dirs: list[Path]) -> dict[Path, bytes | None]:
    return {d: (d / "current" / "VERSION").read_bytes() if (d / "current" / "VERSION").exists() else None for d in dirs}


def test_expand_storage_writes_what_updatecookie_e_writes_and_the_java_bookie_starts(bkctl, java, store):
    conf = java.conf(1)
    text = conf.read_text()
    (old,) = re.findall(r"^ledgerDirectories=(.*)$", text, re.M)
    new = java.root / "b1" / "ledgers2"
    conf.write_text(re.sub(r"^ledgerDirectories=.*$", f"ledgerDirectories={old},{new}", text, flags=re.M))
    dirs = [java.root / "b1" / "journal", Path(old), new]
    cookies = CookieStore(store)
    path = cookies.path(java.bookie_id(1))
    before_local, (before_stored, _) = cookies_of(dirs), store.zk.get(path)

    new.joinpath("current").mkdir(parents=True)  # BookKeeper's shell writes no directory of its own
    run("bk-shell", str(conf), "updatecookie", "-e", timeout=120)  # exits 255 when it refuses
    java_local, (java_stored, stat) = cookies_of(dirs), store.zk.get(path)
    assert java_local[new] is not None and java_stored != before_stored
    for d, data in before_local.items():  # undone: now bkctl's turn, from the same start
        (d / "current" / "VERSION").unlink()
        if data is not None:
            (d / "current" / "VERSION").write_bytes(data)
    store.zk.set(path, before_stored, version=stat.version)

    ours = bkctl("-c", str(conf), "bookie", "expand-storage")
    assert (ours.exit_code, ours.stdout) == (0, f"{new} added\ncookie/{java.bookie_id(1)} expanded\n"), ours.stderr
    assert cookies_of(dirs) == java_local and store.zk.get(path)[0] == java_stored

    java.start_bookie(1)
    try:
        expected = [(i, f"entry-{i}".encode()) for i in range(ENTRIES)]
        assert bk_read(java.zk, java.ledger, "--no-recovery") == expected
    finally:
        java.stop_bookie(1)

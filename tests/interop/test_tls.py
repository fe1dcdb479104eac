"""TLS and certificate roles between Apache BookKeeper 4.17.4 (../shared/bk-oracle) and us: the Java client on our
TLS bookies, and bkctl on Java TLS bookies, both with BookieAuthZFactory, configured with the same keys.

The oracle has no OpenSSL (netty-tcnative), so the Java side runs with ``tlsProvider=JDK``. Its TLSContextFactory
also insists on a BouncyCastle provider in its static initialiser, although nothing it does with PEM files or JDK
TLS uses it; the oracle ships none, so the Java processes get Debian's (``libbcprov-java``, installed by
tests/bootstrap.sh) on their boot class path. The Java tools take the client keys as system properties
(``org.apache.bookkeeper.conf.readsystemproperties``: ClientConfiguration then reads them, BookKeeper's own switch).
Java bookies have no HTTP admin API in the oracle (no Vert.x), so admin operations over HTTPS are tested on ours
only (tests/integration/server/test_tls.py).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bookie.storage.db import DB_LEDGER_STORAGE

from interop import oracle
from interop.oracle import JavaCluster, require_oracle, run
from pki import bookie_tls, make_pki, tls_args
from support.cluster import shared_cluster
from support.waiting import wait_for

require_oracle()

BCPROV = Path("/usr/share/java/bcprov.jar")
if not BCPROV.exists():
    pytest.skip(
        f"{BCPROV} is missing (apt-get install libbcprov-java; tests/bootstrap.sh does)", allow_module_level=True
    )


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Path:
    return make_pki(tmp_path_factory.mktemp("pki"))


def java_env(pki: Path | None = None, name: str | None = None, ca: str = "ca") -> dict[str, str]:
    """BK_ORACLE_JAVA_OPTS of a Java process: BouncyCastle present, and with ``pki``, a TLS client presenting
    ``name``'s certificate (none: no client certificate), trusting ``ca``."""
    opts = [f"-Xbootclasspath/a:{BCPROV}"]
    if pki is not None:
        keys = {
            "tlsProviderFactoryClass": "org.apache.bookkeeper.tls.TLSContextFactory",
            "tlsProvider": "JDK",
            "tlsTrustStoreType": "PEM",
            "tlsTrustStore": pki / f"{ca}.pem",
            "tlsClientAuthentication": str(name is not None).lower(),
        }
        if name is not None:
            keys |= {"tlsKeyStoreType": "PEM", "tlsKeyStore": pki / f"{name}-key.pem"}
            keys["tlsCertificatePath"] = pki / f"{name}.pem"
        opts.append("-Dorg.apache.bookkeeper.conf.readsystemproperties=true")
        opts += [f"-D{key}={value}" for key, value in keys.items()]
    return {"BK_ORACLE_JAVA_OPTS": " ".join(opts)}


def java_write(zk: str, root: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return run("bk-write", "--zk", zk, "--root", root, "--n", "100", "--text", "e", *args, env=env, check=False)


def java_read(zk: str, root: str, ledger: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return run("bk-read", "--zk", zk, "--root", root, "--ledger", ledger, *args, env=env, check=False, timeout=120)


# ---- the Java client on our bookies ----


@pytest.fixture(scope="module")
def ours(zookeeper, tmp_path_factory, pki):
    settings = bookie_tls(pki, bkctlAdminRoles="admin")
    with shared_cluster(zookeeper, tmp_path_factory.mktemp("ours"), bookies=3, **settings) as harness:
        yield harness


@pytest.fixture(scope="module")
def root(ours) -> str:
    return "/" + ours.service_uri.split("://", 1)[1].split("/", 1)[1]


@pytest.mark.parametrize("protocol", [[], ["--v2"]], ids=["v3", "v2"])
def test_java_client_with_tls_writes_and_reads_on_our_bookies(ours, root, pki, zookeeper, protocol):
    env = java_env(pki, "admin")
    written = java_write(zookeeper.address, root, env, "--suffix-index", *protocol)
    assert written.returncode == 0, written.stderr[-2000:]
    ledger = written.stdout.strip()
    read = java_read(zookeeper.address, root, ledger, env, *protocol)
    assert read.returncode == 0, read.stderr[-2000:]
    lines = read.stdout.splitlines()
    assert len(lines) == 100 and lines[7] == f"7\t3\t{b'e-7'.hex()}"
    wait_for(
        lambda: "authenticated as admin" in ours.bookies[0].log_path.read_text(), "our bookie's authentication line"
    )


@pytest.fixture(scope="module")
def ours_db(zookeeper, tmp_path_factory, pki):
    settings = bookie_tls(pki, bkctlAdminRoles="admin", ledgerStorageClass=DB_LEDGER_STORAGE)
    with shared_cluster(zookeeper, tmp_path_factory.mktemp("ours-db"), bookies=3, **settings) as harness:
        yield harness


@pytest.mark.parametrize("storage", ["ours", "ours_db"], ids=["interleaved", "db"])
def test_java_client_with_a_client_role_reads_closed_ledgers_and_recovers_open_ones(
    request, storage, pki, classes, bkctl
):
    """BookieAuthZFactory's model: an authorized role reads any ledger. The Java client opens a closed ledger
    without recovery and reads it with plain reads, which carry no master key: its own ledgers from a new JVM, and
    one an admin wrote; an open one it recovers (fencing, then reads)."""
    cluster = request.getfixturevalue(storage)
    env = java_env(pki, "client")
    own, left_open = oracle.java_write(classes, cluster.service_uri, 100, "e", "close", "open", env=env)
    admin = ["-u", cluster.service_uri, *tls_args(pki, "admin")]
    created = bkctl(*admin, "ledger", "create", "--password", "pw", "--input", "-", input="a\nb\nc\n")
    assert created.exit_code == 0, created.output
    others = int(created.stdout)
    read = oracle.java_read(classes, cluster.service_uri, [own, others], recovery=False, env=env)
    assert read[own] == [(i, f"e-{i}".encode()) for i in range(100)]
    assert read[others] == [(0, b"a"), (1, b"b"), (2, b"c")]
    (recovered,) = oracle.java_read(classes, cluster.service_uri, [left_open], env=env).values()
    assert recovered == [(i, f"e-{i}".encode()) for i in range(100)]


@pytest.mark.parametrize(
    ("name", "ca", "tls"),
    [(None, "ca", False), ("stranger", "ca", True), ("foreign", "ca", True), ("admin", "other-ca", True)],
    ids=["plaintext", "role-not-authorized", "foreign-ca", "bookie-not-trusted"],
)
def test_java_client_refused_by_our_bookies(ours, root, pki, zookeeper, name, ca, tls):
    env = java_env(pki if tls else None, name, ca)
    written = java_write(zookeeper.address, root, env)
    assert written.returncode != 0, written.stdout
    assert "Exception" in written.stderr  # the Java client's own refusal (EUA: Unauthorized; TLS: Security/IO)


# ---- bkctl on Java bookies ----


@pytest.fixture(scope="module")
def java(zookeeper, tmp_path_factory, pki):
    settings = [f"{k}={v}" for k, v in bookie_tls(pki).items()]
    root = tmp_path_factory.mktemp("java")
    cluster = JavaCluster.start(
        root, 3, *settings, zk=zookeeper.address, ledgers_root="/javatls/ledgers", env=java_env()
    )
    try:
        yield cluster
    finally:
        cluster.stop()


def test_bkctl_with_tls_writes_reads_recovers_and_checks_on_java_bookies(java, pki, bkctl):
    admin = ["-u", java.service_uri, *tls_args(pki, "admin")]
    created = bkctl(*admin, "ledger", "create", "--password", "pw", "--input", "-", input="a\nb\nc\n")
    assert created.exit_code == 0, created.output
    ledger = created.stdout.strip()
    read = bkctl(*admin, "ledger", "read", ledger, "--password", "pw")
    assert read.exit_code == 0 and read.stdout.splitlines() == ["a", "b", "c"]
    open_one = bkctl(*admin, "ledger", "create", "--password", "pw", "--input", "-", "--no-close", input="x\ny\n")
    assert open_one.exit_code == 0, open_one.output
    recovered = bkctl(*admin, "ledger", "recover", open_one.stdout.strip(), "--password", "pw")
    assert recovered.exit_code == 0, recovered.output
    check = bkctl(*admin, "cluster", "check", "--ledger", ledger)
    assert check.exit_code == 0, check.output
    info = bkctl(*admin, "bookie", "info", "--all", "-o", "json")
    assert info.exit_code == 0, info.output
    # the Java client reads what bkctl wrote, over TLS
    read = java_read(java.zk, "/javatls/ledgers", ledger, java_env(pki, "admin"))
    assert read.returncode == 0 and len(read.stdout.splitlines()) == 3


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ([], "requires TLS with a client certificate"),
        (["stranger"], "this client's certificate role may not do it"),
        (["admin", "other-ca"], "TLS handshake with bookie"),
    ],
    ids=["plaintext", "role-not-authorized", "bookie-not-trusted"],
)
def test_java_bookies_refuse_what_ours_refuse(java, pki, bkctl, args, says):
    tls = tls_args(pki, *args) if args else []
    result = bkctl("-u", java.service_uri, *tls, "ledger", "create", "--password", "pw", "--input", "-", input="x\n")
    assert result.exit_code != 0
    assert says in result.stderr, result.stderr

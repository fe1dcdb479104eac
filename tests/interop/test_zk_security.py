"""A cluster initialised secure (zkEnableSecurity=true, SASL DIGEST-MD5) by bkctl and our bookies stays readable by the
Java BookKeeper shell configured the same way (the same JAAS Client section), and not without it; and the reverse:
bkctl reads the metadata of Java bookies that made their cluster secure."""

from __future__ import annotations

import json
import re

from bookie.local.bookies import LocalBookie, wait_registered
from bookie.meta.store import MetadataStore
from bookie.meta.uri import parse_service_uri

from interop.oracle import JavaCluster, require_oracle, run

require_oracle()


def java_opts(jaas) -> dict[str, str]:
    """The JVM flags of a Java client or bookie that logs in to ZooKeeper with the JAAS file ``jaas``. ZooKeeper 3.9's
    client refuses DIGEST-MD5 in its FIPS mode, on by default ("Client will not use DIGEST-MD5 as SASL mechanism,
    because FIPS mode is enabled"): a Java BookKeeper with digest logins runs with zookeeper.fips-mode=false."""
    return {"BK_ORACLE_JAVA_OPTS": f"-Djava.security.auth.login.config={jaas} -Dzookeeper.fips-mode=false"}


def shell(conf, *args: str, jaas=None) -> str:
    done = run("bk-shell", str(conf), *args, timeout=120, check=False, env=java_opts(jaas) if jaas else {})
    return done.stdout + done.stderr


def test_the_java_shell_reads_a_cluster_bkctl_made_secure(secure_zookeeper, credentials, tmp_path, bkctl, monkeypatch):
    uri = f"zk+hierarchical://{secure_zookeeper.address}/ours/ledgers"
    settings = {"zkEnableSecurity": "true", "java.security.auth.login.config": str(credentials["jaas"])}
    monkeypatch.setenv("BKCTL_ZK_ENABLE_SECURITY", "true")
    monkeypatch.setenv("BKCTL_ZK_JAAS_CONFIG", str(credentials["jaas"]))
    assert bkctl("-u", uri, "cluster", "init").exit_code == 0
    bookies = [LocalBookie.create(i, tmp_path / f"bookie-{i}", uri, settings) for i in (1, 2, 3)]
    try:
        for bookie in bookies:
            bookie.start()
        with MetadataStore(parse_service_uri(uri)) as store:
            wait_registered(store, bookies)
        created = bkctl("-u", uri, "ledger", "create", "--input", "-", input="x\ny\n")
        assert created.exit_code == 0, created.output
        ledger_id = int(created.stdout)

        conf = tmp_path / "java-client.conf"  # the shell's: the same cluster and the same security
        conf.write_text(f"metadataServiceUri={uri}\nzkEnableSecurity=true\n")
        listed = shell(conf, "listbookies", "-rw", jaas=credentials["jaas"])
        assert set(re.findall(r"BookieID:(\S+?),", listed)) == {b.bookie_id for b in bookies}, listed[-3000:]
        ledgers = shell(conf, "listledgers", jaas=credentials["jaas"])
        assert re.findall(r"ledgerID: (\d+)", ledgers) == [str(ledger_id)], ledgers[-3000:]

        # without the JAAS login the Java shell is an unauthenticated client: ZooKeeper refuses it
        refused = shell(conf, "listledgers")
        assert "ledgerID:" not in refused and "NoAuth" in refused, refused[-3000:]
    finally:
        for bookie in bookies:
            bookie.stop()


def test_bkctl_reads_a_cluster_java_bookies_made_secure(secure_zookeeper, credentials, tmp_path, bkctl, monkeypatch):
    cluster = JavaCluster.start(
        tmp_path / "java",
        2,
        "zkEnableSecurity=true",
        zk=secure_zookeeper.address,
        ledgers_root="/theirs",
        env=java_opts(credentials["jaas"]),
    )
    try:
        uri = cluster.service_uri
        # what the Java bookies created is theirs: bkctl without credentials is refused
        assert bkctl("-u", uri, "bookies", "list").exit_code == 4
        monkeypatch.setenv("BKCTL_ZK_ENABLE_SECURITY", "true")
        monkeypatch.setenv("BKCTL_ZK_JAAS_CONFIG", str(credentials["jaas"]))
        listed = bkctl("-u", uri, "bookies", "list", "-o", "json")
        assert listed.exit_code == 0, listed.output
        assert sorted(b["bookieId"] for b in json.loads(listed.stdout)) == sorted(cluster.bookie_id(n) for n in (1, 2))
        info = bkctl("-u", uri, "cluster", "info", "-o", "json")
        assert info.exit_code == 0 and json.loads(info.stdout)["instanceId"], info.output
    finally:
        cluster.stop()

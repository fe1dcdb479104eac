"""zkEnableSecurity on a real ZooKeeper with SASL and digest authentication: what a secure cluster's bookies and
bkctl create is theirs alone, as BookKeeper's CREATOR_ALL_ACL makes it.

The ZooKeeper (conftest's ``secure_zookeeper``) accepts SASL DIGEST-MD5 logins (a JAAS Server section); digest
authentication needs nothing on the server."""

from __future__ import annotations

import json

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from bookie.errors import ServiceUnavailable, Unauthorized
from bookie.local.bookies import LocalBookie, wait_registered
from bookie.meta.security import ZkSecurity
from bookie.meta.store import MetadataStore
from bookie.meta.uri import parse_service_uri

from support.security import DIGEST_USER, jaas_client, private_file


def anonymous(zk) -> KazooClient:
    client = KazooClient(hosts=zk.address)
    client.start(timeout=10)
    return client


def start_bookies(tmp_path, uri, store, settings, count=3) -> list[LocalBookie]:
    bookies = [LocalBookie.create(i, tmp_path / f"bookie-{i}", uri, settings) for i in range(1, count + 1)]
    for bookie in bookies:
        bookie.start()
    try:
        wait_registered(store, bookies)
    except BaseException:
        for bookie in bookies:
            bookie.stop(kill=True)
        raise
    return bookies


def assert_private_to_creator(zk, uri: str, security: ZkSecurity, ledger_id: int, scheme: str) -> None:
    """What the cluster holds carries only its creator's ACL (which only its creator may read), and an
    unauthenticated client may neither change nor read it."""
    root = parse_service_uri(uri).root
    ledger_path = f"{root}/00/0000/L{ledger_id:04d}"
    with MetadataStore(parse_service_uri(uri), security=security) as store:
        bookie = store.children(f"{root}/available")[0]
        for path in (root, f"{root}/LAYOUT", f"{root}/INSTANCEID", f"{root}/available/{bookie}", ledger_path):
            acls, _ = store.zk.get_acls(path)  # type: ignore[attr-defined]
            assert [(a.id.scheme, a.perms) for a in acls] == [(scheme, 31)], path
    client = anonymous(zk)
    try:
        for name, attempt in {
            "read the ledger's metadata": lambda: client.get(ledger_path),
            "list the bookies": lambda: client.get_children(f"{root}/available"),
            "read the cookies": lambda: client.get_children(f"{root}/cookies"),
            "create a ledger id": lambda: client.create(f"{root}/idgen/ID-", sequence=True),
            "squat the next ledger": lambda: client.create(f"{root}/00/0000/L{ledger_id + 1:04d}", b"x"),
            "change the layout": lambda: client.set(f"{root}/LAYOUT", b"x"),
            "delete the ledger": lambda: client.delete(ledger_path),
            "register a bookie": lambda: client.create(f"{root}/available/10.0.0.9:3181", b"", ephemeral=True),
        }.items():
            with pytest.raises(NoAuthError):
                attempt()
                pytest.fail(f"an unauthenticated client could {name}")
    finally:
        client.stop()
        client.close()


def test_a_cluster_initialised_with_digest_credentials_is_its_creators_alone(
    secure_zookeeper, credentials, tmp_path, bkctl, monkeypatch
):
    """bkctl (its -c file) and the bookies (their bk_server.conf) authenticate with zkDigestAuthFile."""
    uri = f"zk+hierarchical://{secure_zookeeper.address}/digest/ledgers"
    security = {"zkEnableSecurity": "true", "zkDigestAuthFile": str(credentials["digest"])}
    conf = tmp_path / "client.conf"
    conf.write_text("".join(f"{k}={v}\n" for k, v in {"metadataServiceUri": uri, **security}.items()))

    result = bkctl("-c", str(conf), "cluster", "init")
    assert result.exit_code == 0, result.output
    with MetadataStore(parse_service_uri(uri), security=ZkSecurity.from_settings(security)) as store:
        bookies = start_bookies(tmp_path, uri, store, security)
    try:
        created = bkctl(
            "-c",
            str(conf),
            "ledger",
            "create",
            "--password-file",
            str(credentials["ledger"]),
            "--input",
            "-",
            input="a\n",
        )
        assert created.exit_code == 0, created.output
        ledger_id = int(created.stdout)
        read = bkctl("-c", str(conf), "ledger", "read", str(ledger_id), "--password-file", str(credentials["ledger"]))
        assert (read.exit_code, read.stdout) == (0, "a\n"), read.output

        assert_private_to_creator(secure_zookeeper, uri, ZkSecurity.from_settings(security), ledger_id, "digest")

        # bkctl without the credentials: one line naming the refusal, exit 4 (unauthorized)
        denied = bkctl("-u", uri, "ledger", "list")
        assert denied.exit_code == 4
        assert denied.stderr.startswith("error: ") and "ZooKeeper denied access" in denied.stderr
        assert len(denied.stderr.splitlines()) == 1
        # another digest user is somebody else
        other = private_file(tmp_path / "other-digest", f"{DIGEST_USER}:not-the-password\n")
        wrong = bkctl("-u", uri, "--conf", str(conf), "ledger", "list", "--meta")  # -u wins the URI, -c still ...
        assert wrong.exit_code == 0, wrong.output  # ... supplies the credentials (the same cluster)
        monkeypatch.setenv("BKCTL_ZK_DIGEST_AUTH_FILE", str(other))
        assert bkctl("-u", uri, "ledger", "list").exit_code == 4
    finally:
        for bookie in bookies:
            bookie.stop()


def test_sasl_credentials_from_the_environment_and_a_jaas_file(
    secure_zookeeper, credentials, tmp_path, bkctl, monkeypatch
):
    """bkctl with BKCTL_ZK_* variables, bookies with java.security.auth.login.config in their configuration."""
    uri = f"zk+hierarchical://{secure_zookeeper.address}/sasl/ledgers"
    monkeypatch.setenv("BKCTL_ZK_ENABLE_SECURITY", "true")
    monkeypatch.setenv("BKCTL_ZK_JAAS_CONFIG", str(credentials["jaas"]))
    assert bkctl("-u", uri, "cluster", "init").exit_code == 0
    settings = {"zkEnableSecurity": "true", "java.security.auth.login.config": str(credentials["jaas"])}
    with MetadataStore(parse_service_uri(uri)) as store:
        # the bookies must not lean on the environment this test set for bkctl
        for name in ("BKCTL_ZK_ENABLE_SECURITY", "BKCTL_ZK_JAAS_CONFIG"):
            monkeypatch.delenv(name)
        bookies = start_bookies(tmp_path, uri, store, settings)
    try:
        monkeypatch.setenv("BKCTL_ZK_ENABLE_SECURITY", "true")
        monkeypatch.setenv("BKCTL_ZK_JAAS_CONFIG", str(credentials["jaas"]))
        created = bkctl(
            "-u", uri, "ledger", "create", "--password-file", str(credentials["ledger"]), "--input", "-", input="b\n"
        )
        assert created.exit_code == 0, created.output
        ledger_id = int(created.stdout)
        listed = bkctl("-u", uri, "bookies", "list", "-o", "json")
        assert sorted(b["bookieId"] for b in json.loads(listed.stdout)) == sorted(b.bookie_id for b in bookies)

        assert_private_to_creator(secure_zookeeper, uri, ZkSecurity.from_settings(), ledger_id, "sasl")

        wrong = jaas_client(tmp_path / "wrong-jaas.conf", password="not-the-password")
        monkeypatch.setenv("BKCTL_ZK_JAAS_CONFIG", str(wrong))
        refused = bkctl("-u", uri, "ledger", "list")
        assert refused.exit_code == 4
        assert "ZooKeeper refused the SASL login" in refused.stderr and "sasl:bookkeeper" in refused.stderr
        assert "not-the-password" not in refused.output
    finally:
        for bookie in bookies:
            bookie.stop()


def test_security_enabled_without_credentials_is_refused_before_anything_is_created(
    secure_zookeeper, tmp_path, bkctl, monkeypatch
):
    uri = f"zk+hierarchical://{secure_zookeeper.address}/nocreds/ledgers"
    monkeypatch.setenv("BKCTL_ZK_ENABLE_SECURITY", "true")
    result = bkctl("-u", uri, "cluster", "init")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: BKCTL_ZK_ENABLE_SECURITY=true needs ZooKeeper credentials")
    client = anonymous(secure_zookeeper)
    try:
        assert client.exists("/nocreds") is None
    finally:
        client.stop()
        client.close()


def test_a_refused_sasl_login_is_unauthorized_however_fast_zookeeper_answers(secure_zookeeper, tmp_path):
    """kazoo reports a session connected before its SASL login is answered, and start() then checks that it is
    still connected: a refusal that lands in between made start() time out, and bkctl call ZooKeeper unreachable
    (exit 6) instead of refusing the login (exit 4). The window is narrow; many logins find it."""
    uri = parse_service_uri(f"zk+hierarchical://{secure_zookeeper.address}/refused/ledgers")
    wrong = jaas_client(tmp_path / "wrong-jaas.conf", password="not-the-password")
    security = ZkSecurity.from_settings({"zkEnableSecurity": "true", "java.security.auth.login.config": str(wrong)})
    outcomes = []
    for _ in range(200):
        try:
            MetadataStore(uri, security=security).close()
            outcomes.append("logged in")
        except Unauthorized as exc:
            assert "ZooKeeper refused the SASL login" in str(exc) and "sasl:bookkeeper" in str(exc)
            outcomes.append("refused")
        except ServiceUnavailable as exc:
            outcomes.append(f"unreachable: {exc}")
    assert set(outcomes) == {"refused"}, [o for o in outcomes if o != "refused"]

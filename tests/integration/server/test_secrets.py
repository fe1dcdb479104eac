"""Secrets never leak: the ledger password, the ZooKeeper credentials (digest and SASL) of a secure cluster, and a TLS
bookie's key store passwords (tlsKeyStorePasswordPath's content, httpServerKeyStorePassword,
httpServerTrustStorePassword) and bkctl's key password appear in no log (bkctl's at -vv, the bookies' at -vv,
ZooKeeper's), no metric, no HTTP admin answer, no `-o json`, no error message, and no command line (`ps`,
/proc/PID/cmdline) of a bookie, ZooKeeper or a sandbox's processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from bookie.local import certs
from bookie.local.bookies import LocalBookie, wait_registered
from bookie.local.process import command_line, find, spawn
from bookie.meta.security import ZkSecurity
from bookie.meta.store import MetadataStore
from bookie.meta.uri import parse_service_uri
from bookie.server.auth import BOOKIE_AUTHZ_FACTORY
from bookie.tls import TLS_CONTEXT_FACTORY

from support.cluster import http_call
from support.security import DIGEST_PASSWORD, LEDGER_PASSWORD, SECRETS, private_file

# A TLS bookie's: its key store's (in the file tlsKeyStorePasswordPath names), its HTTPS key and trust stores' (in
# bk_server.conf, BookKeeper's keys), and bkctl's key store's (in the file --tls-key-password-file names)
KEY_STORE_PASSWORD = "keystore-Pw-3c9d"
HTTP_KEY_STORE_PASSWORD = "https-Pw-81f4"
HTTP_TRUST_STORE_PASSWORD = "https-trust-Pw-2b77"
CLIENT_KEY_PASSWORD = "client-Pw-6e05"
TLS_SECRETS = (KEY_STORE_PASSWORD, HTTP_KEY_STORE_PASSWORD, HTTP_TRUST_STORE_PASSWORD, CLIENT_KEY_PASSWORD)


def leaked(text: str) -> list[str]:
    return [secret for secret in (*SECRETS, *TLS_SECRETS) if secret in text]


def run_bkctl(*args: str, env: dict[str, str] | None = None, stdin: str | None = None):
    done = subprocess.run(
        [sys.executable, "-m", "bkctl", *args],
        capture_output=True,
        text=True,
        timeout=120,
        input=stdin,
        env={**os.environ, **(env or {})},
    )
    return done, done.stdout + done.stderr


@pytest.fixture
def secure_cluster(secure_zookeeper, credentials, tmp_path):
    """bkctl's -c file and three bookies, all with both kinds of ZooKeeper credentials; the first bookie logs at
    -vv (kazoo's debug records too). Yields (client conf, bookies)."""
    uri = f"zk+hierarchical://{secure_zookeeper.address}/leaks/ledgers"
    security = {
        "zkEnableSecurity": "true",
        "zkDigestAuthFile": str(credentials["digest"]),
        "java.security.auth.login.config": str(credentials["jaas"]),
    }
    conf = private_file(
        tmp_path / "client.conf", "".join(f"{k}={v}\n" for k, v in {"metadataServiceUri": uri, **security}.items())
    )
    done, output = run_bkctl("-vv", "-c", str(conf), "cluster", "init")
    assert done.returncode == 0 and not leaked(output), output
    bookies = [LocalBookie.create(i, tmp_path / f"bookie-{i}", uri, security, http=True) for i in (1, 2, 3)]
    bookies[0].pid = spawn(
        [sys.executable, "-m", "bkctl", "-vv", "bookie", "run", "--conf", str(bookies[0].conf_path)],
        bookies[0].log_path,
    )
    for bookie in bookies[1:]:
        bookie.start()
    try:
        with MetadataStore(parse_service_uri(uri), security=ZkSecurity.from_settings(security)) as store:
            wait_registered(store, bookies)
        yield conf, bookies
    finally:
        for bookie in bookies:
            bookie.stop()


def test_no_secret_in_logs_metrics_json_errors_or_command_lines(secure_cluster, secure_zookeeper, credentials):
    conf, bookies = secure_cluster
    password_file = str(credentials["ledger"])
    outputs = []

    def bkctl(*args: str, expect: int = 0, **kwargs) -> str:
        done, output = run_bkctl("-vv", "-c", str(conf), *args, **kwargs)
        assert done.returncode == expect, output
        outputs.append(output)
        return done.stdout

    ledger_id = bkctl("ledger", "create", "--password-file", password_file, "--input", "-", stdin="a\nb\n").strip()
    assert bkctl("ledger", "read", ledger_id, "--password-file", password_file) == "a\nb\n"
    bkctl("--log-format", "json", "ledger", "read", ledger_id, env={"BKCTL_LEDGER_PASSWORD": LEDGER_PASSWORD})
    metadata = json.loads(bkctl("ledger", "metadata", ledger_id, "-o", "json"))
    assert metadata["ledgerId"] == int(ledger_id)
    bkctl("ledger", "list", "--meta", "-o", "json")
    bkctl("cluster", "info", "-o", "yaml")
    bkctl("bookies", "list", "-o", "json")
    # a wrong password: refused (exit 4), and neither password is in the message
    wrong = bkctl("ledger", "read", ledger_id, expect=4, env={"BKCTL_LEDGER_PASSWORD": "wrong-" + DIGEST_PASSWORD})
    assert "wrong-" not in outputs[-1] and wrong == ""
    # bkctl's own: a ledger password file others may read is refused, naming it and the fix (exit 2)
    loose = credentials["ledger"].with_name("loose")
    loose.write_text(LEDGER_PASSWORD + "\n")
    loose.chmod(0o644)
    bkctl("ledger", "read", ledger_id, "--password-file", str(loose), expect=2)
    assert (
        f"ledger password file {loose} is accessible by group or others (mode 0644): chmod 600 {loose}" in outputs[-1]
    )

    for output in outputs:
        assert not leaked(output), output

    # the bookies: what they serve, what they log, how they were started
    http = {
        path: http_call(bookies[1], "GET", path)
        for path in (
            "/metrics",
            "/api/v1/config/server_config",
            f"/api/v1/ledger/metadata?ledger_id={ledger_id}",
            f"/api/v1/ledger/read?ledger_id={ledger_id}",
            "/api/v1/ledger/list?print_metadata=true",
            "/api/v1/bookie/list_bookies?type=rw&print_hostnames=true",
        )
    }
    for path, (status, _, body) in http.items():
        assert status == 200 and not leaked(body), (path, body)
    assert json.loads(http["/api/v1/config/server_config"][2])["zkDigestAuthFile"] == str(credentials["digest"])
    for bookie in bookies:
        with urllib.request.urlopen(f"http://127.0.0.1:{bookie.metrics_port}/metrics", timeout=30) as response:
            assert not leaked(response.read().decode())
        args = command_line(bookie.pid)
        assert args and not leaked(" ".join(args)), args
    bookie_logs = {b.bookie_id: Path(b.log_path).read_text() for b in bookies}
    assert "DEBUG" in bookie_logs[bookies[0].bookie_id]  # the -vv bookie logged its debug records
    for bookie_id, log in bookie_logs.items():
        assert not leaked(log), bookie_id
    assert not leaked(Path(secure_zookeeper.log_path).read_text())
    (zk_pid,) = find(secure_zookeeper.marker)
    assert f"-Djava.security.auth.login.config={secure_zookeeper.jaas_path}" in command_line(zk_pid)
    assert not leaked(" ".join(command_line(zk_pid)))


def test_a_sandbox_started_with_zookeeper_credentials_puts_none_on_a_command_line(credentials, tmp_path):
    """The credentials reach the sandbox's bookies through the environment they inherit (BKCTL_ZK_*), never through
    their arguments; what the sandbox creates in ZooKeeper is then private to that identity."""
    from bookie.local.sandbox import Sandbox

    env = {
        "BKCTL_SANDBOX_DIR": str(tmp_path / "sandbox"),
        "BKCTL_ZK_ENABLE_SECURITY": "true",
        "BKCTL_ZK_DIGEST_AUTH_FILE": str(credentials["digest"]),
        "BKCTL_LEDGER_PASSWORD": LEDGER_PASSWORD,
    }
    try:
        done, output = run_bkctl("sandbox", "start", "--bookies", "2", "-o", "json", env=env)
        assert done.returncode == 0, output
        status = json.loads(done.stdout)
        pids = [status["zookeeper"]["pid"], *(b["pid"] for b in status["bookies"])]
        done, output = run_bkctl(
            "-vv", "ledger", "create", "-e", "2", "-w", "2", "-a", "2", "--input", "-", env=env, stdin="x\n"
        )
        assert done.returncode == 0 and not leaked(output), output
        for pid in pids:
            args = command_line(pid)
            assert args and not leaked(" ".join(args)), args
        security = ZkSecurity.from_settings({"zkDigestAuthFile": str(credentials["digest"])}, {})
        with MetadataStore(parse_service_uri(status["serviceUri"]), security=security) as store:
            acls, _ = store.zk.get_acls("/ledgers/LAYOUT")  # type: ignore[attr-defined]
        assert [a.id.scheme for a in acls] == ["digest"]
        sandbox = Sandbox(env["BKCTL_SANDBOX_DIR"]).dir
        logs = [sandbox / "zookeeper" / "zookeeper.log", *sandbox.glob("bookie-*/bookie.log")]
        assert len(logs) == 3 and not any(leaked(log.read_text()) for log in logs)
    finally:
        run_bkctl("sandbox", "stop", env=env)


@pytest.fixture
def tls_bookie(cluster, service_uri, tmp_path):
    """A bookie with TLS (a PKCS12 key store whose password is in a file), roles, and the HTTP admin API over HTTPS
    (its stores' passwords in bk_server.conf, as BookKeeper reads them), logging at -vv; and the PKI directory:
    ``ca.pem``, ``admin.p12`` (bkctl's, OU 0:admin) with its password file, ``admin.pem``/``admin-key.pem``."""
    pki = tmp_path / "pki"
    pki.mkdir()
    ca = certs.new_ca("leak test CA")
    certs.write_pair(pki, "ca", ca)
    bookie_cert = certs.issue(ca, "bookie", "0:bookie")
    certs.write_secret(pki / "bookie.p12", bookie_cert.pkcs12(KEY_STORE_PASSWORD.encode(), ca))
    certs.write_secret(pki / "bookie-http.p12", bookie_cert.pkcs12(HTTP_KEY_STORE_PASSWORD.encode(), ca))
    certs.write_secret(pki / "ca.p12", ca.pkcs12(HTTP_TRUST_STORE_PASSWORD.encode()))
    admin = certs.issue(ca, "admin", "0:admin")
    certs.write_pair(pki, "admin", admin)
    certs.write_secret(pki / "admin.p12", admin.pkcs12(CLIENT_KEY_PASSWORD.encode(), ca))
    private_file(pki / "admin.pw", CLIENT_KEY_PASSWORD + "\n")
    settings = {
        "tlsProviderFactoryClass": TLS_CONTEXT_FACTORY,
        "tlsKeyStoreType": "PKCS12",
        "tlsKeyStore": str(pki / "bookie.p12"),
        "tlsKeyStorePasswordPath": str(private_file(pki / "bookie.pw", KEY_STORE_PASSWORD + "\n")),
        "tlsTrustStoreType": "PEM",
        "tlsTrustStore": str(pki / "ca.pem"),
        "tlsClientAuthentication": "true",
        "bookieAuthProviderFactoryClass": BOOKIE_AUTHZ_FACTORY,
        "authorizedRoles": "admin",
        "bkctlAdminRoles": "admin",
        "httpServerTlsEnable": "true",
        "httpServerKeyStorePath": str(pki / "bookie-http.p12"),
        "httpServerKeyStorePassword": HTTP_KEY_STORE_PASSWORD,
        "httpServerTrustStorePath": str(pki / "ca.p12"),
        "httpServerTrustStorePassword": HTTP_TRUST_STORE_PASSWORD,
    }
    bookie = LocalBookie.create(1, tmp_path / "bookie-1", service_uri, settings, http=True)
    bookie.pid = spawn(
        [sys.executable, "-m", "bkctl", "-vv", "bookie", "run", "--conf", str(bookie.conf_path)], bookie.log_path
    )
    try:
        wait_registered(cluster, [bookie])
        yield bookie, pki
    finally:
        bookie.stop()


def https_get(bookie, pki: Path, path: str) -> str:
    """GET on the bookie's HTTPS admin API with the admin certificate."""
    import ssl

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(str(pki / "ca.pem"))
    context.load_cert_chain(str(pki / "admin.pem"), str(pki / "admin-key.pem"))
    url = f"https://127.0.0.1:{bookie.http_port}{path}"
    with urllib.request.urlopen(url, context=context, timeout=30) as answer:
        assert answer.status == 200, path
        return answer.read().decode()


def test_no_tls_password_in_logs_metrics_server_config_json_errors_or_command_lines(tls_bookie, service_uri):
    bookie, pki = tls_bookie
    tls = ["--tls-trust-store", str(pki / "ca.pem"), "--tls-key", str(pki / "admin.p12")]
    tls += ["--tls-key-password-file", str(pki / "admin.pw")]
    outputs = []

    def bkctl(*args: str, expect: int = 0, stdin: str | None = None) -> str:
        done, output = run_bkctl("-vv", *args, stdin=stdin)
        assert done.returncode == expect, output
        outputs.append(output)
        return done.stdout

    # over TLS, as an admin: the bookie protocol (a ledger), the gRPC admin service, the HTTPS admin API
    uri = ["-u", service_uri, *tls]
    ledger_id = bkctl(*uri, "ledger", "create", "-e", "1", "-w", "1", "-a", "1", "--input", "-", stdin="x\n").strip()
    assert bkctl(*uri, "ledger", "read", ledger_id) == "x\n"
    assert json.loads(bkctl(*uri, "bookie", "info", "--all", "-o", "json"))[0]["bookieId"] == bookie.bookie_id
    bkctl(*uri, "bookie", "gc", bookie.bookie_id, "--wait", "-o", "json")
    bkctl(*uri, "bookie", "gc-status", bookie.bookie_id, "--http-port", str(bookie.http_port), "-o", "json")
    bkctl(*uri, "bookies", "list", "-o", "json")
    # a context keeps the files' paths, never what they hold
    bkctl("config", "set-context", "leak", "--service-uri", service_uri, *tls, "-o", "json")
    assert json.loads(bkctl("config", "get-contexts", "-o", "json"))[0]["tlsKeyPasswordFile"] == str(pki / "admin.pw")
    bkctl("--context", "leak", "bookie", "gc-status", "--all", "-o", "json")
    # a wrong key password: refused, and neither password is in the message
    private_file(pki / "wrong.pw", "wrong-" + CLIENT_KEY_PASSWORD + "\n")
    wrong = [*tls[:-1], str(pki / "wrong.pw")]
    bkctl("-u", service_uri, *wrong, "bookie", "info", "--all", "-o", "json", expect=2)
    assert "wrong-" not in outputs[-1] and "cannot be read (wrong password?)" in outputs[-1], outputs[-1]
    for output in outputs:
        assert not leaked(output), output

    # the bookie: what it serves, what it logged, how it was started
    config = json.loads(https_get(bookie, pki, "/api/v1/config/server_config"))
    for key in ("tlsKeyStorePasswordPath", "httpServerKeyStorePassword", "httpServerTrustStorePassword"):
        assert config[key] == "******", key
    assert config["httpServerKeyStorePath"] == str(pki / "bookie-http.p12")  # paths of stores are shown
    for path in ("/metrics", "/api/v1/bookie/info", "/api/v1/bookie/state", "/api/v1/ledger/list?print_metadata=true"):
        assert not leaked(https_get(bookie, pki, path)), path
    with urllib.request.urlopen(f"http://127.0.0.1:{bookie.metrics_port}/metrics", timeout=30) as response:
        assert not leaked(response.read().decode())
    args = command_line(bookie.pid)
    assert args and not leaked(" ".join(args)), args
    ps = subprocess.run(["ps", "-eww", "-o", "args"], capture_output=True, text=True, check=True).stdout
    assert str(bookie.conf_path) in ps and not leaked(ps)
    log = Path(bookie.log_path).read_text()
    assert "DEBUG" in log and "authenticated as admin" in log  # the -vv bookie logged, and saw TLS clients
    assert not leaked(log)

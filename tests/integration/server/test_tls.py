"""TLS and certificate roles on real bookies (bookie/server/auth.py, bookie/tls/): BookKeeper's START_TLS on the
bookie port, BookieAuthZFactory's admission, and our admin role on the gRPC admin service and the HTTP admin API.

Certificates are made here, by a throw-away CA (bookie.local.certs): ``admin`` (OU 0:admin, an admin role),
``client`` (OU 0:client, admitted, no admin role), ``stranger`` (OU 0:stranger, not admitted), one of another CA,
and an expired one."""

from __future__ import annotations

import shutil
import socket
import ssl
import time
from pathlib import Path

import pytest

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.codec import wire
from bookie.local import certs

from pki import STORE_PASSWORD, bookie_tls, make_pki, tls_args
from support.cluster import shared_cluster
from support.storage import KEY, records
from support.waiting import wait_for


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Path:
    return make_pki(tmp_path_factory.mktemp("pki"))


def bookie_settings(pki: Path, **more) -> dict[str, str]:
    return bookie_tls(
        pki,
        bkctlAdminRoles="admin",
        httpServerTlsEnable="true",
        httpServerKeyStorePath=str(pki / "bookie.p12"),
        httpServerKeyStorePassword=STORE_PASSWORD,
        httpServerTrustStorePath=str(pki / "ca.p12"),
        httpServerTrustStorePassword=STORE_PASSWORD,
        **more,
    )


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory, pki):
    with shared_cluster(zookeeper, tmp_path_factory.mktemp("tls"), bookies=3, http=True, **bookie_settings(pki)) as h:
        yield h


def client_context(pki: Path, name: str | None, ca: str = "ca") -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.load_verify_locations(str(pki / f"{ca}.pem"))
    if name:
        context.load_cert_chain(str(pki / f"{name}.pem"), str(pki / f"{name}-key.pem"))
    return context


class Conn:
    """A raw client connection: v3 frames, START_TLS and the handshake by hand."""

    def __init__(self, port: int):
        self.sock: socket.socket = socket.create_connection(("127.0.0.1", port), timeout=20)
        self.buffer = bytearray()
        self.txn = 0

    def request(self, operation: int, **fields) -> bytes:
        self.txn += 1
        header = pb.BKPacketHeader(version=pb.VERSION_THREE, operation=operation, txnId=self.txn)
        return wire.encode_v3(pb.Request(header=header, **fields))

    def answer(self) -> pb.Response:
        while not (frames := wire.cut_frames(self.buffer)):
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("closed by the bookie")
            self.buffer += data
        assert len(frames) == 1 and not self.buffer, "one answer at a time here"
        return wire.decode_v3_response(frames[0])

    def call(self, operation: int, **fields) -> pb.Response:
        self.sock.sendall(self.request(operation, **fields))
        return self.answer()

    def start_tls(self, context: ssl.SSLContext) -> pb.Response:
        answer = self.call(pb.START_TLS, startTLSRequest=pb.StartTLSRequest())
        assert answer.status == pb.EOK and answer.HasField("startTLSResponse")
        self.sock = context.wrap_socket(self.sock, server_hostname="127.0.0.1")
        return answer

    def add(self, ledger_id: int, entry_id: int, key: bytes = KEY) -> int:
        body = records(ledger_id, entry_id, 1)[4:]
        add = pb.AddRequest(ledgerId=ledger_id, entryId=entry_id, masterKey=key, body=body)
        return self.call(pb.ADD_ENTRY, addRequest=add).status

    def read(self, ledger_id: int, entry_id: int) -> int:
        return self.call(pb.READ_ENTRY, readRequest=pb.ReadRequest(ledgerId=ledger_id, entryId=entry_id)).status

    def close(self) -> None:
        self.sock.close()


def log_of(bookie) -> str:
    return bookie.log_path.read_text()


# ---- the bookie protocol ----


def test_plaintext_requests_are_refused_with_eua_and_the_bookie_says_why(cluster):
    bookie = cluster.bookies[0]
    conn = Conn(bookie.port)
    try:
        assert conn.add(9001, 0) == pb.EUA
        assert conn.read(9001, 0) == pb.EUA
        info = conn.call(pb.GET_BOOKIE_INFO, getBookieInfoRequest=pb.GetBookieInfoRequest(requested=3))
        assert info.status == pb.EUA and not info.HasField("getBookieInfoResponse")
    finally:
        conn.close()
    wait_for(lambda: "refusing the requests of 127.0.0.1" in log_of(bookie), "the bookie's warning")
    assert "not authenticated; this bookie serves TLS clients whose certificate has one of the roles admin, client" in (
        log_of(bookie)
    )


def test_bkctl_without_tls_is_refused_in_one_line(cluster, bkctl):
    result = bkctl("-u", cluster.service_uri, "ledger", "create", "--password", "pw", "--input", "-", input="x\n")
    assert result.exit_code == 4, result.output
    assert "requires TLS with a client certificate (bkctl --tls-*)" in result.stderr
    result = bkctl("-u", cluster.service_uri, "bookie", "gc", "--all")
    assert result.exit_code == 4
    assert "serves its admin service over TLS only" in result.stderr


def test_start_tls_then_the_handshake_on_the_same_connection(cluster, pki):
    conn = Conn(cluster.bookies[0].port)
    try:
        conn.start_tls(client_context(pki, "client"))
        assert conn.sock.version() in ("TLSv1.2", "TLSv1.3")
        assert conn.add(9002, 0) == pb.EOK
        assert conn.read(9002, 0) == pb.EOK  # its own ledger: this connection showed the key
    finally:
        conn.close()


def test_bytes_after_start_tls_before_its_answer_close_the_connection(cluster):
    bookie = cluster.bookies[0]
    conn = Conn(bookie.port)
    try:
        start = conn.request(pb.START_TLS, startTLSRequest=pb.StartTLSRequest())
        conn.sock.sendall(start + conn.request(pb.READ_ENTRY, readRequest=pb.ReadRequest(ledgerId=1, entryId=0)))
        with pytest.raises(ConnectionError):
            conn.answer()
    finally:
        conn.close()
    wait_for(lambda: "bytes sent after START_TLS before its answer" in log_of(bookie), "the bookie's warning")


@pytest.mark.parametrize(
    ("name", "ca", "client_sees"),
    [
        ("foreign", "ca", "certificate"),  # the bookie does not trust the client's CA
        ("client", "other-ca", "certificate verify failed"),  # the client does not trust the bookie's
        ("expired", "ca", "certificate"),  # the client's certificate expired
    ],
)
def test_handshakes_that_must_fail(cluster, pki, name, ca, client_sees):
    bookie = cluster.bookies[1]
    conn = Conn(bookie.port)
    try:
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)) as failure:
            conn.start_tls(client_context(pki, name, ca))
            conn.add(9003, 0)  # TLS 1.3: the server's refusal of a client certificate comes after the handshake
        assert client_sees in str(failure.value) or isinstance(failure.value, ConnectionError)
    finally:
        conn.close()
    if ca == "ca":
        wait_for(lambda: "TLS handshake with 127.0.0.1" in log_of(bookie), "the bookie's handshake failure")


def test_a_certificate_without_an_authorized_role_gets_eio_then_eua(cluster, pki):
    conn = Conn(cluster.bookies[2].port)
    try:
        conn.start_tls(client_context(pki, "stranger"))
        refused = conn.answer()  # processStartTLSRequestV3: EIO with START_TLS's header once TLS is up
        assert refused.header.operation == pb.START_TLS and refused.status == pb.EIO
        assert conn.add(9004, 0) == pb.EUA
    finally:
        conn.close()
    assert "AuthZ failed: Cert role ['stranger'] doesn't match allowedRoles list ['admin', 'client']" in log_of(
        cluster.bookies[2]
    )


# ---- bkctl with certificates ----


def test_bkctl_with_a_client_role_writes_its_ledgers_but_may_not_administer(cluster, pki, bkctl):
    client = ["-u", cluster.service_uri, *tls_args(pki, "client")]
    result = bkctl(*client, "ledger", "simpletest", "-n", "50")  # create, write, read back, delete
    assert result.exit_code == 0, result.output

    bookie = cluster.bookies[0].bookie_id
    for verb in (["bookie", "gc", "--all"], ["bookie", "readonly", bookie, "--on"]):
        refused = bkctl(*client, *verb)
        assert refused.exit_code == 4, refused.output
        assert "role 'client' may not run admin operations on this bookie (admin roles: admin)" in refused.stderr
    http_port = str(cluster.bookies[0].http_port)
    refused = bkctl(*client, "bookie", "readonly", bookie, "--on", "--http-port", http_port)
    assert refused.exit_code == 4 and "HTTP 403: role 'client' may not run admin operations" in refused.stderr


def test_bkctl_with_an_admin_role_administers_over_grpc_and_https(cluster, pki, bkctl):
    admin = ["-u", cluster.service_uri, *tls_args(pki, "admin")]
    bookie = cluster.bookies[1].bookie_id
    http_port = str(cluster.bookies[1].http_port)
    for over in ([], ["--http-port", http_port]):
        on = bkctl(*admin, "bookie", "readonly", bookie, "--on", *over)
        assert on.exit_code == 0, on.output
        off = bkctl(*admin, "bookie", "readonly", bookie, "--off", *over)
        assert off.exit_code == 0 and off.stdout.strip() == f"bookie/{bookie} writable"
        gc = bkctl(*admin, "bookie", "gc", bookie, "--wait", *over)
        assert gc.exit_code == 0, gc.output


def test_what_a_bookies_disks_hold_is_read_by_an_admin_role_only(cluster, pki):
    """It names the bookie's ledgers and directories: not for every client, unlike its state or GC status."""
    from admin.bookie_admin import storage_usage
    from bookie.errors import Unauthorized
    from bookie.meta.registration import BookieRegistry
    from bookie.tls import TlsSettings, client_settings

    registered = BookieRegistry(cluster.store).get(cluster.bookies[0].bookie_id)

    def role(name: str) -> TlsSettings:
        return client_settings(str(pki / "ca.pem"), str(pki / f"{name}.pem"), str(pki / f"{name}-key.pem"))

    with pytest.raises(Unauthorized, match="role 'client' may not run admin operations"):
        storage_usage(registered, tls=role("client"))
    assert storage_usage(registered, tls=role("admin")).bookie_id == registered.bookie_id


def test_https_requires_a_client_certificate(cluster, pki):
    import urllib.error
    import urllib.request

    url = f"https://127.0.0.1:{cluster.bookies[0].http_port}/api/v1/bookie/state"
    with pytest.raises((urllib.error.URLError, ConnectionError)):  # TLS 1.3: refused after the handshake
        urllib.request.urlopen(url, context=client_context(pki, None), timeout=10)
    with urllib.request.urlopen(url, context=client_context(pki, "client"), timeout=10) as answer:
        assert answer.status == 200  # reading the state: any client with a certificate of the CA, as in BookKeeper


# ---- reload ----


def test_certificates_are_reloaded_when_their_files_change(zookeeper, tmp_path, pki):
    tls = tmp_path / "tls"
    tls.mkdir()
    for name in ("bookie.pem", "bookie-key.pem", "ca.pem"):
        shutil.copy(pki / name, tls / name)
    second = certs.new_ca("second CA")
    (tls / "ca.pem").write_bytes((pki / "ca.pem").read_bytes() + second.cert_pem)  # trusts both
    settings = bookie_settings(pki, tlsCertFilesRefreshDurationSeconds="1")
    settings |= {"tlsKeyStore": str(tls / "bookie-key.pem"), "tlsCertificatePath": str(tls / "bookie.pem")}
    settings["tlsTrustStore"] = str(tls / "ca.pem")
    with shared_cluster(zookeeper, tmp_path / "bookies", bookies=1, **settings) as harness:
        port = harness.bookies[0].port

        def issuer() -> str:
            conn = Conn(port)
            try:
                conn.start_tls(client_context(tls, None))
                subject = conn.sock.getpeercert()["issuer"]
                return dict(rdn[0] for rdn in subject)["commonName"]
            finally:
                conn.close()

        assert issuer() == "test CA"
        replacement = certs.issue(second, "bookie", "0:bookie")
        time.sleep(1.1)  # a file's new modification time must differ from the one recorded
        certs.write_pair(tls, "bookie", replacement)
        wait_for(lambda: issuer() == "second CA", "the new certificate served", timeout=15)
        assert "TLS certificates reloaded from" in harness.bookies[0].log_path.read_text()


# ---- where bkctl takes its TLS from ----


def test_bkctl_takes_tls_from_a_context_a_client_configuration_or_its_variables(
    cluster, pki, bkctl, monkeypatch, tmp_path
):
    monkeypatch.chdir(pki)
    made = bkctl(
        "config", "set-context", "secure", "--service-uri", cluster.service_uri,
        "--tls-trust-store", "ca.pem", "--tls-cert", "admin.pem", "--tls-key", "admin-key.pem",
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    listed = bkctl("config", "get-contexts", "-o", "json")
    assert f'"tlsKey": "{pki}/admin-key.pem"' in listed.stdout  # stored absolute
    assert bkctl("--context", "secure", "bookie", "gc", "--all").exit_code == 0

    conf = tmp_path / "client.conf"  # BookKeeper's client keys, as a Java client's configuration names them
    conf.write_text(
        f"metadataServiceUri={cluster.service_uri}\n"
        "tlsProviderFactoryClass=org.apache.bookkeeper.tls.TLSContextFactory\n"
        f"tlsClientAuthentication=true\nclientKeyStoreType=PEM\nclientKeyStore={pki / 'client-key.pem'}\n"
        f"tlsCertificatePath={pki / 'client.pem'}\nclientTrustStoreType=PEM\nclientTrustStore={pki / 'ca.pem'}\n"
    )
    refused = bkctl("-c", str(conf), "bookie", "gc", "--all")  # the client role, from the file
    assert refused.exit_code == 4 and "role 'client' may not run admin operations" in refused.stderr

    for name, value in (("TRUST_STORE", "ca.pem"), ("CERT", "admin.pem"), ("KEY", "admin-key.pem")):
        monkeypatch.setenv(f"BKCTL_TLS_{name}", str(pki / value))
    assert bkctl("-u", cluster.service_uri, "bookie", "gc", "--all").exit_code == 0


def test_a_key_others_may_read_is_refused_in_one_line(cluster, pki, bkctl, tmp_path):
    key = tmp_path / "admin-key.pem"
    key.write_bytes((pki / "admin-key.pem").read_bytes())
    key.chmod(0o644)
    args = ["--tls-trust-store", str(pki / "ca.pem"), "--tls-cert", str(pki / "admin.pem"), "--tls-key", str(key)]
    result = bkctl("-u", cluster.service_uri, *args, "ledger", "simpletest")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: TLS private key file {key} is accessible by group or others (mode 0644): chmod 600 {key}\n"
    )


def test_bookie_refuses_a_tls_configuration_it_cannot_honour(tmp_path, pki):
    from bookie.errors import InvalidArgument
    from bookie.server.config import BookieConfig

    base = {"journalDirectories": str(tmp_path / "j"), "ledgerDirectories": str(tmp_path / "l")}
    cases = [
        ({"tlsKeyStoreType": "JKS"}, "tlsKeyStoreType=JKS: JKS key stores cannot be read here"),
        ({"tlsEnabledCipherSuites": "TLS_AES_128_GCM_SHA256"}, "tlsEnabledCipherSuites names Java's cipher suites"),
        ({"authorizedRoles": ""}, "but no roles set for configuration field 'authorizedRoles'"),
        ({"tlsClientAuthentication": "false"}, "needs tlsClientAuthentication=true"),
        ({"tlsProviderFactoryClass": ""}, "BookieAuthZFactory needs TLS, to read client certificates"),
    ]
    for change, message in cases:
        with pytest.raises(InvalidArgument, match=message.replace("(", r"\(").replace(")", r"\)")):
            BookieConfig.load(overrides={**base, **bookie_settings(pki), **change})

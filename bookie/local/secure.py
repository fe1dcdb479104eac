"""The secure sandbox (``bkctl sandbox start --secure``): a throw-away CA in ``<dir>/tls`` and what the bookies and
bkctl need to use it, in BookKeeper's keys.

- The bookies: TLS on the bookie port (START_TLS) and on our gRPC admin port, a client certificate required;
  BookieAuthZFactory admits the roles ``admin``, ``bookie`` and ``client``; our ``bkctlAdminRoles`` makes ``admin``
  and ``bookie`` administrators (a bookie's own client recovers and decommissions from the HTTP admin API); the
  HTTP admin API over HTTPS (PKCS12 stores, as BookKeeper's Vert.x server wants key stores).
- bkctl: ``bkctl.pem`` with the role ``admin``, used by itself when the sandbox is the cluster; ``client.pem``
  (role ``client``, no admin rights) for trying what an application may do.
- ZooKeeper: ``zkEnableSecurity`` (every znode CREATOR_ALL_ACL), every session logged in with ZooKeeper's digest
  scheme as the sandbox's one user, from ``<dir>/zk-digest`` (``sandbox:<random password>``, 0600): the bookies
  (``zkDigestAuthFile``), autorecovery (a bookie's configuration), the sandbox itself and bkctl when the sandbox is
  its cluster. A session without that login can read and change nothing of the cluster.

Keys and PKCS12 stores are 0600 in a 0700 directory; the stores' password is in the bookies' configurations, as
BookKeeper's httpServerKeyStorePassword is, which are 0600 too.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from bookie.local import certs
from bookie.meta.security import Credentials, ZkSecurity, read_digest_file
from bookie.tls import TLS_CONTEXT_FACTORY, TlsSettings
from bookie.tls import client_settings as _client_settings

ADMIN_ROLES = "admin,bookie"
AUTHORIZED_ROLES = "admin,bookie,client"


def _material(directory: Path) -> Path:
    """``<dir>/tls``, made once: the CA, the bookies', bkctl's and an application's certificates."""
    tls = directory / "tls"
    if (tls / "ca.pem").exists():
        return tls
    tls.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(tls, 0o700)
    ca = certs.new_ca()
    certs.write_pair(tls, "ca", ca)
    bookie = certs.issue(ca, "bookie", "0:bookie")
    certs.write_pair(tls, "bookie", bookie)
    certs.write_pair(tls, "bkctl", certs.issue(ca, "bkctl", "0:admin"))
    certs.write_pair(tls, "client", certs.issue(ca, "client", "0:client"))
    password = secrets.token_urlsafe(18).encode()
    certs.write_secret(tls / "store-password", password)
    certs.write_secret(tls / "bookie.p12", bookie.pkcs12(password, ca))
    from cryptography.hazmat.primitives.serialization import pkcs12

    trust = pkcs12.serialize_java_truststore([pkcs12.PKCS12Certificate(ca.cert, b"ca")], _encryption(password))
    certs.write_secret(tls / "ca.p12", trust)
    (tls / "ca.pem").write_bytes(ca.cert_pem)  # last: it says the material is complete
    return tls


def _encryption(password: bytes):
    from cryptography.hazmat.primitives import serialization

    return serialization.BestAvailableEncryption(password)


def zk_digest_file(directory: Path) -> Path:
    """``<dir>/zk-digest``: the ZooKeeper login (``user:password``, 0600) of everything on the sandbox, made once."""
    path = directory / "zk-digest"
    if not path.exists():
        certs.write_secret(path, b"sandbox:" + secrets.token_urlsafe(18).encode())
    return path


def zk_security(directory: Path) -> ZkSecurity:
    """How a session on a secure sandbox's ZooKeeper logs in, and the ACL of what it creates."""
    login: Credentials = read_digest_file(str(zk_digest_file(directory)))
    return ZkSecurity(enable_security=True, digest=login)


def bookie_settings(directory: Path) -> dict[str, str]:
    """The keys of every bookie of a secure sandbox."""
    tls = _material(directory)
    password = (tls / "store-password").read_text()
    return {
        "zkEnableSecurity": "true",
        "zkDigestAuthFile": str(zk_digest_file(directory)),
        "tlsProviderFactoryClass": TLS_CONTEXT_FACTORY,
        "tlsKeyStoreType": "PEM",
        "tlsKeyStore": str(tls / "bookie-key.pem"),
        "tlsCertificatePath": str(tls / "bookie.pem"),
        "tlsTrustStoreType": "PEM",
        "tlsTrustStore": str(tls / "ca.pem"),
        "tlsClientAuthentication": "true",
        "tlsCertFilesRefreshDurationSeconds": "60",
        "bookieAuthProviderFactoryClass": "org.apache.bookkeeper.tls.BookieAuthZFactory",
        "authorizedRoles": AUTHORIZED_ROLES,
        "bkctlAdminRoles": ADMIN_ROLES,
        "httpServerTlsEnable": "true",
        "httpServerKeyStorePath": str(tls / "bookie.p12"),
        "httpServerKeyStorePassword": password,
        "httpServerTrustStorePath": str(tls / "ca.p12"),
        "httpServerTrustStorePassword": password,
    }


def client_settings(directory: Path, name: str = "bkctl") -> TlsSettings | None:
    """bkctl's TLS on the sandbox (``name``: ``bkctl``, an admin; ``client``, an application)."""
    tls = directory / "tls"
    return _client_settings(str(tls / "ca.pem"), str(tls / f"{name}.pem"), str(tls / f"{name}-key.pem"))

"""Certificates for the TLS tests, made by a throw-away CA (bookie.local.certs), and the bookie keys that use them.

``admin`` (OU 0:admin), ``client`` (OU 0:client), ``stranger`` (OU 0:stranger), ``foreign`` (another CA's),
``expired``, and the bookies' own (OU 0:bookie); PEM files ``NAME.pem`` / ``NAME-key.pem`` (0600), and PKCS12
stores for HTTPS (``bookie.p12``, ``ca.p12``, password ``STORE_PASSWORD``)."""

from __future__ import annotations

import datetime
from pathlib import Path

from bookie.local import certs
from bookie.tls import TLS_CONTEXT_FACTORY

STORE_PASSWORD = "changeit"


def make_pki(where: Path) -> Path:
    ca = certs.new_ca("test CA")
    certs.write_pair(where, "ca", ca)
    bookie = certs.issue(ca, "bookie", "0:bookie")
    certs.write_pair(where, "bookie", bookie)
    certs.write_secret(where / "bookie.p12", bookie.pkcs12(STORE_PASSWORD.encode(), ca))
    certs.write_secret(where / "ca.p12", ca.pkcs12(STORE_PASSWORD.encode()))
    for role in ("admin", "client", "stranger"):
        certs.write_pair(where, role, certs.issue(ca, role, f"0:{role};1:cluster"))
    other = certs.new_ca("another CA")
    certs.write_pair(where, "other-ca", other)
    certs.write_pair(where, "foreign", certs.issue(other, "foreign", "0:admin"))
    long_ago = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=30)
    certs.write_pair(where, "expired", certs.issue(ca, "expired", "0:admin", days=2, not_before=long_ago))
    return where


def bookie_tls(pki: Path, authorized_roles: str = "admin,client", **more: str) -> dict[str, str]:
    """BookKeeper's keys of a bookie with TLS required and BookieAuthZFactory (ours and Java's read the same)."""
    return {
        "tlsProviderFactoryClass": TLS_CONTEXT_FACTORY,
        "tlsProvider": "JDK",  # a Java bookie's engine (the oracle has no OpenSSL); ours use Python's ssl anyway
        "tlsKeyStoreType": "PEM",
        "tlsKeyStore": str(pki / "bookie-key.pem"),
        "tlsCertificatePath": str(pki / "bookie.pem"),
        "tlsTrustStoreType": "PEM",
        "tlsTrustStore": str(pki / "ca.pem"),
        "tlsClientAuthentication": "true",
        "bookieAuthProviderFactoryClass": "org.apache.bookkeeper.tls.BookieAuthZFactory",
        "authorizedRoles": authorized_roles,
        **more,
    }


def tls_args(pki: Path, name: str, ca: str = "ca") -> list[str]:
    """bkctl's options for the certificate ``name``, trusting ``ca``."""
    trust, cert, key = pki / f"{ca}.pem", pki / f"{name}.pem", pki / f"{name}-key.pem"
    return ["--tls-trust-store", str(trust), "--tls-cert", str(cert), "--tls-key", str(key)]

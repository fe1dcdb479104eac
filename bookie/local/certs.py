"""A throw-away certificate authority, for the secure sandbox and the tests: a CA, and certificates it signs whose
subject carries BookKeeper's roles (``OU=0:role``, as BookieAuthZFactory reads them) and whose names are the
loopback address, where everything local listens. Keys are written 0600, certificates 0644."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

from bookie.files import write_private

DAY = datetime.timedelta(days=1)
PEM = serialization.Encoding.PEM


@dataclass(frozen=True)
class Issued:
    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate

    @property
    def key_pem(self) -> bytes:
        return self.key.private_bytes(PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())

    @property
    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(PEM)

    def pkcs12(self, password: bytes, ca: Issued | None = None) -> bytes:
        """A PKCS12 key store of the key and certificate (and the CA's certificate), protected by ``password``."""
        return pkcs12.serialize_key_and_certificates(
            b"key",
            self.key,
            self.cert,
            [ca.cert] if ca else None,
            serialization.BestAvailableEncryption(password),
        )


def _name(common_name: str, roles: str | None) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if roles is not None:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, roles))
    return x509.Name(attributes)


def new_ca(name: str = "bkctl sandbox CA", days: int = 3650) -> Issued:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    subject = _name(name, None)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - DAY)
        .not_valid_after(now + days * DAY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True)
        .sign(key, hashes.SHA256())
    )
    return Issued(key, cert)


def issue(
    ca: Issued,
    common_name: str,
    ou: str | None = None,
    days: int = 825,
    not_before: datetime.datetime | None = None,
    hosts: tuple[str, ...] = ("127.0.0.1", "localhost"),
) -> Issued:
    """A certificate signed by ``ca`` for ``hosts`` (IP addresses or names), with ``ou`` as the subject's OU
    (BookKeeper's roles: ``0:admin``), valid from ``not_before`` (yesterday) for ``days``; for servers and clients."""
    key = ec.generate_private_key(ec.SECP256R1())
    start = not_before or datetime.datetime.now(datetime.UTC) - DAY
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name, ou))
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + days * DAY)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH, x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]),
            critical=False,
        )
        .sign(ca.key, hashes.SHA256())
    )
    return Issued(key, cert)


def write_secret(path: Path, data: bytes) -> Path:
    """Write ``data`` to a new 0600 file (replacing ``path`` atomically)."""
    write_private(path, data)
    return path


def write_pair(directory: Path, name: str, issued: Issued) -> tuple[Path, Path]:
    """``name.pem`` (the certificate) and ``name-key.pem`` (0600) in ``directory``."""
    cert = directory / f"{name}.pem"
    cert.write_bytes(issued.cert_pem)
    return cert, write_secret(directory / f"{name}-key.pem", issued.key_pem)


def load(cert_path: Path, key_path: Path) -> Issued:
    key = serialization.load_pem_private_key(key_path.read_bytes(), None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    return Issued(key, x509.load_pem_x509_certificate(cert_path.read_bytes()))

"""A TLS endpoint's material read from its files: the private key and certificate chain (PEM, PKCS12), the trusted
CA certificates (a PEM bundle, a PKCS12 store). JKS is refused with the line that converts it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bookie.conf import read_secret_file
from bookie.errors import InvalidArgument
from bookie.tls.settings import JKS_REFUSED, Side, TlsSettings


@dataclass(frozen=True)
class Material:
    """What a TLS endpoint is made of, in memory: its key (unencrypted PKCS#8 PEM) and certificate chain (PEM), and
    the CA certificates it trusts (PEM), each None when the side has none."""

    key: bytes | None
    chain: bytes | None
    trusted: bytes | None


def _password(path: str | None, what: str, strip: bool) -> bytes | None:
    if not path:
        return None
    password = read_secret_file(path, what)
    # TLSContextFactory: a store's password is trimmed, a PEM key's is taken as the file holds it
    return password.strip() if strip else password


def _public(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise InvalidArgument(f"{what} {path} cannot be read: {exc.strerror}") from None


def _key_pair(settings: TlsSettings) -> tuple[bytes, bytes]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12

    assert settings.key_store is not None  # checked by TlsSettings.check
    pem = serialization.Encoding.PEM
    if settings.key_store_type == "PKCS12":
        data = read_secret_file(settings.key_store, "TLS key store")
        password = settings.key_store_password or _password(
            settings.key_store_password_path, "TLS key store password file", strip=True
        )
        _not_jks(data, settings.key_store)
        try:
            key, cert, extra = pkcs12.load_key_and_certificates(data, password or None)
        except ValueError as exc:
            raise InvalidArgument(
                f"TLS key store {settings.key_store} cannot be read (wrong password?): {exc}"
            ) from None
        if key is None or cert is None:
            raise InvalidArgument(f"TLS key store {settings.key_store} holds no private key with its certificate")
        chain = b"".join(c.public_bytes(pem) for c in (cert, *extra))
    else:
        data = read_secret_file(settings.key_store, "TLS private key file")
        password = _password(settings.key_store_password_path, "TLS key password file", strip=False)
        try:
            key = serialization.load_pem_private_key(data, password or None)
        except (ValueError, TypeError) as exc:
            raise InvalidArgument(f"TLS private key file {settings.key_store} cannot be read: {exc}") from None
        assert settings.certificate_path is not None  # checked by TlsSettings.check
        chain = _public(settings.certificate_path, "TLS certificate file")
        _certificates(chain, settings.certificate_path)
    unencrypted = key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return unencrypted, chain


def _not_jks(data: bytes, path: str) -> None:
    if data[:4] == b"\xfe\xed\xfe\xed":  # JKS's magic number
        raise InvalidArgument(f"{path} is a JKS key store: {JKS_REFUSED}")


def _certificates(data: bytes, path: str) -> None:
    from cryptography import x509

    try:
        x509.load_pem_x509_certificates(data)
    except ValueError:
        raise InvalidArgument(f"{path} holds no PEM certificate") from None


def _trusted(settings: TlsSettings) -> bytes:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12

    assert settings.trust_store is not None
    data = _public(settings.trust_store, "TLS trust store")
    if settings.trust_store_type == "PEM":
        _certificates(data, settings.trust_store)
        return data
    password = settings.trust_store_password or _password(
        settings.trust_store_password_path, "TLS trust store password file", strip=True
    )
    _not_jks(data, settings.trust_store)
    try:
        store = pkcs12.load_pkcs12(data, password or None)
    except ValueError as exc:
        raise InvalidArgument(
            f"TLS trust store {settings.trust_store} cannot be read (wrong password?): {exc}"
        ) from None
    certs = [c.certificate for c in store.additional_certs] + ([store.cert.certificate] if store.cert else [])
    if not certs:
        raise InvalidArgument(f"TLS trust store {settings.trust_store} holds no certificate")
    return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certs)


def read_material(settings: TlsSettings, side: Side) -> Material:
    key = chain = trusted = None
    if settings.key_store and (side == "server" or settings.client_authentication):
        key, chain = _key_pair(settings)
    if settings.trust_store and (side == "client" or settings.client_authentication):
        trusted = _trusted(settings)
    return Material(key, chain, trusted)

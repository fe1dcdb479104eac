"""TLS as Apache BookKeeper configures it (``tls/TLSContextFactory.java``, 4.17.4), for bookies and clients alike: its
configuration keys turned into Python ``ssl`` contexts and gRPC credentials, and the roles a certificate carries
(``util/CertUtils.java``).

The keys (a client reads the deprecated ``clientKeyStore...``/``clientTrustStore...`` names first, as
``ClientConfiguration`` does)::

    tlsProviderFactoryClass       org.apache.bookkeeper.tls.TLSContextFactory turns TLS on (empty: off)
    tlsProvider                   OpenSSL or JDK: which Java engine; ours is Python's ssl (OpenSSL) whatever it says
    tlsKeyStoreType               PEM or PKCS12 (BookKeeper's default, JKS, is refused: no maintained Python reader)
    tlsKeyStore                   PEM: the private key (PKCS#8 or traditional, encrypted or not); PKCS12: the store
    tlsKeyStorePasswordPath       a file holding the key's (PEM) or the store's (PKCS12) password
    tlsCertificatePath            PEM: the certificate chain, the bookie's or client's own first
    tlsTrustStoreType, tlsTrustStore, tlsTrustStorePasswordPath    the CA certificates trusted (PEM: a bundle)
    tlsClientAuthentication       bookie: require a client certificate; client: present one (false)
    tlsHostnameVerificationEnabled  client: the bookie's certificate must name the host connected to (false)
    tlsCertFilesRefreshDurationSeconds  > 0: files are checked for changes, at most that often, as connections
                                  start, and reloaded when one changed (0: never)
    tlsEnabledProtocols           e.g. TLSv1.2,TLSv1.3 (default: what OpenSSL allows)

Key and password files are secrets: refused when group or others may read them (:func:`bookie.conf.
read_secret_file`). Certificates and trust stores are public. As in BookKeeper, a client always checks the bookie's
certificate against its trust store; hostname verification is a separate switch.
"""

from __future__ import annotations

import logging
import os
import re
import ssl
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from bookie.conf import read_secret_file
from bookie.errors import InvalidArgument

log = logging.getLogger(__name__)

TLS_CONTEXT_FACTORY = "org.apache.bookkeeper.tls.TLSContextFactory"
JKS_REFUSED = (
    "JKS key stores cannot be read here (no maintained Python reader): convert it with "
    "`keytool -importkeystore -srcstoretype JKS -deststoretype PKCS12 -srckeystore F -destkeystore F.p12` "
    "and set the type to PKCS12 (or use PEM)"
)
PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
# The TLS keys of either side (a bookie's configuration lists them as read here, not unused).
KEYS = frozenset(
    {
        "tlsProviderFactoryClass",
        "tlsProvider",
        "tlsKeyStoreType",
        "tlsKeyStore",
        "tlsKeyStorePasswordPath",
        "tlsCertificatePath",
        "tlsTrustStoreType",
        "tlsTrustStore",
        "tlsTrustStorePasswordPath",
        "tlsClientAuthentication",
        "tlsHostnameVerificationEnabled",
        "tlsCertFilesRefreshDurationSeconds",
        "tlsEnabledProtocols",
        "tlsEnabledCipherSuites",
        "clientKeyStoreType",
        "clientKeyStore",
        "clientKeyStorePasswordPath",
        "clientTrustStoreType",
        "clientTrustStore",
        "clientTrustStorePasswordPath",
    }
)
Side = Literal["server", "client"]


@dataclass(frozen=True)
class TlsSettings:
    """One side's TLS configuration, in BookKeeper's terms (file paths; passwords are read from their files)."""

    key_store_type: str = "PEM"
    key_store: str | None = None
    key_store_password_path: str | None = None
    certificate_path: str | None = None
    trust_store_type: str = "PEM"
    trust_store: str | None = None
    trust_store_password_path: str | None = None
    client_authentication: bool = False
    hostname_verification: bool = False
    refresh_seconds: int = 0
    protocols: str | None = None
    # passwords given inline rather than in files: BookKeeper's HTTP server keys (httpServerKeyStorePassword)
    key_store_password: bytes | None = None
    trust_store_password: bytes | None = None

    @classmethod
    def from_properties(cls, props: Mapping[str, str], side: Side, where: str = "") -> TlsSettings | None:
        """The settings of a ``bk_server.conf`` or client configuration, or None when TLS is off."""

        def get(key: str, client_key: str | None = None) -> str | None:
            for name in (client_key, key) if side == "client" and client_key else (key,):
                value = props.get(name, "").strip()
                if value:
                    return value
            return None

        factory = get("tlsProviderFactoryClass")
        if factory is None:
            return None
        if factory != TLS_CONTEXT_FACTORY:
            raise InvalidArgument(f"tlsProviderFactoryClass={factory}{where}: only {TLS_CONTEXT_FACTORY} is supported")
        if get("tlsEnabledCipherSuites"):
            raise InvalidArgument(
                f"tlsEnabledCipherSuites{where} names Java's cipher suites; this side uses OpenSSL's defaults "
                "(limit the versions with tlsEnabledProtocols instead)"
            )
        settings = cls(
            key_store_type=(get("tlsKeyStoreType", "clientKeyStoreType") or "JKS").upper(),
            key_store=get("tlsKeyStore", "clientKeyStore"),
            key_store_password_path=get("tlsKeyStorePasswordPath", "clientKeyStorePasswordPath"),
            certificate_path=get("tlsCertificatePath"),
            trust_store_type=(get("tlsTrustStoreType", "clientTrustStoreType") or "JKS").upper(),
            trust_store=get("tlsTrustStore", "clientTrustStore"),
            trust_store_password_path=get("tlsTrustStorePasswordPath", "clientTrustStorePasswordPath"),
            client_authentication=_flag(props, "tlsClientAuthentication", where),
            hostname_verification=side == "client" and _flag(props, "tlsHostnameVerificationEnabled", where),
            refresh_seconds=_seconds(props, "tlsCertFilesRefreshDurationSeconds", where),
            protocols=get("tlsEnabledProtocols"),
        )
        settings.check(side, where)
        return settings

    def check(self, side: Side, where: str = "") -> None:
        """What BookKeeper refuses at start, refused here too (in one line, naming the key)."""
        for key, kind in (("tlsKeyStoreType", self.key_store_type), ("tlsTrustStoreType", self.trust_store_type)):
            if kind == "JKS":
                raise InvalidArgument(f"{key}=JKS{where}: {JKS_REFUSED}")
            if kind not in ("PEM", "PKCS12"):
                raise InvalidArgument(f"{key}={kind}{where} is not a key store type (PEM, PKCS12)")
        if side == "server" or self.client_authentication:  # a client presents a certificate only with it
            if not self.key_store:
                raise InvalidArgument(f"TLS{where} needs tlsKeyStore (the private key, or the PKCS12 store)")
            if self.key_store_type == "PEM" and not self.certificate_path:
                raise InvalidArgument(f"TLS{where} with a PEM key needs tlsCertificatePath (the certificate chain)")
        if (side == "client" or self.client_authentication) and not self.trust_store:
            raise InvalidArgument(f"TLS{where} needs tlsTrustStore (the CA certificates to trust)")
        for name in (self.protocols or "").split(","):
            if name.strip() and name.strip() not in PROTOCOLS:
                raise InvalidArgument(
                    f"tlsEnabledProtocols{where}: {name.strip()!r} is not one of {', '.join(PROTOCOLS)}"
                )

    @property
    def files(self) -> list[str]:
        """The files the material is read from (watched for changes)."""
        names = (
            self.key_store,
            self.key_store_password_path,
            self.certificate_path,
            self.trust_store,
            self.trust_store_password_path,
        )
        return [name for name in names if name]


def _flag(props: Mapping[str, str], key: str, where: str) -> bool:
    text = props.get(key, "").strip().lower()
    if text not in ("", "true", "false"):
        raise InvalidArgument(f"bad value for {key}{where}: {props[key]!r} is not true or false")
    return text == "true"


def _seconds(props: Mapping[str, str], key: str, where: str) -> int:
    text = props.get(key, "").strip() or "0"
    if not text.isdigit():
        raise InvalidArgument(f"bad value for {key}{where}: {props[key]!r} is not a number of seconds")
    return int(text)


# ---- reading the material ----


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


def _load_chain(context: ssl.SSLContext, key: bytes, chain: bytes) -> None:
    """``load_cert_chain`` from memory: ssl reads only files, so the key goes through an anonymous memory file
    (never a file on disk, where it could be left behind)."""
    fd = os.memfd_create("bkctl-tls", os.MFD_CLOEXEC)
    try:
        data = memoryview(chain + key)
        while data:
            data = data[os.write(fd, data) :]
        context.load_cert_chain(f"/proc/self/fd/{fd}")
    finally:
        os.close(fd)


def ssl_context(settings: TlsSettings, material: Material, side: Side) -> ssl.SSLContext:
    if side == "server":
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.verify_mode = ssl.CERT_REQUIRED if settings.client_authentication else ssl.CERT_NONE
    else:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = settings.hostname_verification
        context.verify_mode = ssl.CERT_REQUIRED
    if material.key is not None and material.chain is not None:
        _load_chain(context, material.key, material.chain)
    if material.trusted is not None:
        context.load_verify_locations(cadata=material.trusted.decode("ascii"))
    versions = sorted(PROTOCOLS[p.strip()] for p in (settings.protocols or "").split(",") if p.strip())
    if versions:
        context.minimum_version, context.maximum_version = versions[0], versions[-1]
    return context


class Tls:
    """One side's TLS, kept current: the ssl context (and material for gRPC) built from the settings, rebuilt when
    ``tlsCertFilesRefreshDurationSeconds`` has passed since the last check and a file's modification time changed
    (as TLSContextFactory.getSSLContext). A reload that fails keeps the last good context and is logged."""

    def __init__(self, settings: TlsSettings, side: Side) -> None:
        self.settings = settings
        self.side = side
        self._lock = threading.Lock()
        self._checked = time.monotonic()
        self._stamps = self._mtimes()
        self.material = read_material(settings, side)
        self._context = ssl_context(settings, self.material, side)
        self.generation = 0  # counts reloads (gRPC asks whether its configuration changed)

    def _mtimes(self) -> list[int | None]:
        stamps: list[int | None] = []
        for name in self.settings.files:
            try:
                stamps.append(os.stat(name).st_mtime_ns)
            except OSError:
                stamps.append(None)
        return stamps

    def refresh(self) -> None:
        """Reload if it is time to look and a file changed."""
        every = self.settings.refresh_seconds
        if every <= 0 or time.monotonic() < self._checked + every:
            return
        with self._lock:
            self._checked = time.monotonic()
            stamps = self._mtimes()
            if stamps == self._stamps:
                return
            self._stamps = stamps
            try:
                material = read_material(self.settings, self.side)
                context = ssl_context(self.settings, material, self.side)
            except (InvalidArgument, ssl.SSLError, OSError) as exc:
                log.warning("TLS files changed but could not be reloaded (keeping the last ones): %s", exc)
                return
            self.material, self._context = material, context
            self.generation += 1
            log.info("TLS certificates reloaded from %s", ", ".join(self.settings.files))

    def context(self) -> ssl.SSLContext:
        """The context for a connection starting now."""
        self.refresh()
        return self._context


# ---- roles (CertUtils) ----

OU_ROLE_CODE = "0"
_OU_PART = re.compile(r"^([0-9]+):(.*)$")


def roles_from_ou(ou: str | None) -> list[str] | None:
    """``CertUtils.getRolesFromOU``: the OU is ``code:value`` parts separated by ``;``; code 0 lists the roles,
    separated by ``,``. None without a role part. (A part that does not start with its code, e.g. after a
    space, is skipped, as Java's regular expression skips it.)"""
    parts: dict[str, str] = {}
    for part in (ou or "").split(";"):
        match = _OU_PART.match(part)
        if match:
            parts[match.group(1).strip()] = match.group(2).strip()
    names = parts.get(OU_ROLE_CODE)
    if names is None:
        return None
    roles = [role.strip() for role in re.split(",", names)]
    while len(roles) > 1 and roles[-1] == "":  # String.split drops trailing empty strings
        roles.pop()
    return roles


def ou_of_subject(rdns: Iterable[Iterable[tuple[str, str]]]) -> str | None:
    """The first OU of a subject in its encoded order (``CertUtils.getOUString``: LdapName's RDNs, right to left
    of the RFC 2253 name, are the certificate's order), from ``SSLSocket.getpeercert()['subject']``."""
    for rdn in rdns:
        for name, value in rdn:
            if name == "organizationalUnitName":
                return value
    return None


def ou_of_pem(pem: bytes) -> str | None:
    """The same, of a PEM certificate (what gRPC gives of its peer)."""
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    cert = x509.load_pem_x509_certificate(pem)
    for attribute in cert.subject:
        if attribute.oid == NameOID.ORGANIZATIONAL_UNIT_NAME:
            value = attribute.value
            return value if isinstance(value, str) else value.decode()
    return None


# ---- a client's settings from bkctl's options and variables ----

ENVIRONMENT = {  # BKCTL_TLS_* -> the option they stand for (paths only: passwords stay in files)
    "BKCTL_TLS_TRUST_STORE": "--tls-trust-store",
    "BKCTL_TLS_CERT": "--tls-cert",
    "BKCTL_TLS_KEY": "--tls-key",
    "BKCTL_TLS_KEY_PASSWORD_FILE": "--tls-key-password-file",
    "BKCTL_TLS_HOSTNAME_VERIFICATION": "--tls-hostname-verification",
}


def _store_type(path: str, what: str) -> str:
    """PEM or PKCS12, by the file's first bytes (PEM is text starting with -----BEGIN)."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
    except OSError as exc:
        raise InvalidArgument(f"{what} {path} cannot be read: {exc.strerror}") from None
    return "PEM" if b"-----BEGIN" in head else "PKCS12"


def client_settings(
    trust_store: str | None,
    cert: str | None = None,
    key: str | None = None,
    key_password_file: str | None = None,
    hostname_verification: bool = False,
) -> TlsSettings | None:
    """A client's TLS from file paths (bkctl's ``--tls-*``): None when none is given. ``key`` is a PEM key (with
    ``cert``, its certificate chain) or a PKCS12 store; ``trust_store`` a PEM bundle or a PKCS12 store."""
    if not (trust_store or cert or key):
        return None
    if not trust_store:
        raise InvalidArgument("TLS needs --tls-trust-store (the CA certificates that signed the bookies')")
    key_type = _store_type(key, "TLS key") if key else "PEM"
    if key_type == "PEM" and bool(key) != bool(cert):
        raise InvalidArgument("a PEM client key needs its certificate: give --tls-key and --tls-cert together")
    settings = TlsSettings(
        key_store_type=key_type,
        key_store=key,
        key_store_password_path=key_password_file,
        certificate_path=cert,
        trust_store_type=_store_type(trust_store, "TLS trust store"),
        trust_store=trust_store,
        trust_store_password_path=key_password_file if key_type == "PKCS12" else None,
        client_authentication=bool(key),
        hostname_verification=hostname_verification,
    )
    settings.check("client")
    return settings


def client_settings_from_environment() -> TlsSettings | None:
    """The client TLS that BKCTL_TLS_* name (what a library user, or a Spark executor, gets by default)."""
    env = os.environ
    return client_settings(
        env.get("BKCTL_TLS_TRUST_STORE") or None,
        env.get("BKCTL_TLS_CERT") or None,
        env.get("BKCTL_TLS_KEY") or None,
        env.get("BKCTL_TLS_KEY_PASSWORD_FILE") or None,
        env.get("BKCTL_TLS_HOSTNAME_VERIFICATION", "").lower() in ("1", "true"),
    )

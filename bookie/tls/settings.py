"""TLS settings as Apache BookKeeper's configuration keys give them (``tls/TLSContextFactory.java``, 4.17.4), for
bookies and clients alike, and a client's from file paths (bkctl's ``--tls-*``, a context, the secure sandbox).

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

import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from bookie.errors import InvalidArgument

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

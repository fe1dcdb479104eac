"""Client configuration, with BookKeeper's defaults (BookKeeper: conf/ClientConfiguration.java).

The defaults are plain values: a library user's client does what its code says, whatever the environment holds.
:meth:`ClientConfig.from_environment` reads bkctl's variables for the processes that take them on purpose: bkctl, and
the Spark workers it starts for an export (which get bkctl's TLS that way, as paths).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bookie.codec.digest import DigestType
from bookie.tls import TlsSettings, client_settings

V2_WIRE_PROTOCOL_VARIABLE = "BKCTL_USE_V2_WIRE_PROTOCOL"
TLS_VARIABLES = {  # BKCTL_TLS_* -> bkctl's option they stand for (paths only: passwords stay in files)
    "BKCTL_TLS_TRUST_STORE": "--tls-trust-store",
    "BKCTL_TLS_CERT": "--tls-cert",
    "BKCTL_TLS_KEY": "--tls-key",
    "BKCTL_TLS_KEY_PASSWORD_FILE": "--tls-key-password-file",
    "BKCTL_TLS_HOSTNAME_VERIFICATION": "--tls-hostname-verification",
}


@dataclass
class ClientConfig:
    ensemble_size: int = 3
    write_quorum_size: int = 2
    ack_quorum_size: int = 2
    digest_type: DigestType = DigestType.CRC32
    add_entry_timeout: float = 5.0  # seconds (addEntryTimeout)
    read_entry_timeout: float = 5.0  # seconds (readEntryTimeout)
    max_entry_size: int = 5 * 1024 * 1024 - 1024  # the bookie's nettyMaxFrameSizeBytes, less the framing
    # BookKeeper's useV2WireProtocol: adds and reads in the binary v2 protocol
    use_v2_wire_protocol: bool = False
    # TLS to the bookies (bookie.tls.settings: BookKeeper's client keys, or bkctl's --tls-*): connections to every
    # bookie are upgraded by START_TLS as a Java client's are, and the admin services use TLS with the same certificate
    tls: TlsSettings | None = None

    @classmethod
    def from_environment(cls, env: Mapping[str, str], **values: Any) -> ClientConfig:
        """The configuration bkctl's variables give: ``BKCTL_USE_V2_WIRE_PROTOCOL`` (true or 1) and, unless ``values``
        sets ``tls``, ``BKCTL_TLS_*``; ``values`` sets the other fields."""
        values.setdefault("use_v2_wire_protocol", v2_wire_protocol_from_environment(env))
        if "tls" not in values:
            values["tls"] = tls_from_environment(env)
        return cls(**values)


def v2_wire_protocol_from_environment(env: Mapping[str, str]) -> bool:
    return env.get(V2_WIRE_PROTOCOL_VARIABLE, "").lower() in ("1", "true")


def tls_from_environment(env: Mapping[str, str]) -> TlsSettings | None:
    """The client TLS that ``BKCTL_TLS_*`` name, or None."""
    return client_settings(
        env.get("BKCTL_TLS_TRUST_STORE") or None,
        env.get("BKCTL_TLS_CERT") or None,
        env.get("BKCTL_TLS_KEY") or None,
        env.get("BKCTL_TLS_KEY_PASSWORD_FILE") or None,
        env.get("BKCTL_TLS_HOSTNAME_VERIFICATION", "").lower() in ("1", "true"),
    )

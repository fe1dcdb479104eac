"""Client configuration, with BookKeeper's defaults (BookKeeper: conf/ClientConfiguration.java)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from bookie.codec.digest import DigestType
from bookie.tls import TlsSettings, client_settings_from_environment


@dataclass
class ClientConfig:
    ensemble_size: int = 3
    write_quorum_size: int = 2
    ack_quorum_size: int = 2
    digest_type: DigestType = DigestType.CRC32
    add_entry_timeout: float = 5.0  # seconds (addEntryTimeout)
    read_entry_timeout: float = 5.0  # seconds (readEntryTimeout)
    max_entry_size: int = 5 * 1024 * 1024 - 1024  # the bookie's nettyMaxFrameSizeBytes, less the framing
    # BookKeeper's useV2WireProtocol: adds and reads in the binary v2 protocol (BKCTL_USE_V2_WIRE_PROTOCOL=true)
    use_v2_wire_protocol: bool = field(
        default_factory=lambda: os.environ.get("BKCTL_USE_V2_WIRE_PROTOCOL", "").lower() in ("1", "true")
    )
    # TLS to the bookies (bookie/tls.py: BookKeeper's client keys, or bkctl's --tls-* / BKCTL_TLS_*): connections to
    # every bookie are upgraded by START_TLS as a Java client's are, and the admin services use TLS with the same
    # certificate
    tls: TlsSettings | None = field(default_factory=client_settings_from_environment)

"""Client configuration, with BookKeeper's defaults (BookKeeper: conf/ClientConfiguration.java)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from bookie.codec.digest import DigestType
from bookie.errors import InvalidArgument
from bookie.tls import TlsSettings, client_settings_from_environment

DATA_TRANSPORTS = ("bookkeeper", "grpc")


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
    # How adds and reads travel (BKCTL_DATA_TRANSPORT): "bookkeeper" (default), BookKeeper's protocol on the bookie
    # port, to every bookie; "grpc": our batched gRPC data stream where a bookie offers it (on its bkctl-admin
    # endpoint: our bookies), BookKeeper's protocol elsewhere. With the C frame codec (bookie/codec/frames.py)
    # BookKeeper's protocol moves as many entries per second as the stream (0.99x on writes, 1.00x on reads, the
    # medians of 19 paired runs of benchmarks/vs_bookkeeper.sh) for less CPU, with a third of its add latency.
    data_transport: str = field(default_factory=lambda: os.environ.get("BKCTL_DATA_TRANSPORT", "bookkeeper"))
    # TLS to the bookies (bookie/tls.py: BookKeeper's client keys, or bkctl's --tls-* / BKCTL_TLS_*): every bookie is
    # then reached over BookKeeper's protocol, upgraded by START_TLS as a Java client does, and the admin services
    # over TLS with the same certificate
    tls: TlsSettings | None = field(default_factory=client_settings_from_environment)

    def __post_init__(self) -> None:
        if self.data_transport not in DATA_TRANSPORTS:
            raise InvalidArgument(
                f"BKCTL_DATA_TRANSPORT is {self.data_transport!r}: it is one of {', '.join(DATA_TRANSPORTS)}"
            )

"""Client configuration, with BookKeeper's defaults (spec/defaults.md)."""

from __future__ import annotations

from dataclasses import dataclass

from bookie.codec.digest import DigestType


@dataclass
class ClientConfig:
    ensemble_size: int = 3
    write_quorum_size: int = 2
    ack_quorum_size: int = 2
    digest_type: DigestType = DigestType.CRC32
    add_entry_timeout: float = 5.0  # seconds (addEntryTimeout)
    read_entry_timeout: float = 5.0  # seconds (readEntryTimeout)
    max_entry_size: int = 5 * 1024 * 1024 - 1024  # the bookie's nettyMaxFrameSizeBytes, less the framing

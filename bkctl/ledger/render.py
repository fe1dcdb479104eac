"""How ledger metadata is shown: the JSON document (a stable interface) and its table row."""

from __future__ import annotations

import base64

from bkctl.terminal import iso_time
from bookie.meta.ledger_metadata import LedgerMetadata

HEADERS = ["LEDGER", "STATE", "E/WQ/AQ", "LAST-ENTRY", "LENGTH", "DIGEST", "SEGMENTS"]


def _text(value: bytes) -> str:
    """Custom metadata values are bytes: shown as text when they are UTF-8, else as ``base64:...``."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return "base64:" + base64.b64encode(value).decode()


def metadata_doc(ledger_id: int, md: LedgerMetadata) -> dict:
    """The ``ledger metadata -o json`` document. lastEntryId and length are null unless the ledger is CLOSED;
    the password is never shown, only whether one is set; ctime (ms since the epoch) also as ctimeIso."""
    return {
        "ledgerId": ledger_id,
        "formatVersion": md.format_version,
        "state": md.state.name,
        "ensembleSize": md.ensemble_size,
        "writeQuorumSize": md.write_quorum_size,
        "ackQuorumSize": md.ack_quorum_size,
        "lastEntryId": md.last_entry_id if md.is_closed else None,
        "length": md.length if md.is_closed else None,
        "digestType": md.digest_type.name if md.digest_type else None,
        "passwordSet": bool(md.password),
        "ctime": md.ctime,
        "ctimeIso": iso_time(md.ctime),
        "segments": [{"firstEntryId": s.first_entry_id, "ensemble": list(s.bookies)} for s in md.segments],
        "customMetadata": {k: _text(v) for k, v in md.custom_metadata.items()},
    }


def metadata_row(ledger_id: int, md: LedgerMetadata) -> list:
    doc = metadata_doc(ledger_id, md)
    quorums = f"{md.ensemble_size}/{md.write_quorum_size}/{md.ack_quorum_size}"
    return [ledger_id, doc["state"], quorums, doc["lastEntryId"], doc["length"], doc["digestType"], len(md.segments)]

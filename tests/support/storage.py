"""Ledger storage opened in-process: payloads, records, adds, crashes."""

from __future__ import annotations

import struct
import threading

from bookie.codec.digest import Digester, DigestType, master_key
from bookie.codec.entry import frame_entry, parse_entry
from bookie.storage.db.storage import DbLedgerStorage
from bookie.storage.ledger_storage import AddKey, LedgerStorage

KEY = master_key(b"pw")
DIGESTER = Digester(DigestType.CRC32C)


def payload(ledger_id: int, entry_id: int, size: int = 100) -> bytes:
    return (f"{ledger_id}:{entry_id}:".encode() * size)[:size]


def framed(ledger_id: int, first: int, count: int, size: int = 100) -> list[bytes]:
    """Entries ``first..first+count-1`` of a ledger, framed (digest CRC32C) as a client sends them."""
    return [
        frame_entry(
            DIGESTER, ledger_id, entry_id, entry_id - 1, (entry_id + 1) * size, payload(ledger_id, entry_id, size)
        )
        for entry_id in range(first, first + count)
    ]


def records(ledger_id: int, first: int, count: int, size: int = 100) -> bytes:
    """The same entries as add records (bookie/codec/records.py): each ``int32 length | framed entry``."""
    return b"".join(struct.pack(">i", len(f)) + f for f in framed(ledger_id, first, count, size))


def add(storage: LedgerStorage, ledger_id: int, first: int, count: int, key=KEY, recovery=False, size=100):
    """Add and wait until durable; return the refused adds."""
    done = threading.Event()
    errors = []
    _, refused = storage.add_batch(
        {ledger_id: AddKey(key, recovery=recovery)},
        records(ledger_id, first, count, size),
        lambda e: (errors.append(e), done.set()),
    )
    assert done.wait(10) and errors == [None]
    return refused


def stored_entry(storage: LedgerStorage, ledger_id: int, entry_id: int):
    return parse_entry(DIGESTER, storage.read_entry(ledger_id, entry_id), ledger_id, entry_id)


def crash(storage: LedgerStorage) -> None:
    """What kill -9 leaves: whatever reached the OS; no checkpoint, no shutdown."""
    for journal in storage.journals:
        journal.stop()  # the journal threads die with the process; nothing more is written


def crash_db(storage: DbLedgerStorage) -> None:
    """What kill -9 leaves of a DbLedgerStorage: the journal, what checkpoints wrote, nothing of the write cache."""
    for journal in storage.journals:
        journal.stop()
    for single in storage.dirs:
        single.locations.close()
        single.ledgers.close()

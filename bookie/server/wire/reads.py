"""The one read path of the bookie port: read an entry and its ledger's LAC from storage, map a failure to its
status. Plain reads (v3, v2, the C scan's), batch reads and the request handlers' reads all go through
:func:`read_entry`; :class:`ReadCounts` counts those a connection answers in one pass."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.codec import wire
from bookie.errors import BKError, CorruptData
from bookie.storage.disk_errors import DiskErrors

log = logging.getLogger("bookie.server.wire")


class ReadableStorage(Protocol):
    def read_entry(self, ledger_id: int, entry_id: int) -> bytes: ...

    def lac(self, ledger_id: int) -> int: ...

    disk_errors: DiskErrors


def status_of(exc: BaseException) -> int:
    """The BookKeeper status code for an error (EIO for anything without one)."""
    if isinstance(exc, CorruptData):
        log.error("corruption: %s", exc)
    elif not isinstance(exc, BKError):
        log.exception("unexpected error", exc_info=exc)
    status: int | None = getattr(exc, "status", None)
    return status or pb.EIO


Read = tuple[int, bytes | None, int | None]  # (status, framed entry, LAC); entry and LAC None on failure


def read_entry(storage: ReadableStorage, ledger_id: int, entry_id: int, lacs: dict[int, int] | None = None) -> Read:
    """Read an entry (-1: the highest stored) and its ledger's LAC. ``lacs``: the LACs read before in the same pass,
    each ledger's read once (one read a moment earlier is still a LAC the bookie had: it only grows)."""
    try:
        body = storage.read_entry(ledger_id, entry_id)
        if lacs is None:
            lac = storage.lac(ledger_id)
        else:
            known = lacs.get(ledger_id)
            if known is None:
                known = lacs[ledger_id] = storage.lac(ledger_id)
            lac = known
    except OSError as exc:  # the disk: counted and logged without flooding (a failing disk fails every read)
        storage.disk_errors.record(exc, f"ledger {ledger_id} entry {entry_id}")
        return pb.EIO, None, None
    except Exception as exc:  # noqa: BLE001 - every failure answers the request; status_of logs the unexpected
        return status_of(exc), None, None
    return pb.EOK, body, lac


@dataclass(slots=True)
class ReadCounts:
    """The plain reads a connection answered in one pass: succeeded, failed, bytes read, seconds in storage."""

    ok: int = 0
    failed: int = 0
    size: int = 0
    seconds: float = 0.0


def batch_read(
    storage: ReadableStorage, request: wire.BatchReadRequestV2, max_frame_size: int
) -> tuple[int, list[bytes], bool]:
    """BATCH_READ_ENTRY (BatchedReadEntryProcessor): consecutive entries from the first, until maxCount, or until
    the response would pass maxSize (never less than the first entry). ``(v2 rc, entries, failed)``: an error on the
    first entry is the answer's rc, a later one ends the batch."""
    max_count = request.max_count if request.max_count > 0 else 1 << 31
    max_size = min(request.max_size, max_frame_size)
    entries: list[bytes] = []
    size, rc = wire.BATCH_READ_RESPONSE_OVERHEAD, wire.v2_status(pb.EOK)
    lacs: dict[int, int] = {}
    for entry_id in range(request.entry_id, request.entry_id + max_count):
        status, body, _ = read_entry(storage, request.ledger_id, entry_id, lacs)
        if body is None:
            if not entries:
                rc = wire.v2_status(status)
            return rc, entries, True
        size += len(body) + 4
        if entries and size > max_size:
            break
        entries.append(body)
    return rc, entries, False

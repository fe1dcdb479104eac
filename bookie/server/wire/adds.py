"""The adds of a connection: each pass's adds go to ledger storage as one batch (one journal write); once it is
durable, all their answers leave in one write (BookKeeper's WriteEntryProcessor, grouped)."""

from __future__ import annotations

import time
from typing import Any, Protocol

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.codec import frames
from bookie.storage.ledger_storage import AddKey

Answer = tuple[int | None, int, int]  # (txnId, or None for v2; ledgerId; entryId): who to answer
Key = tuple[bytes, bool, int]  # a ledger's (masterKey, recovery, deferred sync) in a batch


class AddBatch:
    """The adds of one pass over the frames: records for one ``add_batch``, and who to answer."""

    __slots__ = ("answers", "keys", "records", "started", "submitted")

    def __init__(self, started: float) -> None:
        self.keys: dict[int, Key] = {}
        self.records: list[bytes] = []
        self.answers: list[Answer] = []
        self.started = started  # when their frames arrived
        self.submitted = started  # when they went to storage


class Connection(Protocol):
    """What the adds stage needs of its connection (bookie/server/wire/connection.py)."""

    handlers: Any  # BookieHandlers
    bookie: Any
    stats: Any
    read_only: bool  # the bookie's, this pass

    def write(self, frames: list[bytes]) -> None: ...

    def pace(self) -> None: ...

    def added(self, answers: list[Answer], statuses: list[int]) -> None:
        """Adds answered with ``statuses``."""


class Adds:
    """A connection's adds: queued in a pass's batch, stored, answered; ``in_flight`` until answered."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.handlers = connection.handlers
        self.bookie = connection.bookie
        self.stats = connection.stats
        self.in_flight = 0

    def queue(
        self, batch: AddBatch, answers: list[Answer], keys: dict[int, Key], records: bytes, high_priority: bool
    ) -> AddBatch:
        """Queue adds for this pass's batch: a run of them (frames.ADDS), as one add batch; the batch they went to
        (a new one when a ledger's key differs from the batch's: one key per ledger and batch). ``records``: the
        storage record of each entry."""
        connection = self.connection
        if connection.read_only and not (high_priority and not self.bookie.read_only_by_disk):
            # BookKeeper lets high-priority (recovery) adds through a read-only bookie whose disks have room
            connection.write([frames.add_responses(answers, [pb.EREADONLY] * len(answers))])
            self.stats.add_refused(time.perf_counter() - batch.started, len(answers))
            return batch
        known = batch.keys
        for ledger_id, key in keys.items():
            if known.get(ledger_id, key) != key:
                self.submit(batch)
                batch = AddBatch(batch.started)
                break
        batch.keys.update(keys)
        batch.records.append(records)
        batch.answers += answers
        return batch

    def submit(self, batch: AddBatch) -> None:
        if not batch.answers:
            return
        self.in_flight += len(batch.answers)
        batch.submitted = time.perf_counter()
        records = b"".join(batch.records)
        keys = {
            ledger_id: AddKey(key, recovery=recovery, deferred_sync=bool(deferred))
            for ledger_id, (key, recovery, deferred) in batch.keys.items()
        }
        refused: list[Any]  # bound before the callback runs, in a later loop turn
        refused = self.handlers.store_adds(keys, records, lambda error: self._stored(batch, error, refused))

    def _stored(self, batch: AddBatch, error: Any, refused: Any) -> None:
        connection = self.connection
        self.in_flight -= len(batch.answers)
        durable = time.perf_counter()
        statuses, failed = self.handlers.add_statuses(batch.answers, error, refused)
        connection.added(batch.answers, statuses)
        connection.write([frames.add_responses(batch.answers, statuses)])
        self.stats.adds_answered(
            len(statuses) - failed,
            failed,
            durable - batch.submitted,
            time.perf_counter() - batch.started,
            statuses.count(pb.ETOOMANYREQUESTS) if failed else 0,
        )
        connection.pace()

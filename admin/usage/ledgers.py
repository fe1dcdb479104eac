"""Each ledger a bookie holds or should hold: its state on that bookie, by the metadata and the bookie's index, and
its owner (Pulsar's topic, cursor or schema, from the ledger's custom metadata, as ``pulsar owners`` reads it).

| state           | metadata                    | the bookie's index | its bytes                                  |
|-----------------|-----------------------------|--------------------|--------------------------------------------|
| open, closed    | names the bookie            | has it             | live                                       |
| no-index        | names the bookie            | has not            | dead: compaction drops them                |
| not-owned       | exists, names it no more    | either             | freed after gcOverreplicatedLedgerWaitTime |
| deleted         | absent                      | has it             | the next GC run forgets it                 |
| not-in-metadata | absent                      | has not            | dead: compaction drops them                |
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from admin.pulsar.ownership import owner_of
from admin.usage.expected import Expected, names
from bookie.meta.ledger_metadata import LedgerMetadata


class State(enum.StrEnum):
    OPEN = "open"
    CLOSED = "closed"
    NO_INDEX = "no-index"  # in its logs, not in its index: entries with no index entry
    NOT_OWNED = "not-owned"  # a replica the bookie no longer owns (a recovery or a replace moved it)
    DELETED = "deleted"  # deleted in the metadata, not yet collected by the bookie
    NOT_IN_METADATA = "not-in-metadata"  # neither in the metadata nor in the index: only bytes in logs


LIVE = (State.OPEN, State.CLOSED)


@dataclass(frozen=True)
class LedgerFacts:
    ledger_id: int
    state: State
    owner: str | None  # ``persistent://t/ns/x``, ``... cursor sub``, ``schema t/ns/x``; None: not Pulsar's


def state_of(md: LedgerMetadata | None, bookie_id: str, in_index: bool) -> State:
    """The ledger's state on the bookie (the table above)."""
    if md is None:
        return State.DELETED if in_index else State.NOT_IN_METADATA
    if not names(md, bookie_id):
        return State.NOT_OWNED
    if not in_index:
        return State.NO_INDEX
    return State.CLOSED if md.is_closed else State.OPEN


def owner_name(md: LedgerMetadata | None) -> str | None:
    owner = owner_of(md.custom_metadata) if md is not None else None
    return owner.describe() if owner is not None else None


def facts(ledger_id: int, md: LedgerMetadata | None, bookie_id: str, in_index: bool) -> LedgerFacts:
    return LedgerFacts(ledger_id, state_of(md, bookie_id, in_index), owner_name(md))


@dataclass
class LedgerUsage:
    """A ledger on the bookie: its state and owner, what the metadata says the bookie should hold of it (None: no
    ensemble names the bookie) and the bytes its entry logs hold, log by log."""

    facts: LedgerFacts
    expected: Expected | None
    logs: dict[tuple[str, int], int] = field(default_factory=dict)  # (directory, logId) -> bytes

    @property
    def held(self) -> int:
        return sum(self.logs.values())

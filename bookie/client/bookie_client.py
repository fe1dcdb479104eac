"""The data operations on one bookie, whatever carries them: :class:`BookieClient`.

BookKeeper's own protocol, v3 or v2, implements it (:class:`~bookie.client.wire_client.WireBookieClient`), to any
bookie, ours or Java; ``ClientCore.bookie(bookie_id)`` gives it. The code above (the ledger handles, recovery,
re-replication, the checker) never builds or reads a protobuf message: it passes ledger ids, entry ids, keys and
flags as Python values and gets small tuples back.

BookKeeper status codes are the caller's to judge: results carry them as ints, the values of :class:`StatusCode`
(v3 numbering; a v2 bookie's return codes are translated at the transport). Transport failures are raised as the
core's exceptions instead: an unreachable bookie or a lost connection is ServiceUnavailable, no answer in time is
OperationTimeout, a peer that does not speak the protocol is BKError.

Adds are not awaited one by one (a coroutine per add cost more than the add): ``add`` sends, and the transport calls
``target.added(token, index, status, client)`` exactly once per add, with ``CONNECTION_LOST`` when the connection
broke with the add in flight. Range reads yield lists of ``(entry id, framed entry)``, one per burst of answers, so
that a reader awaits once per burst, not once per entry.
"""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import NamedTuple, Protocol, TypeVar


class StatusCode(enum.IntEnum):
    """BookKeeper's v3 status codes (``BookkeeperProtocol.proto``'s ``StatusCode``), and one of the client's own.

    Results carry statuses as plain ints (no conversion per entry); they compare equal to these members."""

    CONNECTION_LOST = -1  # the client's own: the connection to the bookie broke with the request in flight
    EOK = 0
    ENOLEDGER = 402
    ENOENTRY = 403
    EBADREQ = 404
    EIO = 501
    EUA = 502
    EBADVERSION = 503
    EFENCED = 504
    EREADONLY = 505
    ETOOMANYREQUESTS = 506
    EUNKNOWNLEDGERSTATE = 507


# The codes callers test per entry or per add, as module names: a member looked up on the enum class costs ~6x more
CONNECTION_LOST = StatusCode.CONNECTION_LOST
EOK = StatusCode.EOK
ENOLEDGER = StatusCode.ENOLEDGER
ENOENTRY = StatusCode.ENOENTRY
EBADREQ = StatusCode.EBADREQ
EUA = StatusCode.EUA
EFENCED = StatusCode.EFENCED


def refused_because(secure: bool) -> str:
    """What an EUA answer means, for the message of the error it becomes: a wrong ledger password, or a bookie that
    authenticates clients (BookieAuthZFactory) refusing this one."""
    if secure:
        return "unauthorized (EUA): wrong password, or this client's certificate role may not do it"
    return "unauthorized (EUA): wrong password, or the bookie requires TLS with a client certificate (bkctl --tls-*)"


def status_name(status: int) -> str:
    """``ENOLEDGER (402)`` for a known status, ``status 999`` for another."""
    try:
        return f"{StatusCode(status).name} ({status})"
    except ValueError:
        return f"status {status}"


class EntryRead(NamedTuple):
    """The answer to a single-entry read."""

    status: int
    body: bytes = b""  # the framed entry, when status is EOK


class LacRead(NamedTuple):
    """The answer to READ_LAC: what a bookie knows of a ledger's LAC."""

    status: int
    lac_body: bytes | None = None  # the explicit LAC a writer sent (framed, digested), if any
    last_entry_body: bytes | None = None  # the highest entry the bookie stores (framed), if any


class LacPoll(NamedTuple):
    """The answer to a LAC long poll."""

    status: int
    max_lac: int  # the bookie's LAC of the ledger when it answered (-1: it knows none)


class RangeStopped(NamedTuple):
    """A range read's last item when the bookie could not give ``entry_id`` (nor, so, the rest): its status."""

    entry_id: int
    status: int


class LedgerEntries(NamedTuple):
    """The answer to GET_LIST_OF_ENTRIES_OF_LEDGER for one ledger."""

    ledger_id: int
    status: int
    availability: bytes  # the entries the bookie holds, encoded (bookie.codec.availability), when status is EOK


class BookieInfo(NamedTuple):
    """The answer to GET_BOOKIE_INFO."""

    status: int
    total_disk_capacity: int  # bytes
    free_disk_space: int  # bytes


@dataclass(frozen=True, slots=True)
class Stripe:
    """Limits a range read to the entries the bookie at ``bookie_index`` holds by the write-set rule (and, with
    ``also_held_by``, that the bookie at that index holds too: what re-replication copies for a lost bookie)."""

    ensemble_size: int
    write_quorum_size: int
    bookie_index: int
    also_held_by: int | None = None


EntryChunk = list[tuple[int, bytes]]  # (entry id, framed entry), in entry order


class AddToken(Protocol):
    """What a transport needs of the token of an add: its entry id (``add`` is given the rest)."""

    @property
    def entry_id(self) -> int: ...


class EntryToken(NamedTuple):
    """The token of an add whose target needs nothing but its entry id (recovery, re-replication)."""

    entry_id: int


TokenT = TypeVar("TokenT", bound=AddToken)
TokenT_contra = TypeVar("TokenT_contra", bound=AddToken, contravariant=True)


class AddTarget(Protocol[TokenT_contra]):
    """Who is told the outcome of adds: the ledger writer, a recovery, a re-replication."""

    def added(self, token: TokenT_contra, index: int, status: int, bookie: BookieClient) -> None:
        """One add's status (``CONNECTION_LOST`` when its connection broke), called once per add."""


class BookieClient(Protocol):
    """The data operations on one bookie, shared by every ledger handle of a client. Used on the client's loop."""

    @property
    def bookie_id(self) -> str: ...

    @property
    def failure(self) -> str | None:
        """Why the last connection failed before it served (its TLS handshake), for errors; None if it did not."""

    def add(
        self,
        ledger_id: int,
        master_key: bytes,
        recovery: bool,
        record: bytes,
        target: AddTarget[TokenT],
        token: TokenT,
        index: int,
    ) -> None:
        """Send the add of ``record`` (``int32 size | framed entry``, entry ``token.entry_id``); a RECOVERY_ADD
        when ``recovery`` (a fenced ledger takes it). ``target.added(token, index, status, self)`` follows once."""

    async def read_entry(
        self, ledger_id: int, entry_id: int, timeout: float, what: str, fence_key: bytes | None = None
    ) -> EntryRead:
        """READ_ENTRY of one entry (-1: the highest the bookie stores). With ``fence_key`` (the ledger's master key)
        the read fences the ledger first, at high priority: recovery's read. ``what`` names the read in errors."""

    async def long_poll_lac(self, ledger_id: int, previous: int, wait: float, timeout: float) -> LacPoll:
        """A LAC long poll: the bookie answers once its LAC of the ledger passes ``previous``, or after ``wait``
        seconds; ``timeout`` bounds the whole call."""

    async def read_lac(self, ledger_id: int, timeout: float) -> LacRead:
        """READ_LAC: the explicit LAC and the last entry the bookie holds."""

    def read_range(
        self,
        ledger_id: int,
        first_entry_id: int,
        last_entry_id: int,
        timeout: float,
        stripe: Stripe | None = None,
        high_priority: bool = False,
    ) -> AsyncIterator[EntryChunk | RangeStopped]:
        """The entries ``first_entry_id..last_entry_id`` (those of ``stripe`` only, when given), in order, in
        chunks; when the bookie cannot give one, a :class:`RangeStopped` for it ends the iteration.
        ``high_priority``: recovery traffic, served before normal reads."""
        ...

    def list_entries(self, ledger_ids: list[int], timeout: float) -> AsyncIterator[LedgerEntries]:
        """GET_LIST_OF_ENTRIES_OF_LEDGER for each of ``ledger_ids``, answered in the order asked."""
        ...

    async def close(self) -> None:
        """End the connections: what is still in flight fails now (adds with ``CONNECTION_LOST``)."""

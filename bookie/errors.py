"""One exception hierarchy for the core.

Every error the core raises is a :class:`BKError`. Errors that a bookie reports with a BookKeeper status code are
registered in one table (:data:`STATUS_ERRORS`), so the wire status and the exception class never drift apart.
gRPC and kazoo errors are translated at their boundary (``bookie.client``, ``bookie.meta``) and never escape raw.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

STATUS_ERRORS: dict[int, type[BKError]] = {}


def _status(code: int) -> Callable[[type[BKError]], type[BKError]]:
    def register(cls: type[BKError]) -> type[BKError]:
        cls.status = code
        STATUS_ERRORS[code] = cls
        return cls

    return register


class BKError(Exception):
    """Base of every error raised by the core."""

    status: ClassVar[int | None] = None  # the BookKeeper status code, for errors a bookie reports


def reworded(exc: BKError, message: str) -> BKError:
    """An error of ``exc``'s class, so of its exit code, saying ``message`` (a plain BKError when the class takes
    arguments of its own)."""
    try:
        return type(exc)(message)
    except TypeError:
        return BKError(message)


@_status(404)
class BadRequest(BKError):
    """A request the bookie does not accept."""


@_status(402)
class NoSuchLedger(BKError):
    """The ledger does not exist (in the metadata store, or on a bookie); ``ledger_id`` names it when one does."""

    def __init__(self, message: str = "", *, ledger_id: int | None = None):
        super().__init__(message)
        self.ledger_id = ledger_id


@_status(403)
class NoSuchEntry(BKError):
    """The entry does not exist."""


@_status(501)
class BookieIOError(BKError):
    """A bookie failed to read or write its disks."""


class DiskFull(BookieIOError):
    """A write failed for want of space (ENOSPC, EDQUOT): the disk's condition, not the file's."""


@_status(502)
class Unauthorized(BKError):
    """Wrong password or master key."""


@_status(503)
class BadVersion(BKError):
    """A bookie refused a request for a version it does not speak."""


@_status(504)
class LedgerFenced(BKError):
    """The ledger was fenced by a recovery; its writer must stop."""


@_status(505)
class BookieReadOnly(BKError):
    """The bookie is read-only and refuses normal adds."""


@_status(506)
class TooManyRequests(BKError):
    """The bookie is overloaded."""


@_status(507)
class UnknownLedgerState(BKError):
    """The bookie cannot tell whether it holds the data."""


class LedgerClosed(BKError):
    """The ledger is closed; no more adds."""


class NotEnoughBookies(BKError):
    """Too few writable bookies for the requested ensemble."""


class OperationTimeout(BKError):
    """An operation did not complete in time."""


class ServiceUnavailable(BKError):
    """The metadata service or a bookie cannot be reached."""


class AdminServiceMissing(BKError):
    """A bookie publishes neither bkctl's admin service nor BookKeeper's HTTP admin API."""

    def __init__(self, bookie_id: str, operation: str):
        self.bookie_id, self.operation = bookie_id, operation
        super().__init__(
            f"bookie {bookie_id} publishes no admin service for {operation}: neither bkctl's (bkctlAdminPort) nor "
            "BookKeeper's HTTP admin API; enable that on the bookie (httpServerEnabled=true) or, if it is on, "
            "pass its port (--http-port)"
        )


class NotInHttpAdminApi(AdminServiceMissing):
    """An operation of bkctl's admin service asked of a bookie reached over BookKeeper's HTTP admin API, which has no
    such endpoint."""

    def __init__(self, bookie_id: str, operation: str, why: str):
        self.bookie_id, self.operation = bookie_id, operation
        BKError.__init__(
            self,
            f"bookie {bookie_id} is reached over BookKeeper's HTTP admin API, which has no {operation}: {why}",
        )


class AdminOperationMissing(AdminServiceMissing):
    """A bookie's admin service without the operation asked (gRPC UNIMPLEMENTED): a bookie running an older bkctl."""

    def __init__(self, bookie_id: str, operation: str):
        self.bookie_id, self.operation = bookie_id, operation
        BKError.__init__(
            self,
            f"bookie {bookie_id}'s admin service has no {operation}: the bookie runs an older bkctl; upgrade it",
        )


class MetricsAddressMissing(AdminServiceMissing):
    """A bookie publishes no address for its /metrics (a Java bookie without its HTTP admin server)."""

    def __init__(self, bookie_id: str):
        self.bookie_id, self.operation = bookie_id, "metrics"
        BKError.__init__(
            self,
            f"bookie {bookie_id} publishes no address for its metrics: pass the port it serves /metrics on "
            "(--metrics-port: prometheusStatsHttpPort, 8000 by default in BookKeeper) or its HTTP admin API's "
            "(--http-port)",
        )


class NotFound(BKError):
    """A named thing (bookie, cookie, marker, sandbox) does not exist."""


class AutoRecoveryDisabled(BKError):
    """An operation of the auditor asked while autorecovery is disabled."""


class InvalidArgument(BKError):
    """Bad input: a malformed service URI, configuration file or parameter."""


class EntryTooLarge(InvalidArgument):
    """An entry larger than the configured limit."""


class CorruptEntry(BKError):
    """An entry whose digest or header does not match; names the ledger, entry and bookie."""


class CorruptData(BKError):
    """A stored structure (file record, znode) that cannot be parsed; the message names where. ``ledger_id``: the
    ledger, when the structure is a ledger's metadata (the ledger manager sets it)."""

    def __init__(self, message: str = "", *, ledger_id: int | None = None):
        super().__init__(message)
        self.ledger_id = ledger_id


class MalformedFrame(BKError):
    """A bookie-protocol frame that cannot be cut or decoded; the message names what is wrong. The connection that
    carried it is unusable (its framing is lost), as BookKeeper closes it."""


class Unsafe(BKError):
    """An action refused because it would be unsafe now: a bookie still runs on the directories or is still
    registered, the cluster named is not the one found. The message says what to do first."""


class Busy(BKError):
    """Someone else holds what the operation needs alone (the cluster's data-movement lock); the message names the
    holder."""


class MetadataVersionConflict(BKError):
    """A compare-and-set on metadata lost against a concurrent update; re-read and retry."""


class LedgerExists(BKError):
    """A ledger with this id already exists."""


class UnsupportedLayout(BKError):
    """The cluster uses a metadata layout or format this tool does not read."""


class ClusterNotInitialised(BKError):
    """The metadata service has no BookKeeper cluster at this root."""


class ClusterAlreadyInitialised(BKError):
    """``cluster init`` on a cluster that already exists."""


def error_for_status(status: int, message: str) -> BKError:
    """The exception for a BookKeeper status code (``BKError`` for an unregistered one)."""
    return STATUS_ERRORS.get(status, BKError)(message)

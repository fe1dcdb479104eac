"""Typed admin operations on one bookie: read-only mode, garbage collection, compaction, storage usage.

:func:`admin_client` picks the transport from the bookie's registration: our gRPC admin service where it publishes
the "bkctl-admin" endpoint (ours), else BookKeeper's HTTP admin API where it publishes "httpserver" (a Java bookie
with httpServerEnabled=true, or ours without the gRPC port; bookie/client/http_admin_client.py), else
:class:`AdminServiceMissing`, which says what to turn on. Both implement :class:`BookieAdmin`, whose answers
(bookie/client/bookie_admin.py) are importable from here too.
"""

from __future__ import annotations

from typing import Any

from bookie._proto import bookie_admin_pb2 as pb
from bookie.client.bookie_admin import (
    BookieAdmin,
    BookieState,
    CompactionPlan,
    EntryLogUsage,
    GcRun,
    GcStatus,
    GcTrigger,
    LedgerDirState,
    StalledLog,
)
from bookie.client.channel import BookieChannel
from bookie.client.http_admin_client import HttpBookieAdminClient
from bookie.codec.storage_view import StorageView, from_message
from bookie.errors import AdminServiceMissing, InvalidArgument, NotFound, Unauthorized, Unsafe
from bookie.meta.registration import RegisteredBookie
from bookie.tls import TlsSettings

__all__ = [  # the answers too: callers import them from here
    "BookieAdmin",
    "BookieAdminClient",
    "BookieState",
    "CompactionPlan",
    "EntryLogUsage",
    "GcRun",
    "GcStatus",
    "GcTrigger",
    "LedgerDirState",
    "StalledLog",
    "admin_client",
]


class BookieAdminClient:
    """One bookie's admin service (a context manager). Errors are the core's: an unreachable bookie is
    ServiceUnavailable, a bookie without the service AdminServiceMissing."""

    def __init__(
        self, bookie: RegisteredBookie, operation: str, timeout: float = 10.0, tls: TlsSettings | None = None
    ) -> None:
        address = bookie.admin_address()
        if address is None:
            raise AdminServiceMissing(bookie.bookie_id, operation)
        if bookie.tls and tls is None:
            raise Unauthorized(
                f"bookie {bookie.bookie_id} serves its admin service over TLS only: connect with TLS (bkctl --tls-*)"
            )
        self.bookie_id = bookie.bookie_id
        self._channel = BookieChannel(bookie.bookie_id, address, timeout, tls)

    def __enter__(self) -> BookieAdminClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._channel.close()

    def _call(self, method: str, request: Any, what: str) -> Any:  # a protobuf message, read by _Typed.of
        return self._channel.call(getattr(self._channel.admin, method), request, what)

    def state(self) -> BookieState:
        return BookieState.of(self._call("GetBookieState", pb.BookieStateRequest(), "bookie state"))

    def set_read_only(self, read_only: bool) -> BookieState:
        return BookieState.of(self._call("SetReadOnly", pb.SetReadOnlyRequest(readOnly=read_only), "set read-only"))

    def trigger_gc(self, major: bool = False, minor: bool = False) -> GcTrigger:
        return GcTrigger.of(self._call("TriggerGc", pb.TriggerGcRequest(forceMajor=major, forceMinor=minor), "gc"))

    def gc_status(self) -> GcStatus:
        return GcStatus.of(self._call("GetGcStatus", pb.GcStatusRequest(), "gc status"))

    def set_compaction_suspended(self, suspended: bool, major: bool = False, minor: bool = False) -> GcStatus:
        request = pb.SetCompactionSuspendedRequest(suspended=suspended, major=major, minor=minor)
        return GcStatus.of(self._call("SetCompactionSuspended", request, "compaction"))

    def storage_usage(self, ledger_id: int | None = None) -> StorageView:
        """What the bookie's disks hold (and, with ``ledger_id``, where that ledger's entries are)."""
        request = pb.StorageUsageRequest() if ledger_id is None else pb.StorageUsageRequest(ledgerId=ledger_id)
        return from_message(self._call("GetStorageUsage", request, "storage usage"))

    def compact_logs(
        self, log_ids: list[int], ledger_ids: list[int], dry_run: bool = False, ignore_suspension: bool = False
    ) -> CompactionPlan:
        """The bookie's refusal is raised: NotFound, InvalidArgument (the current log), Unsafe (suspended)."""
        request = pb.CompactLogsRequest(
            logIds=log_ids, ledgerIds=ledger_ids, dryRun=dry_run, ignoreSuspension=ignore_suspension
        )
        response = self._call("CompactLogs", request, "compaction")
        if response.HasField("refusal"):
            refused = {
                pb.CompactLogsResponse.NOT_FOUND: NotFound,
                pb.CompactLogsResponse.ACTIVE_LOG: InvalidArgument,
            }.get(response.refusal, Unsafe)
            raise refused(f"bookie {self.bookie_id}: {response.error}")
        logs = tuple(EntryLogUsage.of(u) for u in response.logs)
        return CompactionPlan(logs, response.runId if response.HasField("runId") else None)


def admin_client(
    bookie: RegisteredBookie, operation: str, timeout: float = 10.0, tls: TlsSettings | None = None
) -> BookieAdmin:
    """The bookie's admin client over what it publishes: our gRPC admin service, else BookKeeper's HTTP admin API
    (:class:`AdminServiceMissing` when neither); over TLS with ``tls``, a client's (HTTPS for the HTTP API)."""
    if bookie.admin_address() is not None:
        return BookieAdminClient(bookie, operation, timeout, tls)
    address = bookie.http_address()
    if address is None:
        raise AdminServiceMissing(bookie.bookie_id, operation)
    return HttpBookieAdminClient(bookie.bookie_id, address, timeout, tls)

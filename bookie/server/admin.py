"""The BookieAdmin gRPC service: operator controls — read-only mode, forced garbage collection and compaction,
their status, suspending compaction (BookKeeper: bookie/GarbageCollectorThread.java) — and what its disks hold."""

from __future__ import annotations

import asyncio
from typing import Any

from bookie._proto import bookie_admin_pb2 as pb
from bookie._proto import bookie_admin_pb2_grpc as pb_grpc
from bookie.codec.storage_view import StorageView, to_message
from bookie.errors import InvalidArgument, NotFound, Unsafe
from bookie.storage.gc import MAJOR, MINOR, GcRun
from bookie.storage.usage import ledger_locations_of_bookie, view_of_bookie


def _run_result(run: GcRun) -> pb.GcRunResult:
    return pb.GcRunResult(
        runId=run.run_id,
        forced=run.forced,
        kind=run.kind,
        ledgersDeleted=run.ledgers_deleted,
        logsDeleted=run.logs_deleted,
        logsCompacted=run.logs_compacted,
        entriesCopied=run.entries_copied,
        bytesCopied=run.bytes_copied,
        bytesReclaimed=run.bytes_reclaimed,
        startTime=int(run.started * 1000),
        durationMs=int(run.seconds * 1000),
        error=run.error,
    )


class BookieAdminServicer(pb_grpc.BookieAdminServicer):  # type: ignore[misc]  # generated code is not typed
    def __init__(self, bookie: Any) -> None:
        self.bookie = bookie

    def _state(self) -> pb.BookieStateResponse:
        return pb.BookieStateResponse(
            readOnly=self.bookie.read_only,
            readOnlyByOperator=self.bookie.read_only_by_operator,
            shuttingDown=self.bookie.shutting_down,
        )

    async def GetBookieState(self, request: pb.BookieStateRequest, context: Any) -> pb.BookieStateResponse:
        return self._state()

    async def SetReadOnly(self, request: pb.SetReadOnlyRequest, context: Any) -> pb.BookieStateResponse:
        await self.bookie.set_read_only_by_operator(request.readOnly)
        return self._state()

    # ---- garbage collection ----
    async def TriggerGc(self, request: pb.TriggerGcRequest, context: Any) -> pb.TriggerGcResponse:
        """Runs even when the bookie is read-only for full disks: that is when operators need the space back."""
        started, run_id = self.bookie.collectors.trigger(request.forceMajor, request.forceMinor)
        return pb.TriggerGcResponse(started=started, runId=run_id)

    async def _gc_status(self) -> pb.GcStatusResponse:
        gc = self.bookie.collectors  # DbLedgerStorage's, one per directory: merged
        state, config = gc.state, gc.config
        usage = await asyncio.to_thread(gc.usage)
        response = pb.GcStatusResponse(
            isInForce=state.running and state.forced,
            running=state.running,
            majorCompacting=state.compacting == MAJOR,
            minorCompacting=state.compacting == MINOR,
            lastMajorCompactionTime=int(state.last_compaction[MAJOR] * 1000),
            lastMinorCompactionTime=int(state.last_compaction[MINOR] * 1000),
            majorCompactionCounter=state.counters[MAJOR],
            minorCompactionCounter=state.counters[MINOR],
            majorSuspended=MAJOR in state.suspended,
            minorSuspended=MINOR in state.suspended,
            majorEnabled=config.enabled(MAJOR),
            minorEnabled=config.enabled(MINOR),
            bytesReclaimed=state.bytes_reclaimed,
            logsCompacted=state.logs_compacted,
            runs=state.runs,
            entryLogs=[
                pb.EntryLogUsage(
                    logId=m.log_id,
                    totalSize=m.total_size,
                    remainingSize=m.remaining_size,
                    directory=str(directory or ""),
                )
                for m, directory in usage
            ],
            ledgerDirs=[
                pb.LedgerDirState(path=str(d), usage=dirs.usage(d), writable=not dirs.is_full(d), index=index)
                for dirs, index in self._dir_managers()
                for d in dirs.all
            ],
            stalledLogs=[
                pb.StalledLog(logId=log_id, error=why, since=int(since * 1000), directory=str(directory or ""))
                for log_id, why, since, directory in gc.stalled()
            ],
        )
        if state.last_run is not None:
            response.lastRun.CopyFrom(_run_result(state.last_run))
        return response

    def _dir_managers(self) -> list[tuple[Any, bool]]:
        bookie = self.bookie
        apart = bookie.index_dirs is not bookie.ledger_dirs
        return [(bookie.ledger_dirs, False), *([(bookie.index_dirs, True)] if apart else [])]

    async def GetGcStatus(self, request: pb.GcStatusRequest, context: Any) -> pb.GcStatusResponse:
        return await self._gc_status()

    async def SetCompactionSuspended(
        self, request: pb.SetCompactionSuspendedRequest, context: Any
    ) -> pb.GcStatusResponse:
        kinds = [kind for kind, asked in ((MAJOR, request.major), (MINOR, request.minor)) if asked]
        self.bookie.collectors.suspend(kinds or [MAJOR, MINOR], request.suspended)
        return await self._gc_status()

    # ---- storage usage ----
    async def GetStorageUsage(self, request: pb.StorageUsageRequest, context: Any) -> pb.StorageUsageResponse:
        """Read on a thread of its own: ledgers maps, unsealed logs and indexes are on disk, and the event loop
        serves the bookie's clients meanwhile."""
        ledger_id = request.ledgerId if request.HasField("ledgerId") else None
        return to_message(await asyncio.to_thread(self._storage_usage, ledger_id))

    def _storage_usage(self, ledger_id: int | None) -> StorageView:
        view = view_of_bookie(self.bookie)
        if ledger_id is not None:
            view.ledger_ranges = ledger_locations_of_bookie(self.bookie, ledger_id)
        return view

    # ---- targeted compaction ----
    REFUSALS = (
        (NotFound, pb.CompactLogsResponse.NOT_FOUND),
        (InvalidArgument, pb.CompactLogsResponse.ACTIVE_LOG),
        (Unsafe, pb.CompactLogsResponse.SUSPENDED),
    )

    async def CompactLogs(self, request: pb.CompactLogsRequest, context: Any) -> pb.CompactLogsResponse:
        gc = self.bookie.collectors
        try:
            chosen = await asyncio.to_thread(gc.choose, request.logIds, request.ledgerIds)
            run_id = gc.compact(chosen, request.ignoreSuspension, request.dryRun)
        except (NotFound, InvalidArgument, Unsafe) as exc:
            refusal = next(code for cls, code in self.REFUSALS if isinstance(exc, cls))
            return pb.CompactLogsResponse(refusal=refusal, error=str(exc))
        logs = [
            pb.EntryLogUsage(
                logId=meta.log_id,
                totalSize=meta.total_size,
                remainingSize=meta.remaining_size,
                directory=str(collector.storage.entry_logger.directory_of(meta.log_id) or ""),
            )
            for collector, meta in chosen
        ]
        return pb.CompactLogsResponse(logs=logs, runId=run_id)

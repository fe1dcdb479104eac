"""The restore's writing phases: the claim in the driver, the entries in Spark's tasks, and the clean-up of a run that
failed.

1. **Claim** (driver): the id generator is moved past every kept id, --new-ids' ids are generated, then every
   ledger's znode is created (:meth:`LedgerReplay.claim`, ``CLAIMS_IN_FLIGHT`` at once): OPEN, marked
   ``bkctl.restore=<runId>``, on a fresh ensemble of the target, with a cToken of this run. A ledger an earlier run
   of the same backup ledger left marked is taken over: its metadata rebuilt from the backup's, with this run's
   marker, ensemble and cToken, by compare-and-set. Ledgers without entries are closed at once. An interrupted
   claim waits for the znode creates under way, so that the clean-up sees them.
2. **Write** (Spark): each task reads its data files in order (pyarrow) and, per ledger, resumes the claimed ledger,
   writes its entries with their stored LAC and length fields, reads them back from every replica against the
   backup's payload checksum, and closes it (the commit: the marker goes). ``LEDGERS_IN_FLIGHT`` ledgers at once per
   task; about two tasks per core of the job (:func:`~admin.restore.plan.task_bytes`). A retried task skips the
   ledgers an earlier attempt closed.
3. **Failure**: every ledger of the run is deleted — those still marked with its run id, and those it closed (its
   cToken) — found by reading their znodes, not from memory of what succeeded, and deleted at the version read, so
   a ledger another run took over is left alone; with ``keep_partial`` they stay, and a rerun of the same restore
   skips the closed ones and writes the marked ones again.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any, NoReturn

from admin.export.job import _spark_errors
from admin.export.session import TaskProgress
from admin.restore.plan import MARKER_KEY, RestoreLedger, RestorePlan, TaskSpec, redo_of, task_bytes, tasks
from bookie.errors import BKError, MetadataVersionConflict, NoSuchLedger, reworded
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState
from bookie.progress import Progress

CLAIMS_IN_FLIGHT = 32  # znode creates at once in the driver
LEDGERS_IN_FLIGHT = 8  # ledgers a task writes at once: small ledgers cost round trips more than bytes
QUEUED_BATCHES = 4  # batches of rows read ahead for one ledger
BATCH_ROWS = 4096
COLUMNS = ["ledgerId", "entryId", "payload", "lastAddConfirmed", "ledgerLength"]


@dataclass(frozen=True)
class LedgerJob:
    """What a task needs to write one ledger: picklable, the password never in its repr."""

    source_id: int
    target_id: int
    password: bytes = field(repr=False)
    last_entry_id: int
    length: int
    payload_xor: int | None


@dataclass
class RestoreReport:
    run_id: str
    ledgers: int = 0  # written by this run
    entries: int = 0
    bytes: int = 0
    seconds: float = 0.0  # the Spark job's: writes, read-back checks and closes
    id_map: dict[int, int] = field(default_factory=dict)
    created: list[int] = field(default_factory=list)  # target ids this run claimed or took over
    tokens: dict[int, int] = field(default_factory=dict)  # target id -> the cToken this run gave it
    removed: list[int] = field(default_factory=list)
    restored_already: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    pulsar_znodes: int | None = None  # Pulsar's znodes created (--with-pulsar-metadata), else None

    def doc(self) -> dict[str, Any]:
        return {
            "runId": self.run_id,
            "ledgers": self.ledgers,
            "entries": self.entries,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 3),
            "mbPerSec": round(self.bytes / self.seconds / 1e6, 1) if self.seconds else 0.0,
            "idMap": {str(k): v for k, v in sorted(self.id_map.items())},
            "created": sorted(self.created),
            "removed": sorted(self.removed),
            "restoredAlready": sorted(self.restored_already),
            "problems": self.problems,
            "pulsarZnodes": self.pulsar_znodes,
        }


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


# ---- phase 1: claim (driver) ----


def claim(bk: Any, plan: RestorePlan, report: RestoreReport, progress: Progress) -> list[RestoreLedger]:
    """Move the id generator, give --new-ids' ledgers their ids (``report.id_map``), claim every ledger to write
    (``report.created`` grows as they are claimed, so a failure part-way knows them). Returns the plan's ledgers,
    each with its id."""
    from bookie.meta.idgen import advance_past, generate_ledger_id
    from bookie.meta.ledger_manager import LedgerManager

    store = bk.core.store
    kept = [lg.target_id for lg in plan.ledgers if lg.target_id is not None]
    if kept:
        advance_past(store, max(kept), long_ids=LedgerManager(store).manager != "legacyhierarchical", progress=progress)
    ledgers = [
        lg if lg.target_id is not None else replace(lg, target_id=generate_ledger_id(store)) for lg in plan.ledgers
    ]
    report.id_map = {lg.source_id: lg.ledger_id for lg in ledgers if lg.ledger_id != lg.source_id}
    report.restored_already = [lg.ledger_id for lg in ledgers if lg.action == "skip"]
    writing = [lg for lg in ledgers if lg.action != "skip"]
    progress.phase("claiming ledgers", len(writing), "ledgers")
    creates: list[asyncio.Future] = []
    try:
        bk.run(_claim_all(bk.core, writing, report, progress, creates))
    except BaseException:
        bk.run(_ended(creates))  # interrupted: the znode creates under way in their threads end first
        raise
    return ledgers


async def _claim_all(
    core: Any, ledgers: list[RestoreLedger], report: RestoreReport, progress: Progress, creates: list[asyncio.Future]
) -> None:
    from bookie.client.placement import choose_ensemble
    from bookie.client.replay import LedgerReplay

    marker = (MARKER_KEY, report.run_id.encode())
    bookies = await core.writable_bookies()
    slots = asyncio.Semaphore(CLAIMS_IN_FLIGHT)

    def create(work: Any) -> Any:
        """``work`` run on even if the claim is cancelled: its znode write cannot be taken back."""
        creates.append(future := asyncio.ensure_future(work))
        return asyncio.shield(future)

    async def one(ledger: RestoreLedger) -> None:
        async with slots:
            ensemble = choose_ensemble(bookies, ledger.source.metadata.ensemble_size)
            report.created.append(ledger.ledger_id)  # before its create: the clean-up reads what came of it
            if ledger.action == "redo":
                token = await create(asyncio.to_thread(_take_over, core, ledger, marker, ensemble))
                replay = await LedgerReplay.resume(core, ledger.ledger_id, ledger.password, marker)
            else:
                replay = await create(
                    LedgerReplay.claim(
                        core, ledger.ledger_id, ledger.source.metadata, ledger.password, marker, ensemble
                    )
                )
                token = replay.metadata.c_token
            report.tokens[ledger.ledger_id] = token
            if ledger.entries == 0:
                await replay.close(-1, 0)
            progress.advance(1)

    results = await asyncio.gather(*(one(ledger) for ledger in ledgers), return_exceptions=True)
    failed = next((r for r in results if isinstance(r, BaseException)), None)
    if failed is not None:  # after every claim in flight ended: report.created is then complete
        raise failed


async def _ended(futures: list[asyncio.Future]) -> None:
    await asyncio.gather(*futures, return_exceptions=True)


def _take_over(core: Any, ledger: RestoreLedger, marker: tuple[str, bytes], ensemble: list[str]) -> int:
    """A ledger an earlier run claimed from the same backup ledger and did not close, claimed again: its metadata
    rebuilt from the backup's as :meth:`LedgerReplay.claim` writes it, with this run's marker, a fresh ensemble (the
    earlier one may hold a bookie that is gone) and a fresh cToken, by compare-and-set at the version checked; its
    entries are written again from the first. Returns the cToken."""
    from bookie.codec.digest import DigestType
    from bookie.meta.ledger_metadata import Segment

    md, version = core.ledgers.read(ledger.ledger_id)
    if not redo_of(md, ledger.source, ledger.password):
        raise MetadataVersionConflict(
            f"ledger {ledger.ledger_id}: changed since the restore was planned (another run closed or rewrote it): "
            "not taken over"
        )
    source = ledger.source.metadata
    claimed = LedgerMetadata(
        ensemble_size=source.ensemble_size,
        write_quorum_size=source.write_quorum_size,
        ack_quorum_size=source.ack_quorum_size,
        segments=(Segment(0, tuple(ensemble)),),
        digest_type=DigestType(source.digest_type or DigestType.CRC32),
        password=ledger.password,
        ctime=source.ctime,
        custom_metadata={**source.custom_metadata, marker[0]: marker[1]},
        c_token=int.from_bytes(os.urandom(7), "big"),
    )
    core.ledgers.write(ledger.ledger_id, claimed, version)
    return claimed.c_token


# ---- phase 2: write (Spark tasks) ----


def _batches(path: str, files: tuple[str, ...]) -> Iterator[Any]:
    import pyarrow.parquet as pq

    from admin.export.part_files import filesystem

    fs, root = filesystem(path)
    for name in files:
        with fs.open_input_file(f"{root}/{name}") as f:
            yield from pq.ParquetFile(f).iter_batches(batch_size=BATCH_ROWS, columns=COLUMNS)


def _runs(ledger_ids: list[int]) -> Iterator[tuple[int, int, int]]:
    """``(ledgerId, start, end)`` of each run of equal ids."""
    start = 0
    for i in range(1, len(ledger_ids) + 1):
        if i == len(ledger_ids) or ledger_ids[i] != ledger_ids[start]:
            yield ledger_ids[start], start, i
            start = i


class _Feed:
    """One ledger's rows, from the task's reader to the ledger's writer. A writer that stops (failed, or found the
    ledger closed already) takes no more: the reader's later puts are dropped."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[list[Any] | None] = asyncio.Queue(QUEUED_BATCHES)
        self.stopped = False

    async def put(self, chunk: list[Any] | None) -> None:
        if not self.stopped:
            await self.queue.put(chunk)

    async def chunks(self) -> Any:
        while (chunk := await self.queue.get()) is not None:
            yield chunk

    def stop(self) -> None:
        self.stopped = True
        while not self.queue.empty():  # a reader waiting to put goes on
            self.queue.get_nowait()


async def _replay(core: Any, job: LedgerJob, marker: tuple[str, bytes], feed: _Feed) -> dict[str, int]:
    from bookie.client.replay import LedgerReplay

    try:
        md, _ = await asyncio.to_thread(core.ledgers.read, job.target_id)
        if md.state == LedgerState.CLOSED and MARKER_KEY not in md.custom_metadata:  # a retried task's ledger
            return {"ledger": job.target_id, "entries": 0, "bytes": 0}
        replay = await LedgerReplay.resume(core, job.target_id, job.password, marker)
        async for chunk in feed.chunks():
            await replay.add(chunk)
        await replay.verify(job.payload_xor, checksum_ledger_id=job.source_id)
        await replay.close(job.last_entry_id, job.length)
        return {"ledger": job.target_id, "entries": job.last_entry_id + 1, "bytes": job.length}
    finally:
        feed.stop()


async def restore_files(core: Any, path: str, run_id: str, task: TaskSpec, jobs: dict[int, LedgerJob]) -> list[dict]:
    """Write the ledgers of one task from its files: rows in order, each ledger's handed to its writer."""
    marker = (MARKER_KEY, run_id.encode())
    slots = asyncio.Semaphore(LEDGERS_IN_FLIGHT)
    running: list[asyncio.Task] = []
    batches = _batches(path, task.files)
    current: int | None = None
    feed: _Feed | None = None

    async def write(job: LedgerJob, feed: _Feed) -> dict[str, int]:
        try:
            return await _replay(core, job, marker, feed)
        finally:
            slots.release()

    def failed() -> None:
        for t in running:
            if t.done() and not t.cancelled() and (exc := t.exception()) is not None:
                raise exc

    try:
        while (batch := await asyncio.to_thread(next, batches, None)) is not None:
            ledger_ids = batch.column(0).to_pylist()
            columns = [batch.column(i).to_pylist() for i in range(1, 5)]  # entryId, payload, LAC, length
            for ledger_id, start, end in _runs(ledger_ids):
                if ledger_id != current:
                    if feed is not None:
                        await feed.put(None)
                    current, feed = ledger_id, None
                    job = jobs.get(ledger_id)
                    if job is not None:
                        await slots.acquire()
                        failed()
                        feed = _Feed()
                        running.append(asyncio.create_task(write(job, feed)))
                if feed is not None:
                    failed()
                    await feed.put(_replay_entries(columns, start, end))
        if feed is not None:
            await feed.put(None)
        return list(await asyncio.gather(*running))
    except BaseException:
        for t in running:
            t.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        raise


def _replay_entries(columns: list[list[Any]], start: int, end: int) -> list[Any]:
    """Rows ``start..end`` as :class:`~bookie.client.replay.ReplayEntry` tuples ``(entryId, LAC, length,
    payload)``: made by ``zip``, not one object each."""
    entry_ids, payloads, lacs, lengths = (column[start:end] for column in columns)
    return list(zip(entry_ids, lacs, lengths, payloads, strict=True))


def ledger_jobs(spec: TaskSpec, ledgers: list[RestoreLedger]) -> dict[int, LedgerJob]:
    """The task's ledgers as its writers take them, by source id."""
    by_source = {lg.source_id: lg for lg in ledgers}
    jobs = {}
    for source_id in spec.ledgers:
        lg, src = by_source[source_id], by_source[source_id].source
        jobs[source_id] = LedgerJob(
            source_id, lg.ledger_id, lg.password, src.last_entry_id, src.length, src.payload_xor
        )
    return jobs


def _task(service_uri: str, path: str, run_id: str, item: tuple[TaskSpec, dict[int, LedgerJob]]) -> list[dict]:
    """In a Spark task: the client of this worker (kept for its later tasks), the task's ledgers written."""
    from admin.export.source import task_client

    task, jobs = item
    bk = task_client(service_uri)
    return bk.run(restore_files(bk.core, path, run_id, task, jobs))


def write(
    spark: Any,
    service_uri: str,
    plan: RestorePlan,
    ledgers: list[RestoreLedger],
    report: RestoreReport,
    progress: Progress,
) -> None:
    """Run the Spark job that writes the claimed ledgers; ``report`` gets the counts and the job's seconds."""
    written = [lg for lg in ledgers if lg.action != "skip"]
    report.ledgers = len(written)
    report.entries = sum(lg.entries for lg in written)
    report.bytes = sum(lg.bytes for lg in written)
    progress.phase("restoring", report.entries, "entries", report.bytes)
    sc = spark.sparkContext
    specs = tasks(plan.manifest, ledgers, task_bytes(report.bytes, sc.defaultParallelism))
    items = [(spec, ledger_jobs(spec, ledgers)) for spec in specs]
    if not items:
        return
    shown = [0, 0]

    def tasks_done(done: int, _total: int) -> None:  # counted as if tasks ended in order: the first ``done``
        entries, size = sum(t.entries for t in specs[:done]), sum(t.bytes for t in specs[:done])
        progress.advance(entries - shown[0], size - shown[1])
        shown[:] = entries, size

    group = f"bkctl-restore-{report.run_id}"
    sc.setJobGroup(group, f"restore {len(written)} ledgers from {plan.path}")
    path, run_id = plan.path, report.run_id
    with _spark_errors():
        started = time.perf_counter()
        with TaskProgress(spark, group, tasks_done):
            done = sc.parallelize(items, len(items)).map(lambda item: _task(service_uri, path, run_id, item)).collect()
        report.seconds = time.perf_counter() - started
    check_written(ledgers, [ledger for task in done for ledger in task])


def check_written(ledgers: list[RestoreLedger], done: list[dict]) -> None:
    """Every ledger with entries to write is among those the tasks say they wrote (or found closed): a BKError
    naming how many are not, which fails the restore."""
    wanted = {lg.ledger_id for lg in ledgers if lg.action != "skip" and lg.entries > 0}
    missing = sorted(wanted - {result["ledger"] for result in done})
    if missing:
        raise BKError(
            f"the restore's tasks did not write {len(missing)} of its {len(wanted)} ledgers (ledger {missing[0]})"
        )


# ---- on failure ----


def remove_run(bk: Any, report: RestoreReport) -> list[int]:
    """Delete the run's ledgers: those of ``report.created`` still marked with its run id, or closed by it (CLOSED
    with the cToken it gave them), each at the version just read, so that a ledger another run took over (its
    cToken) or changes meanwhile is left alone. An id whose claim did not finish and that holds no ledger of the
    run (its create never happened, or the id was taken) leaves ``report.created``."""
    ledgers, marker = bk.core.ledgers, report.run_id.encode()
    removed: list[int] = []
    unmade: set[int] = set()
    for ledger_id in sorted(report.created):
        token = report.tokens.get(ledger_id)
        while True:
            try:
                md, version = ledgers.read(ledger_id)
                if md.custom_metadata.get(MARKER_KEY) == marker or (
                    md.state == LedgerState.CLOSED and MARKER_KEY not in md.custom_metadata and md.c_token == token
                ):
                    ledgers.delete(ledger_id, version)
                    removed.append(ledger_id)
                elif token is None:
                    unmade.add(ledger_id)
            except NoSuchLedger:
                if token is None:
                    unmade.add(ledger_id)
            except MetadataVersionConflict:  # changed between the read and the delete: judged again
                continue
            break
    report.created = [ledger_id for ledger_id in report.created if ledger_id not in unmade]
    return removed


class RestoreFailed(Exception):
    """A restore that stopped after it began to write: its report (what it created, what it removed) and cause."""

    def __init__(self, message: str, report: RestoreReport, cause: BaseException):
        super().__init__(message)
        self.report, self.cause = report, cause


def run_restore(
    bk: Any, spark: Any, service_uri: str, plan: RestorePlan, keep_partial: bool, progress: Progress
) -> RestoreReport:
    """Phases 1 and 2 (claim, write); on any failure (Ctrl-C and SIGTERM too) the run's ledgers are removed
    unless ``keep_partial``, and :class:`RestoreFailed` says so."""
    report = RestoreReport(new_run_id())
    try:
        ledgers = claim(bk, plan, report, progress)
        write(spark, service_uri, plan, ledgers, report, progress)
    except BaseException as exc:
        if not keep_partial:
            report.removed = remove_run(bk, report)
        report.problems.append(str(exc) or type(exc).__name__)
        raise RestoreFailed(failure_message(exc, report, keep_partial), report, exc) from exc
    return report


def failure_message(exc: BaseException, report: RestoreReport, keep_partial: bool) -> str:
    what = str(exc) or type(exc).__name__
    if keep_partial:
        return (
            f"restore failed: {what}; created {len(report.created)} ledgers, kept them (--keep-partial): run the same "
            "restore again to finish"
        )
    removed = "removed them" if len(report.removed) == len(report.created) else f"removed {len(report.removed)}"
    return f"restore failed: {what}; created {len(report.created)} ledgers, {removed}"


def raise_failed(exc: BaseException, message: str) -> NoReturn:
    """``exc`` again, with ``message``: the same class, so the exit code is the cause's."""
    if isinstance(exc, BKError):
        raise reworded(exc, message) from None
    raise exc

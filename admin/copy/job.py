"""The copy: ledgers claimed in the target by the driver, then replayed by Spark's Python tasks.

1. The driver moves the target's id generator past the selected ids, deletes the unfinished copies a run before
   left (marked, OPEN) and claims every ledger to copy in the target (:meth:`LedgerReplay.claim`: OPEN, the
   source's sizes, digest type, password, ctime and custom metadata, marked ``bkctl.copy=<runId>``). A claim that
   finds its id taken undoes the claims and stops the copy.
2. Each task takes whole ledgers: it reads each one's entries from the source's bookies (striped range reads, as
   the export), with their stored LAC and length fields, writes them to every replica of the target ledger, reads
   them back against the payload checksum of what it read, and closes the ledger at the source's last entry (an
   open one at the LAC planned) and length: the commit.
3. A failure (a task's, or an interruption) deletes the ledgers of this run still marked; ledgers whose task
   committed them stay, finished, and a rerun (or a retried task) skips them.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from admin.copy.plan import COPIED, MARKER_KEY, CopyPlan, target_state
from admin.export.job import _spark_errors
from admin.export.plan import Partition, PlannedLedger
from admin.export.session import TaskProgress
from admin.export.source import SMALL_RANGE_BYTES, task_client
from bookie import errors
from bookie.client.bookkeeper import ReadHandle
from bookie.client.reader import LedgerReader
from bookie.client.replay import LedgerReplay, ReplayEntry, payload_xor
from bookie.progress import NO_PROGRESS, Progress

CLAIMS_AT_ONCE = 32  # znode creates and deletes in flight from the driver
WRITE_BATCH_BYTES = 4 << 20  # payload handed to the replay at a time; the next batch is read meanwhile
SMALL_AT_ONCE = 4  # small ledgers a task copies at once (their round trips cost more than their bytes)


@dataclass
class CopyReport:
    run_id: str
    ledgers: int  # selected (open ones left out not counted)
    copied: int
    skipped: int
    left_open: list[int]
    entries: int
    bytes: int
    seconds: float
    problems: list[str] = field(default_factory=list)  # replicas of the source read from another: not fatal

    def doc(self) -> dict:
        return {
            "runId": self.run_id,
            "ledgers": self.ledgers,
            "copied": self.copied,
            "skipped": self.skipped,
            "leftOpen": self.left_open,
            "entries": self.entries,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 3),
            "mbPerSec": round(self.bytes / self.seconds / 1e6, 1) if self.seconds else 0.0,
            "problems": self.problems,
        }


def _marker(run_id: str) -> tuple[str, bytes]:
    return MARKER_KEY, run_id.encode()


# ---- the driver: claim, and undo ----
async def _claim_all(core, plan: CopyPlan, run_id: str) -> list[BaseException]:
    """Delete the unfinished copies, claim every ledger to copy: the errors."""
    gate = asyncio.Semaphore(CLAIMS_AT_ONCE)

    async def one(ledger: PlannedLedger) -> None:
        lid = ledger.ledger_id
        async with gate:
            if lid in plan.unfinished:
                earlier = await LedgerReplay.resume(core, lid, ledger.password, (MARKER_KEY, plan.unfinished[lid]))
                await earlier.abandon()
            await LedgerReplay.claim(core, lid, ledger.metadata, ledger.password, _marker(run_id))

    results = await asyncio.gather(*(one(ledger) for ledger in plan.to_copy), return_exceptions=True)
    return [r for r in results if isinstance(r, BaseException)]


async def _abandon_run(core, passwords: dict[int, bytes], run_id: str) -> tuple[int, list[str]]:
    """Delete this run's ledgers that are still marked: ``(how many, problems)``; committed ones stay."""
    gate = asyncio.Semaphore(CLAIMS_AT_ONCE)
    removed, problems = 0, []

    async def one(lid: int) -> None:
        nonlocal removed
        async with gate:
            try:
                replay = await LedgerReplay.resume(core, lid, passwords[lid], _marker(run_id))
                await replay.abandon()
                removed += 1
            except (errors.InvalidArgument, errors.NoSuchLedger):
                pass  # committed by its task, or never claimed
            except errors.BKError as exc:
                problems.append(f"ledger {lid}: not removed: {exc}")

    await asyncio.gather(*(one(lid) for lid in passwords))
    return removed, problems


def claim(target_bk, plan: CopyPlan, run_id: str, progress: Progress = NO_PROGRESS) -> None:
    """Move the target's id generator past the copied ids (else each later create there would walk through them,
    one LedgerExists at a time; a ``progress`` phase), then claim the plan's ledgers in the target; the first failure
    is raised (a taken id: Unsafe) once every claim has ended: :func:`abandon` then removes those made."""
    from bookie.meta.idgen import advance_past
    from bookie.meta.ledger_manager import LedgerManager

    store = target_bk.core.store
    highest = max(ledger.ledger_id for ledger in plan.source.ledgers)
    advance_past(store, highest, long_ids=LedgerManager(store).manager != "legacyhierarchical", progress=progress)
    failures = target_bk.run(_claim_all(target_bk.core, plan, run_id))
    if not failures:
        return
    first = failures[0]
    if isinstance(first, errors.LedgerExists):
        raise errors.Unsafe(f"{first} in the target (created since the copy was planned): nothing copied")
    raise first


def abandon(target_bk, plan: CopyPlan, run_id: str) -> tuple[int, list[str]]:
    """After a failure: delete the run's ledgers not yet committed; ``(how many, problems)``."""
    passwords = {ledger.ledger_id: ledger.password for ledger in plan.to_copy}
    return target_bk.run(_abandon_run(target_bk.core, passwords, run_id))


# ---- the tasks ----
def _named(lid: int, exc: errors.BKError) -> errors.BKError:
    """``exc``, its message naming the ledger."""
    return exc if str(exc).startswith(f"ledger {lid}") else errors.reworded(exc, f"ledger {lid}: {exc}")


def _copy_ledger(source, target, ledger: PlannedLedger, marker: tuple[str, bytes]) -> list[str]:
    """Replay one ledger from ``source`` into ``target`` (both BookKeeper clients); the corrupt source replicas
    met (read from another replica)."""
    lid, last = ledger.ledger_id, ledger.last_entry_id
    if target_state(ledger, target.core.ledgers.read(lid)[0])[0] == COPIED:  # closed by an earlier attempt
        return []
    replay = target.run(LedgerReplay.resume(target.core, lid, ledger.password, marker))
    reader = LedgerReader(source.core, lid, ledger.metadata, ledger.password, last)
    checksum, size = 0, 0
    batch: list[ReplayEntry] = []
    writing: Future | None = None

    def hand_over() -> Future:
        nonlocal checksum
        checksum ^= payload_xor(lid, ((e.entry_id, e.payload) for e in batch))
        if writing is not None:
            writing.result()
        return asyncio.run_coroutine_threadsafe(replay.add(batch), target.loop)

    try:
        for entry in ReadHandle(source, reader).iter_entries(0, last):
            batch.append(ReplayEntry(entry.entry_id, entry.last_add_confirmed, entry.length, entry.payload))
            size += len(entry.payload)
            if size >= WRITE_BATCH_BYTES:
                writing, batch, size = hand_over(), [], 0
        if batch:
            writing = hand_over()
        if writing is not None:
            writing.result()
    finally:
        if writing is not None and not writing.done():
            writing.cancel()
    target.run(replay.verify(checksum))
    target.run(replay.close(last, ledger.length))
    return list(reader.corruptions)


def _copy_task(source_uri: str, target_uri: str, run_id: str, partition: Partition) -> dict:
    """In a Spark task: copy the partition's ledgers (each range is a whole ledger); small ones a few at once."""
    source, target, marker = task_client(source_uri), task_client(target_uri), _marker(run_id)
    ledgers = [entry_range.ledger for entry_range in partition.ranges]

    def one(ledger: PlannedLedger) -> list[str]:
        try:
            return _copy_ledger(source, target, ledger, marker)
        except errors.BKError as exc:
            raise _named(ledger.ledger_id, exc) from None

    problems: list[str] = []
    small = [ledger for ledger in ledgers if ledger.length < SMALL_RANGE_BYTES]
    with ThreadPoolExecutor(SMALL_AT_ONCE) as pool:
        for found in pool.map(one, small):
            problems += found
    for ledger in ledgers:
        if ledger.length >= SMALL_RANGE_BYTES:
            problems += one(ledger)
    return {"problems": problems}


def run_copy(
    spark,
    source_uri: str,
    target_uri: str,
    plan: CopyPlan,
    run_id: str,
    progress: Callable[[int, int], None] | None = None,
) -> CopyReport:
    """Copy the plan's claimed ledgers; ``progress(completed, total)`` gets the task counts. ``seconds`` is the
    Spark job's (reads, writes, read-backs and closes)."""
    sc = spark.sparkContext
    group = f"bkctl-copy-{run_id}"
    sc.setJobGroup(group, f"copy {len(plan.to_copy)} ledgers to {target_uri}")
    problems: list[str] = []
    started = time.perf_counter()
    tasks = plan.tasks
    with _spark_errors(), TaskProgress(spark, group, progress) if progress else contextlib.nullcontext():
        for result in (
            sc.parallelize(tasks, len(tasks))
            .map(lambda part: _copy_task(source_uri, target_uri, run_id, part))
            .collect()
        ):
            problems += result["problems"]
    return report(plan, run_id, time.perf_counter() - started, problems)


def report(plan: CopyPlan, run_id: str, seconds: float = 0.0, problems: list[str] | None = None) -> CopyReport:
    return CopyReport(
        run_id,
        len(plan.source.ledgers),
        len(plan.to_copy),
        len(plan.copied),
        plan.source.left_open,
        plan.entries,
        plan.bytes,
        seconds,
        problems or [],
    )

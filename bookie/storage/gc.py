"""Garbage collection and compaction (BookKeeper: bookie/GarbageCollectorThread.java).

Each run: 1. ledger GC — forget the local ledgers the metadata store no longer has (drop their index files), and,
every ``gcOverreplicatedLedgerWaitTime``, those whose ensembles no longer name this bookie (over-replicated: see
:data:`RemoveOverReplicated`); 2. entry log metadata — ``{totalSize, remainingSize, ledgerId -> bytes}`` of every
sealed log, from its ledgers map or by scanning it; deleted ledgers are taken out, and a log left with none is
deleted; 3. compaction — major when ``majorCompactionInterval`` has passed (or forced), else minor: every log under the
kind's usage threshold, emptiest first, has its live entries copied into a new entry log of their own (as
BookKeeper's transactional compactor).

Compacting a log is crash-safe by its order: copy into the new log, seal it and fsync its directory (the copies and
their log's name durable), repoint the index (only slots that still point at the old log) durably, and only then
delete the old log. A crash before the index is repointed leaves it on the old log, which still exists; the new log is
then garbage its ledgers map counts as live until those ledgers are deleted (as BookKeeper's default compactor leaves
its copies in the current log). A failure, a full disk among them, removes the new log at once, so a compaction that
gives up leaves the disk no fuller than it found it.

A log that cannot be compacted is *stalled*: skipped, and the run goes on with the others (BookKeeper's compactor
stops the whole run, apache/bookkeeper#4596). A log stalls when reading its metadata or compacting it fails (damage,
an I/O error such as EIO), or when :data:`NO_PROGRESS_RUNS` compactions in a row of it and of the logs its copies
went to reclaimed nothing (every byte copied was live: it keeps coming back). It stays in ``GcState.stalled`` until a
compaction of it succeeds or it is gone (one whose metadata could not be read: until that reads again). A full disk
(ENOSPC, EDQUOT) is not the log's fault: it ends the run with that error, as every other log's copy would fail the
same way, and the next run tries again. Targeted compaction (:meth:`GarbageCollector.compact`) compacts the logs an
operator names whatever their usage, on the GC thread like every other compaction.
"""

from __future__ import annotations

import errno
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, Protocol

from bookie.codec.records import PREFIX
from bookie.errors import BKError, CorruptData, DiskFull
from bookie.storage.entry_log import (
    EntryLogger,
    LogFile,
    iter_records,
    location,
    read_ledgers_map,
    rebuild_ledgers_map,
)

log = logging.getLogger(__name__)
MAJOR, MINOR = "major", "minor"
TARGETED = "targeted"  # a run's kind when it compacted only the logs an operator named
NO_PROGRESS_RUNS = 3  # compactions in a row reclaiming nothing that stall the log holding the copies
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


class Compactable(Protocol):
    """What garbage collection needs of a ledger storage (one per ledger directory): BookKeeper's
    CompactableLedgerStorage."""

    @property
    def entry_logger(self) -> EntryLogger: ...

    def ledger_ids(self) -> list[int]: ...

    def delete_ledger(self, ledger_id: int) -> None: ...

    def entry_location(self, ledger_id: int, entry_id: int) -> int: ...

    def update_entry_locations(self, moved: list[tuple[int, int, int, int]]) -> None: ...


# Given the local ledger ids (they run out early when the collector stops) and a function that forgets one of them,
# forget the over-replicated ones (the ledgers whose ensembles no longer name this bookie) and return their ids; the
# bookie's is bookie/server/overreplication.py.
RemoveOverReplicated = Callable[[Iterable[int], Callable[[int], None]], list[int]]


class GcStats(Protocol):
    """Told of each garbage collection run (the bookie's GarbageCollectorStats)."""

    def gc_run(self, run: GcRun) -> None: ...


@dataclass
class GcConfig:
    """BookKeeper's keys: gcWaitTime (ms), {minor,major}Compaction{Threshold,Interval (s)}, compactionRate,
    gcOverreplicatedLedgerWaitTime (ms; <= 0 never looks for over-replicated ledgers, as BookKeeper)."""

    gc_wait_ms: int = 600_000
    minor_threshold: float = 0.2
    minor_interval_s: float = 3600
    major_threshold: float = 0.8
    major_interval_s: float = 86400
    compaction_rate: int = 1000  # entries/s; <= 0 means unthrottled (our choice: BookKeeper has no such value)
    overreplicated_wait_ms: int = 86_400_000

    def enabled(self, kind: str) -> bool:
        """A threshold or interval <= 0 disables that kind of compaction, forced runs included (as BookKeeper
        without forceAllowCompaction)."""
        threshold, interval = self.kind(kind)
        return threshold > 0 and interval > 0

    def kind(self, kind: str) -> tuple[float, float]:
        return (
            (self.major_threshold, self.major_interval_s)
            if kind == MAJOR
            else (self.minor_threshold, self.minor_interval_s)
        )


@dataclass
class EntryLogMetadata:
    log_id: int
    total_size: int
    ledgers: dict[int, int]  # ledgerId -> bytes of entries still live
    sealed: bool = True  # False: read by scanning the log, which has no ledgers map

    @property
    def remaining_size(self) -> int:
        return sum(self.ledgers.values())

    @property
    def usage(self) -> float:
        return self.remaining_size / self.total_size if self.total_size else 0.0

    def forget(self, live: Callable[[int], bool]) -> None:
        self.ledgers = {lid: size for lid, size in self.ledgers.items() if live(lid)}


class Compacted(NamedTuple):
    """A log compacted: the entries and bytes copied, the new log holding them (None: nothing was live) and its
    size on disk (with its header and ledgers map)."""

    entries: int
    copied: int
    new_log: EntryLogMetadata | None
    new_size: int


def log_metadata(path: Path, log_id: int) -> EntryLogMetadata:
    """From the sealed log's ledgers map, or by scanning it when it has none (a log a crash left unsealed)."""
    ledgers = read_ledgers_map(path)
    if ledgers is None:
        ledgers = rebuild_ledgers_map(path)
        return EntryLogMetadata(log_id, sum(ledgers.values()), ledgers, sealed=False)
    return EntryLogMetadata(log_id, sum(ledgers.values()), ledgers)


def entry_log_usage(
    path_of: Callable[[int], Path],
    log_ids: Iterable[int],
    live: Callable[[int], bool],
    known: dict[int, EntryLogMetadata] | None = None,
    skip_unreadable: bool = False,
) -> list[EntryLogMetadata]:
    """Usage of each log: live = the ledgers whose index the bookie still has. Logs removed meanwhile are left out,
    and with ``skip_unreadable`` those that cannot be read (a running bookie's GC stalls them and says why)."""
    result = []
    for log_id in log_ids:
        try:
            meta = (known or {}).get(log_id) or log_metadata(path_of(log_id), log_id)
        except FileNotFoundError:
            continue
        except (CorruptData, OSError):
            if skip_unreadable:
                continue
            raise
        result.append(EntryLogMetadata(log_id, meta.total_size, {k: v for k, v in meta.ledgers.items() if live(k)}))
    return result


class Throttle:
    """``compactionRate``: at most ``rate`` entries/s (``rate`` <= 0: no limit), checked every 32 entries; ``take``
    returns False once ``stop`` is set.

    As BookKeeper's compactor throttles (AbstractLogCompactor.Throttler, a Guava RateLimiter, SmoothBursty): time
    the copy leaves unused is saved as permits, at most one second's worth, so after a stall it goes ahead by at
    most ``rate`` entries, then at ``rate`` again, rather than at full speed until the whole run's average is met.
    Each batch waits for its own permits once copied (Guava makes the next acquire wait instead: with batches of 32
    that would let a short compaction through unthrottled).
    """

    BATCH = 32

    def __init__(self, rate: int, stop: threading.Event):
        self.rate, self.stop = rate, stop
        self.taken = 0
        self.stored = 0.0  # permits saved from unused time, at most a second's worth (``rate``)
        self.next_free = time.monotonic()  # when the permits taken so far are paid for

    def take(self) -> bool:
        self.taken += 1
        if self.rate > 0 and self.taken % self.BATCH == 0:
            now = time.monotonic()
            if now > self.next_free:
                self.stored = min(float(self.rate), self.stored + (now - self.next_free) * self.rate)
                self.next_free = now
            from_store = min(float(self.BATCH), self.stored)
            self.stored -= from_store
            self.next_free += (self.BATCH - from_store) / self.rate
            wait = self.next_free - now
            if wait > 0:
                return not self.stop.wait(wait)
        return not self.stop.is_set()


@dataclass
class GcRun:
    """What one run did."""

    run_id: int
    forced: bool
    kind: str = ""  # "major", "minor", "targeted" (only named logs), or "" for no compaction
    ledgers_deleted: int = 0
    logs_deleted: int = 0
    logs_compacted: int = 0
    entries_copied: int = 0
    bytes_copied: int = 0
    bytes_reclaimed: int = 0  # sizes of the logs deleted, less what was copied out of them
    started: float = 0.0  # epoch seconds
    seconds: float = 0.0
    error: str = ""

    def __str__(self) -> str:
        """One line for the log: ``gc run 7 (forced, major compaction): 2 ledgers deleted, 1 entry logs deleted,
        3 entry logs compacted (1200 entries, 1.2 MiB copied), 64.0 MiB reclaimed in 0.41 s``."""
        how = ", ".join(filter(None, ["forced" if self.forced else "", f"{self.kind} compaction" if self.kind else ""]))
        done = [
            f"{self.ledgers_deleted} ledgers deleted",
            f"{self.logs_deleted} entry logs deleted",
            f"{self.logs_compacted} entry logs compacted ({self.entries_copied} entries, "
            f"{_mib(self.bytes_copied)} copied)",
        ]
        failed = f"; failed: {self.error}" if self.error else ""
        return (
            f"gc run {self.run_id}{f' ({how})' if how else ''}: {', '.join(done)}, "
            f"{_mib(self.bytes_reclaimed)} reclaimed in {self.seconds:.2f} s{failed}"
        )


def _mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


@dataclass
class GcState:
    """What the admin RPCs report."""

    running: bool = False
    forced: bool = False
    compacting: str = ""
    suspended: set[str] = field(default_factory=set)
    last_compaction: dict[str, float] = field(default_factory=dict)  # kind -> epoch seconds
    counters: dict[str, int] = field(default_factory=lambda: {MAJOR: 0, MINOR: 0})
    bytes_reclaimed: int = 0
    logs_compacted: int = 0
    runs: int = 0
    last_run: GcRun | None = None
    stalled: dict[int, str] = field(default_factory=dict)  # logId -> why its last compaction failed or made no progress
    stalled_since: dict[int, float] = field(default_factory=dict)  # logId -> when it stalled (epoch seconds)
    # since start, as BookKeeper's GarbageCollectorStats count them
    reclaimed_by_deletion: int = 0  # sizes of the logs deleted for holding no live ledger
    reclaimed_by_compaction: int = 0  # of the logs compacted: their size less what was copied out
    reclaim_failed: int = 0  # entry logs that could not be deleted
    ledgers_deleted: int = 0
    # as of the last run
    active_ledgers: int = 0
    active_entry_logs: int = 0
    active_entry_log_bytes: int = 0  # live bytes in them
    dead_bytes: int = 0  # bytes in them of ledgers this bookie no longer has (deleted, or over-replicated)
    reclaimable_bytes: int = 0  # of those, in the logs under the major threshold not stalled (what a major frees)


class GarbageCollector:
    """A GC thread over one ledger storage: InterleavedLedgerStorage's, or one directory of DbLedgerStorage's
    (``where`` names it in the log). ``live_ledgers(ids)`` answers which of the given ledger ids still exist in the
    metadata store (None: no metadata store, no ledger GC); ``over_replicated`` forgets the local ledgers this bookie
    no longer owns, at the first run ``overreplicated_wait_ms`` after start-up or after its last look (None: never)."""

    def __init__(
        self,
        storage: Compactable,
        config: GcConfig,
        live_ledgers: Callable[[list[int]], set[int]] | None = None,
        where: str = "",
        over_replicated: RemoveOverReplicated | None = None,
    ):
        self.storage = storage
        self.over_replicated = over_replicated
        self.where = where
        self.config = config
        self.live_ledgers = live_ledgers
        self.stats: GcStats | None = None  # told of each run (its GarbageCollectorStats, bookie/server/metrics.py)
        self.state = GcState()
        self.logs: dict[int, EntryLogMetadata] = {}
        now = time.time()  # intervals count from start-up, as BookKeeper's
        self.state.last_compaction = {MAJOR: now, MINOR: now}
        self.last_overreplicated_check = now
        self._wake = threading.Condition()
        self._forced: tuple[bool, bool] | None = None
        self._targets: set[int] = set()  # logs an operator asked to compact, for the next run
        self._override_suspension = False
        self._no_progress: dict[int, int] = {}  # logId -> compactions in a row that reclaimed nothing, to this log
        self._unreadable: set[int] = set()  # stalled logs whose metadata could not be read
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ---- control ----
    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name=f"gc {self.where}".rstrip(), daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        with self._wake:
            self._wake.notify_all()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def trigger(self, force_major: bool = False, force_minor: bool = False) -> tuple[bool, int]:
        """Ask for a forced run now. Returns whether it was newly asked for (False: a forced run is already pending
        or running, and that one will do) and the id of the run that will do it."""
        with self._wake:
            if self.state.running and self.state.forced:
                return False, self.state.runs
            started = self._forced is None
            if started:
                self._forced = (force_major, force_minor)
                self._wake.notify_all()
            return started, self.state.runs + 1

    def compact(self, log_ids: Iterable[int], override_suspension: bool = False) -> int:
        """Ask the GC thread to compact these sealed logs whatever their usage, at its next run (now, or after the
        run in progress); returns that run's id. Suspended compaction stops it unless ``override_suspension``."""
        with self._wake:
            self._targets.update(log_ids)
            self._override_suspension |= override_suspension
            self._wake.notify_all()
            return self.state.runs + 1

    @property
    def forcing(self) -> bool:
        """A forced run is pending or running (BookKeeper's ``isInForceGC``: set when asked, cleared at its end)."""
        return self._forced is not None or (self.state.running and self.state.forced)

    def suspend(self, kinds: Iterable[str], suspended: bool) -> None:
        for kind in kinds:
            (self.state.suspended.add if suspended else self.state.suspended.discard)(kind)

    def usage(self) -> list[EntryLogMetadata]:
        """Usage of every sealed entry log now (the current log is still being written), but those whose metadata
        cannot be read (stalled)."""
        local = set(self.storage.ledger_ids())
        return entry_log_usage(
            self.storage.entry_logger.log_path,
            self.storage.entry_logger.sealed_log_ids(),
            local.__contains__,
            dict(self.logs),
            skip_unreadable=True,
        )

    def _loop(self) -> None:
        wait = self.config.gc_wait_ms / 1000.0
        while not self._stop.is_set():
            with self._wake:
                if self._forced is None and not self._targets:
                    self._wake.wait(wait if wait > 0 else None)
                if self._stop.is_set():
                    return
                forced, self._forced = self._forced, None
                targets, self._targets = self._targets, set()
                override, self._override_suspension = self._override_suspension, False
                self.state.running, self.state.forced = True, forced is not None
                self.state.runs += 1  # with `running`, under the lock: trigger() counts on both
                run_id = self.state.runs
            try:
                self.run(forced, run_id, targets, override)
            finally:
                with self._wake:
                    self.state.running = self.state.forced = False

    # ---- one run ----
    def _kind(self, forced: tuple[bool, bool] | None) -> str:
        """Major when due or forced, else minor when due or forced; never a suspended or disabled kind."""
        now = time.time()
        for kind, force in ((MAJOR, forced and forced[0]), (MINOR, forced and forced[1])):
            if kind in self.state.suspended or not self.config.enabled(kind):
                continue
            if force or now - self.state.last_compaction[kind] >= self.config.kind(kind)[1]:
                return kind
        return ""

    def run(
        self,
        forced: tuple[bool, bool] | None = None,
        run_id: int | None = None,
        targets: Iterable[int] = (),
        override_suspension: bool = False,
    ) -> GcRun:
        """One GC run, forced with ``(forceMajor, forceMinor)``, or as scheduled when ``forced`` is None; it first
        compacts the ``targets`` logs, whatever their usage."""
        if run_id is None:
            with self._wake:
                self.state.runs += 1
                run_id = self.state.runs
        result = GcRun(run_id, forced is not None, started=time.time())
        began = time.monotonic()
        try:
            result.ledgers_deleted = self._collect_ledgers()
            self._update_logs(result)
            targets = sorted(targets)
            if targets:
                self._compact_targets(targets, override_suspension, result)
            kind = self._kind(forced)
            result.kind = kind or (TARGETED if targets else "")
            if kind:
                self._compact_logs(kind, result)
        except BKError as exc:  # expected (ZooKeeper unreachable...): reported, retried at the next run
            log.warning("gc run %d failed%s: %s", run_id, self._in(), exc)
            result.error = str(exc)
        except Exception as exc:  # a bug: its traceback
            log.exception("gc run %d failed%s", run_id, self._in())
            result.error = str(exc)
        result.seconds = time.monotonic() - began
        self.state.bytes_reclaimed += result.bytes_reclaimed
        self.state.logs_compacted += result.logs_compacted
        self.state.ledgers_deleted += result.ledgers_deleted
        self.state.last_run = result
        if self.stats is not None:
            self.stats.gc_run(result)
        if result.ledgers_deleted or result.logs_deleted or result.logs_compacted:
            log.info("%s%s", result, self._in())
        return result

    def _in(self) -> str:
        return f" in {self.where}" if self.where else ""

    def _collect_ledgers(self) -> int:
        """Forget the over-replicated ledgers when it is time to look for them, then the deleted ones; return how
        many were forgotten (both count as deleted ledgers, as in BookKeeper's GarbageCollectorStats)."""
        local = self.storage.ledger_ids()
        over = self._collect_over_replicated(local)
        local = [ledger_id for ledger_id in local if ledger_id not in over]
        self.state.active_ledgers = len(local)
        if self.live_ledgers is None or not local:
            return len(over)
        live = self.live_ledgers(local)
        dead = [ledger_id for ledger_id in local if ledger_id not in live]
        for ledger_id in dead:
            self.storage.delete_ledger(ledger_id)
        self.state.active_ledgers = len(local) - len(dead)
        return len(over) + len(dead)

    def _collect_over_replicated(self, local: list[int]) -> set[int]:
        """Every ``overreplicated_wait_ms`` (<= 0: never), counted from the end of the last look that completed: a
        look that fails (ZooKeeper unreachable) fails the run and is tried again at the next."""
        wait_ms = self.config.overreplicated_wait_ms
        if self.over_replicated is None or wait_ms <= 0:
            return set()
        if (time.time() - self.last_overreplicated_check) * 1000 <= wait_ms:
            return set()
        log.info("gc%s: looking for over-replicated ledgers among %d", self._in(), len(local))
        # a metadata read per ledger: a bookie stopping must not wait for the rest
        until_stopped = itertools.takewhile(lambda _: not self._stop.is_set(), local)
        removed = set(self.over_replicated(until_stopped, self.storage.delete_ledger))
        self.last_overreplicated_check = time.time()
        return removed

    def _remove_log(self, log_id: int) -> int:
        """Delete an entry log, return its size. A failure is counted (RECLAIM_FAILED_TO_DELETE) and fails the
        run; the next run tries again."""
        try:
            return self.storage.entry_logger.remove_log(log_id)
        except OSError:
            self.state.reclaim_failed += 1
            raise

    def _update_logs(self, result: GcRun) -> None:
        logger = self.storage.entry_logger
        local = set(self.storage.ledger_ids())
        logs = {}
        sealed = logger.sealed_log_ids()
        for log_id in sealed:
            try:
                logs[log_id] = self.logs.get(log_id) or log_metadata(logger.log_path(log_id), log_id)
            except FileNotFoundError:
                continue  # removed meanwhile
            except (CorruptData, OSError) as exc:  # that log left alone, the others collected (as BookKeeper)
                self._stall(log_id, f"cannot read its ledgers map or records: {exc}")
                self._unreadable.add(log_id)
                continue
            if log_id in self._unreadable:
                self._unstall(log_id, "its metadata reads again")
        self.logs = logs
        for log_id in set(self.state.stalled) - set(sealed):
            self._unstall(log_id, "it is gone")
        for log_id in set(self._no_progress) - set(sealed):
            del self._no_progress[log_id]
        for meta in list(self.logs.values()):
            meta.forget(local.__contains__)
            if not meta.ledgers:
                size = self._remove_log(meta.log_id)
                result.bytes_reclaimed += size
                self.state.reclaimed_by_deletion += size
                result.logs_deleted += 1
                del self.logs[meta.log_id]
                self._unstall(meta.log_id, "it is gone")
        self._count_active()

    def _count_active(self) -> None:
        logs = list(self.logs.values())
        self.state.active_entry_logs = len(logs)
        self.state.active_entry_log_bytes = sum(meta.remaining_size for meta in logs)
        self.state.dead_bytes = sum(meta.total_size - meta.remaining_size for meta in logs)
        self.state.reclaimable_bytes = sum(  # what a major compaction frees: stalled logs it leaves as they are
            meta.total_size - meta.remaining_size
            for meta in logs
            if meta.usage < self.config.major_threshold and meta.log_id not in self.state.stalled
        )

    # ---- stalled logs: logged once per change ----
    def _stall(self, log_id: int, why: str) -> None:
        if self.state.stalled.get(log_id) == why:
            return
        log.error("gc%s: entry log %x stalled, left as it is: %s", self._in(), log_id, why)
        self.state.stalled[log_id] = why
        self.state.stalled_since.setdefault(log_id, time.time())

    def _unstall(self, log_id: int, why: str) -> None:
        self._unreadable.discard(log_id)
        if self.state.stalled.pop(log_id, None) is not None:
            self.state.stalled_since.pop(log_id, None)
            log.info("gc%s: entry log %x no longer stalled: %s", self._in(), log_id, why)

    def _compact_logs(self, kind: str, result: GcRun) -> None:
        threshold = self.config.kind(kind)[0]
        self.state.compacting = kind
        throttle = Throttle(self.config.compaction_rate, self._stop)
        try:
            for meta in sorted(self.logs.values(), key=lambda m: m.usage):
                if meta.usage >= threshold or self._stop.is_set() or kind in self.state.suspended:
                    break
                if self._compact_one(meta, throttle, result) is None:
                    break
        finally:
            self.state.compacting = ""
            self._count_active()
        self.state.last_compaction[kind] = time.time()
        self.state.counters[kind] += 1

    def _compact_targets(self, log_ids: list[int], override_suspension: bool, result: GcRun) -> None:
        """The logs an operator named, whatever their usage (stalled ones too: that is how to retry one). A log
        that failed is named in the run's error."""
        self.state.compacting = TARGETED
        throttle = Throttle(self.config.compaction_rate, self._stop)
        failed = []
        try:
            for log_id in log_ids:
                if self._stop.is_set():
                    break
                if self.state.suspended and not override_suspension:
                    kinds = " and ".join(sorted(self.state.suspended))
                    failed.append(f"{kinds} compaction suspended before entry log {log_id:x}")
                    break
                meta = self.logs.get(log_id)
                if meta is None:
                    continue  # deleted by this run (no live ledger left), or gone
                done = self._compact_one(meta, throttle, result)
                if done is False:
                    failed.append(f"entry log {log_id:x}: {self.state.stalled.get(log_id, 'failed')}")
                elif done is None:
                    break
        finally:
            self.state.compacting = ""
            self._count_active()
        if failed:
            result.error = "; ".join(failed)

    def _compact_one(self, meta: EntryLogMetadata, throttle: Throttle, result: GcRun) -> bool | None:
        """Compact one log and count it; False: it failed and is stalled, None: the bookie is stopping."""
        log_id = meta.log_id
        try:
            size = self.storage.entry_logger.log_path(log_id).stat().st_size
            done = self._compact(meta, throttle)
        except FileNotFoundError:
            return True  # removed meanwhile
        except OSError as exc:
            if exc.errno in DISK_FULL:  # the disk's, not the log's: the run ends, the next one tries again
                raise DiskFull(f"entry log {log_id:x} not compacted: {exc.strerror or exc}") from exc
            self._stall(log_id, f"{type(exc).__name__}: {exc}")
            return False
        except CorruptData as exc:  # that log kept as it is, the others compacted
            self._stall(log_id, str(exc))
            return False
        if done is None:
            return None  # stopping: the log is left as it was
        self._remove_log(log_id)
        del self.logs[log_id]
        reclaimed = max(0, size - done.new_size)
        streak = self._no_progress.pop(log_id, 0) + 1 if reclaimed == 0 else 0
        # a stall for no progress goes on to the log holding the copies quietly: logged once per chain
        chained = streak > NO_PROGRESS_RUNS and done.new_log is not None and log_id in self.state.stalled
        since = self.state.stalled_since.get(log_id)
        if chained:
            self.state.stalled.pop(log_id)
            self.state.stalled_since.pop(log_id, None)
        else:
            self._unstall(log_id, "compacted")
        if done.new_log is not None:  # all live: a later run looks at it again
            new_id = done.new_log.log_id
            self.logs[new_id] = done.new_log
            if streak:
                self._no_progress[new_id] = streak
            why = (
                f"{streak} compactions in a row reclaimed nothing (last: log {log_id:x}, "
                f"{done.copied} bytes copied, all live)"
            )
            if chained:
                self.state.stalled[new_id] = why
                self.state.stalled_since[new_id] = since if since is not None else time.time()
            elif streak >= NO_PROGRESS_RUNS:
                self._stall(new_id, why)
        result.logs_compacted += 1
        result.entries_copied += done.entries
        result.bytes_copied += done.copied
        result.bytes_reclaimed += reclaimed
        self.state.reclaimed_by_compaction += reclaimed
        return True

    def _compact(self, meta: EntryLogMetadata, throttle: Throttle) -> Compacted | None:
        """Copy the log's live entries into a new log of their own, make it and its name durable, then repoint the
        index at the copies; None when the bookie is stopping. A failure (a disk full) or a stop removes the new log:
        nothing points into it yet, and the disk holds no more than before (copies appended to the shared current
        log would stay there as garbage)."""
        storage, logger = self.storage, self.storage.entry_logger
        moved: list[tuple[int, int, int, int]] = []  # (ledgerId, entryId, old location, new location)
        copies: LogFile | None = None
        copied = entries = seen = 0  # seen: bytes of the live ledgers' records scanned, copied or superseded
        try:
            for pos, ledger_id, entry_id, record in iter_records(logger.log_path(meta.log_id)):
                if ledger_id not in meta.ledgers:
                    continue
                seen += len(record)
                old = location(meta.log_id, pos)
                if storage.entry_location(ledger_id, entry_id) != old:
                    continue  # deleted, or superseded by a later copy of the entry
                if copies is None:
                    copies = logger.new_log()
                offset = copies.append(record, {ledger_id: len(record)})
                moved.append((ledger_id, entry_id, old, location(copies.id, offset + PREFIX)))
                copied += len(record)
                entries += 1
                if not throttle.take():
                    logger.discard_new(copies)
                    return None
            if seen < meta.remaining_size:  # the scan stopped at damage: what follows it must not go with the log
                raise CorruptData(
                    f"entry log {meta.log_id:x}: its scan stopped at a damaged record after {seen} of the "
                    f"{meta.remaining_size} bytes of its live ledgers; the log is kept"
                )
            if copies is not None:
                logger.seal_new(copies)  # the copies durable before an index slot points at them
        except BaseException:
            if copies is not None:
                logger.discard_new(copies)
            raise
        storage.update_entry_locations(moved)  # durable before the old log goes
        if copies is None:
            return Compacted(entries, copied, None, 0)
        new_log = EntryLogMetadata(copies.id, copied, dict(copies.ledger_sizes))
        return Compacted(entries, copied, new_log, copies.path.stat().st_size)

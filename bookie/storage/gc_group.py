"""A bookie's garbage collectors, presented as one to the admin services.

InterleavedLedgerStorage has one collector over all its ledger directories. DbLedgerStorage has one per directory,
as BookKeeper's (each SingleDirectoryDbLedgerStorage runs its own GarbageCollectorThread over its own ledgers and
entry logs); DbLedgerStorage's forceGC, suspend/resume and isInForceGC go to, or ask, every one of them. Their state
is merged here for our gRPC admin service (running if any runs, counts summed); BookKeeper's HTTP gc_details lists
each collector's own (``collectors``).

A merged run id is the sum of the collectors' run ids: a forced run asked of all of them is done once every one has
finished the run it was asked for, which ``last_run`` tells by never reaching that sum before.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path

from bookie.errors import InvalidArgument, NotFound, Unsafe
from bookie.storage.gc import MAJOR, MINOR, TARGETED, EntryLogMetadata, GarbageCollector, GcConfig, GcRun, GcState

RUN_COUNTS = ("ledgers_deleted", "logs_deleted", "logs_compacted", "entries_copied", "bytes_copied", "bytes_reclaimed")
STATE_COUNTS = (
    "bytes_reclaimed",
    "logs_compacted",
    "runs",
    "reclaimed_by_deletion",
    "reclaimed_by_compaction",
    "reclaim_failed",
    "ledgers_deleted",
    "active_ledgers",
    "active_entry_logs",
    "active_entry_log_bytes",
    "dead_bytes",
    "reclaimable_bytes",
)


class GarbageCollectors:
    """The bookie's collectors (at least one), all with the same configuration."""

    def __init__(self, collectors: list[GarbageCollector]):
        if not collectors:
            raise ValueError("no garbage collector")
        self.collectors = collectors
        self.config: GcConfig = collectors[0].config
        self._lock = threading.Lock()
        # each collector's run id of the forced runs asked of all, oldest first, until every one has finished its
        self._asked: list[tuple[int, ...]] = []

    def start(self) -> None:
        for collector in self.collectors:
            collector.start()

    def stop(self) -> None:
        for collector in self.collectors:
            collector.stop()

    def trigger(self, force_major: bool = False, force_minor: bool = False) -> tuple[bool, int]:
        """A forced run on every collector. Returns whether any was newly asked for, and the merged id of the run
        that will have done it."""
        with self._lock:
            asked = [c.trigger(force_major, force_minor) for c in self.collectors]
            run_ids = tuple(run_id for _, run_id in asked)
            if len(run_ids) > 1:  # one collector's own ids need no merging (state is its own)
                self._asked.append(run_ids)
        return any(started for started, _ in asked), sum(run_ids)

    @property
    def forcing(self) -> bool:
        """A forced run is pending or running on any collector (DbLedgerStorage.isInForceGC: anyMatch)."""
        return any(c.forcing for c in self.collectors)

    def suspend(self, kinds: Iterable[str], suspended: bool) -> None:
        kinds = list(kinds)
        for collector in self.collectors:
            collector.suspend(kinds, suspended)

    def usage(self) -> list[tuple[EntryLogMetadata, Path | None]]:
        """Every collector's sealed entry logs, each with the ledger directory it is in (log ids are per directory
        under DbLedgerStorage: only the directory tells two logs ``0.log`` apart)."""
        return [(m, c.storage.entry_logger.directory_of(m.log_id)) for c in self.collectors for m in c.usage()]

    def choose(
        self, log_ids: Iterable[int], ledger_ids: Iterable[int]
    ) -> list[tuple[GarbageCollector, EntryLogMetadata]]:
        """The sealed logs to compact: those named (in every directory that has one of that id: DbLedgerStorage
        numbers each directory's logs apart) and those holding a live entry of the ledgers named. NotFound for a
        log no directory has or a ledger no sealed log holds, InvalidArgument for a log still being written."""
        log_ids, ledger_ids = set(log_ids), set(ledger_ids)
        chosen: dict[tuple[int, int], tuple[GarbageCollector, EntryLogMetadata]] = {}
        found_logs: set[int] = set()
        found_ledgers: set[int] = set()
        for index, collector in enumerate(self.collectors):
            logger = collector.storage.entry_logger
            if logger.current_id in log_ids:
                raise InvalidArgument(
                    f"entry log {logger.current_id:x} is the current log, still being written: it can be compacted "
                    "once the bookie rolls to a new one (at logSizeLimit, or a restart)"
                )
            for meta in collector.usage():
                held = ledger_ids & meta.ledgers.keys()
                if meta.log_id in log_ids or held:
                    chosen[index, meta.log_id] = (collector, meta)
                    found_logs.add(meta.log_id)
                    found_ledgers |= held
        missing = sorted(log_ids - found_logs)
        if missing:
            raise NotFound(f"no sealed entry log {', '.join(f'{i:x}' for i in missing)} on this bookie")
        missing = sorted(ledger_ids - found_ledgers)
        if missing:
            raise NotFound(
                f"no sealed entry log holds a live entry of ledger {', '.join(map(str, missing))} on this bookie"
            )
        return [chosen[key] for key in sorted(chosen)]

    def compact(
        self,
        chosen: list[tuple[GarbageCollector, EntryLogMetadata]],
        override_suspension: bool = False,
        dry_run: bool = False,
    ) -> int | None:
        """Hand the chosen logs to their collectors' threads; return the merged id of the run that will have
        compacted them (None with ``dry_run``, which only checks). Unsafe while compaction is suspended, unless
        ``override_suspension``."""
        suspended = set().union(*(c.state.suspended for c, _ in chosen))
        if suspended and not override_suspension:
            kinds = " and ".join(sorted(suspended))
            raise Unsafe(
                f"{kinds} compaction is suspended on this bookie: resume it (bkctl bookie compaction resume) or "
                "override the suspension for these logs (--ignore-suspension)"
            )
        if dry_run:
            return None
        with self._lock:
            run_ids = []
            for collector in self.collectors:
                logs = [meta.log_id for c, meta in chosen if c is collector]
                run_ids.append(collector.compact(logs, override_suspension) if logs else collector.state.runs)
            if len(run_ids) > 1:
                self._asked.append(tuple(run_ids))
        return sum(run_ids)

    def stalled(self) -> list[tuple[int, str, float, Path | None]]:
        """Every collector's stalled logs: (logId, why, since, its ledger directory)."""
        return [
            (log_id, why, c.state.stalled_since.get(log_id, 0.0), c.storage.entry_logger.directory_of(log_id))
            for c in self.collectors
            for log_id, why in sorted(c.state.stalled.items())
        ]

    @property
    def state(self) -> GcState:
        """The one collector's state, or all of theirs merged: running or compacting if any is, suspended if all
        are (DbLedgerStorage.isMajorGcSuspended: allMatch), the latest compaction times, counts summed. Stalled logs
        are not merged (log ids repeat across DbLedgerStorage's directories): :meth:`stalled` lists them."""
        states = [c.state for c in self.collectors]
        if len(states) == 1:
            return states[0]
        compacting = [s.compacting for s in states]
        merged = GcState(
            running=any(s.running for s in states),
            forced=any(s.running and s.forced for s in states),
            compacting=next((kind for kind in (MAJOR, MINOR, TARGETED) if kind in compacting), ""),
            suspended=set.intersection(*(set(s.suspended) for s in states)),
            last_compaction={kind: max(s.last_compaction[kind] for s in states) for kind in (MAJOR, MINOR)},
            counters={kind: sum(s.counters[kind] for s in states) for kind in (MAJOR, MINOR)},
            last_run=self._last_run([s.last_run for s in states]),
        )
        for name in STATE_COUNTS:
            setattr(merged, name, sum(getattr(s, name) for s in states))
        return merged

    def _last_run(self, runs: list[GcRun | None]) -> GcRun | None:
        """The collectors' last runs as one, once each has run: its id is their ids' sum, but short of the oldest
        forced run asked of all that some collector has not finished yet."""
        done = [run for run in runs if run is not None]
        if len(done) < len(runs):
            return None
        run_id = sum(run.run_id for run in done)
        with self._lock:
            while self._asked and all(run.run_id >= asked for run, asked in zip(done, self._asked[0], strict=True)):
                self._asked.pop(0)
            if self._asked:
                run_id = min(run_id, sum(self._asked[0]) - 1)
        kinds = [run.kind for run in done]
        where = [collector.where for collector in self.collectors]
        began = min(run.started for run in done)
        merged = GcRun(
            run_id,
            forced=any(run.forced for run in done),
            kind=next((kind for kind in (MAJOR, MINOR, TARGETED) if kind in kinds), ""),
            started=began,
            seconds=max(run.started + run.seconds for run in done) - began,
            error="; ".join(f"{w}: {run.error}" for w, run in zip(where, done, strict=True) if run.error),
        )
        for name in RUN_COUNTS:
            setattr(merged, name, sum(getattr(run, name) for run in done))
        return merged

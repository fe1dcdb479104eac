"""The cluster metadata checker (BP-34; BookKeeper: replication/Auditor.java). It reports; it never repairs.

Per closed ledger: placement of every segment; and the durability contract — what each bookie must hold by the
write-set rule against what it says it holds (GET_LIST_OF_ENTRIES_OF_LEDGER, answered from its index, asked for
many ledgers per request). Open ledgers are skipped; already under-replicated ones are reported only once their
marker is older than the grace period. A registered bookie that does not answer is asked again after a delay and
reported only if it still fails and is still registered. A bookie that some ledger read names and that is not
registered is missing (bookie.meta.membership): reported as unavailable too, and the ledgers' entries it held count as
missing. Before a ledger is reported, its metadata is read again: changed means analyse again, marked
under-replicated meanwhile means skip — no false alarms. When asked, a registered bookie whose add or read p99 (its
/metrics) stands out from the others' is reported slow, a warning.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field

from admin.check import categories as cat
from admin.check.placement import FAIL, MEETS_SOFT, segment_verdict
from admin.check.replicas import analyse, segment_ranges
from bookie.client.bookie_client import ENOENTRY, ENOLEDGER, EOK, status_name
from bookie.codec.availability import AvailabilityOfEntries
from bookie.codec.digest import Digester
from bookie.codec.entry import parse_entry
from bookie.codec.write_set import count_entries_of_bookie, entries_of_bookie
from bookie.errors import BKError, CorruptEntry, NoSuchLedger
from bookie.meta.ledger_metadata import LedgerMetadata
from bookie.meta.membership import EnsembleNames, MissingBookie, missing_bookies
from bookie.meta.registration import DEFAULT_RACK
from bookie.meta.underreplication import UnderReplicationManager
from bookie.progress import NO_PROGRESS, Progress

log = logging.getLogger(__name__)
EMPTY = AvailabilityOfEntries([])
LEDGERS_PER_REQUEST = 1000
REANALYSE = 3  # times a ledger whose metadata keeps changing is analysed again before giving up on it


@dataclass
class CheckOptions:
    placement: bool = True
    replicas: bool = True
    # compare the bookies' p99s from their /metrics (admin.top). Off by default: a p99 over the few requests of a
    # quiet window says little, and an audit's "no violations" must not come and go with it
    latency: bool = False
    # seconds a ledger may stay marked under-replicated before it fails the check; None: listed, never failing
    under_replicated_grace: float | None = 0.0
    ledger_ids: list[int] | None = None
    concurrency: int = 8
    verify_entries: float = 0.0  # percent of all entries read from every replica
    recheck_delay: float = 5.0
    timeout: float = 30.0
    before_report: Callable[[int], Awaitable[None]] | None = None  # test hook: runs before the last re-read
    # Write the check times (underreplication/*checkctime) as BookKeeper's auditor does. Off by default: a
    # recorded time tells a real auditor the check was just done, and it postpones its own.
    record: bool = False


@dataclass
class Violation:
    ledger_id: int | None
    category: str
    segment: int | None
    bookies: list[str]
    missing_entries: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # runs (replicas.missing_runs)
    missing_counts: dict[str, int] = field(default_factory=dict)
    error: str | None = None  # why a bookie counts as unavailable: what it answered, or why it could not
    reason: str | None = None  # why a bookie counts as slow: its p99 against the others'

    def doc(self) -> dict:
        doc = {
            "ledgerId": self.ledger_id,
            "category": self.category,
            "segment": self.segment,
            "bookies": self.bookies,
            "missingEntries": {b: [list(run) for run in runs] for b, runs in self.missing_entries.items()},
            "missingEntryCounts": self.missing_counts,
        }
        if self.error is not None:
            doc["error"] = self.error
        if self.reason is not None:
            doc["reason"] = self.reason
        return doc


SCHEMA_VERSION = 1  # of CheckReport.doc(): raised when a field changes meaning or goes away, not when one is added
# What each field of CheckReport.doc() means: bkctl-cluster(1) prints it, docs/monitoring.md explains it, and
# tests/unit/test_check_analysis.py holds both to the real document.
REPORT_FIELDS = {
    "schemaVersion": "1; raised when a field changes meaning or goes away (fields may be added within a version)",
    "checkedLedgers": "closed ledgers checked",
    "skippedOpen": "open ledgers, not checked (their last entry is not final)",
    "skippedUnderReplicated": "ledgers marked under-replicated, not checked: how many",
    "underReplicatedLedgers": "their ids, ascending; those that fail the check are in violations as "
    "NUM_UNDERREPLICATED_LEDGERS_ELAPSED_RECOVERY_GRACE_PERIOD",
    "durationSeconds": "how long the check took",
    "counts": "per category (BookKeeper's auditor gauge names, and two of ours): ledgers, or bookies for "
    "NUM_BOOKIES_UNAVAILABLE and NUM_BOOKIES_SLOW",
    "violations": "one per ledger and category (and per unavailable bookie), as below",
    "violations[].ledgerId": "the ledger (for an unavailable bookie: the ledger it failed on, or null)",
    "violations[].category": "one of the counts' names",
    "violations[].segment": "first entry id of the worst segment (null: not about one segment)",
    "violations[].bookies": "bookies missing entries; the ensemble of a placement violation; the unavailable or "
    "slow bookie",
    "violations[].missingEntries": "bookie -> [[first, last], ...]: inclusive runs of the entries the write-set rule "
    "gives that bookie (with E = WQ every id; with E 3 WQ 2 a bookie holds two ids of every three), ascending",
    "violations[].missingEntryCounts": "bookie -> how many entries it lacks",
    "violations[].error": "only for an unavailable bookie: what it answered, or why it could not be asked",
    "violations[].reason": "only for a slow bookie (--latency; a warning: it does not fail the check): its add or "
    "read p99 against the median of the other bookies'",
    "unavailableBookies": "registered bookies that did not answer, twice; and missing ones (not registered) that a "
    "checked ledger names",
    "nextSteps": "the commands to run about the unavailable bookies (check-impact; recover or decommission a missing "
    "one)",
}


@dataclass
class CheckReport:
    checked: int = 0
    skipped_open: int = 0
    under_replicated: list[int] = field(default_factory=list)  # marked under-replicated: skipped, failing or not
    seconds: float = 0.0
    violations: list[Violation] = field(default_factory=list)
    unavailable_bookies: list[str] = field(default_factory=list)  # registered ones that do not answer, and missing
    missing_bookies: list[MissingBookie] = field(default_factory=list)  # not registered, named by a ledger read

    @property
    def counts(self) -> dict[str, int]:
        """Ledgers per category (bookies, for unavailable bookies)."""
        ledgers: dict[str, set] = defaultdict(set)
        for violation in self.violations:
            ledgers[violation.category].add(violation.ledger_id)
        counts = {name: len(ledgers[name]) for name in cat.ALL}
        counts[cat.UNAVAILABLE_BOOKIES] = len(self.unavailable_bookies)
        counts[cat.SLOW_BOOKIES] = sum(v.category == cat.SLOW_BOOKIES for v in self.violations)
        return counts

    @property
    def problems(self) -> list[Violation]:
        return [v for v in self.violations if v.category not in cat.WARNINGS]

    @property
    def skipped_under_replicated(self) -> int:
        return len(self.under_replicated)

    def doc(self) -> dict:
        return {
            "schemaVersion": SCHEMA_VERSION,
            "checkedLedgers": self.checked,
            "skippedOpen": self.skipped_open,
            "skippedUnderReplicated": self.skipped_under_replicated,
            "underReplicatedLedgers": self.under_replicated,
            "durationSeconds": round(self.seconds, 3),
            "counts": self.counts,
            "violations": [v.doc() for v in self.violations],
            "unavailableBookies": self.unavailable_bookies,
            "nextSteps": self.next_steps(),
        }

    def next_steps(self) -> list[str]:
        """What to run about each unavailable bookie: see what losing it costs; and for a missing one (not
        registered), re-replicate what it held, or retire it for good."""
        missing = {m.bookie_id for m in self.missing_bookies}
        steps = []
        for bookie_id in self.unavailable_bookies:
            steps.append(f"bkctl cluster check-impact --bookie {bookie_id}")
            if bookie_id in missing:
                steps += [f"bkctl bookie recover {bookie_id}", f"bkctl bookie decommission {bookie_id}"]
        return steps


class Checker:
    """``progress``, in phases: the ledgers listed (unless given), their metadata read, the bookies' answers about
    each (bookie, ledger) (asked while the metadata is read: those already in are counted when the phase starts),
    the entries read with ``verify_entries``, the ledgers analysed."""

    def __init__(self, core, options: CheckOptions, progress: Progress = NO_PROGRESS):
        self.core = core
        self.options = options
        self.progress = progress
        self.registered: dict = {}
        self.failures: dict[str, tuple[int | None, str]] = {}  # bookie -> (ledger it failed on, the error)
        self.answers = 0  # (bookie, ledger) pairs of the first asking answered, or given up on
        self.counting_answers = False

    async def run(self) -> CheckReport:
        started = time.monotonic()
        report = CheckReport()
        options = self.options
        self.registered = {b.bookie_id: b for b in await asyncio.to_thread(self.core.registry.list, True, True)}
        under_replication = UnderReplicationManager(self.core.store)
        marked = {m.ledger_id: m for m in await asyncio.to_thread(lambda: list(under_replication.iter_marked()))}
        closed: dict[int, LedgerMetadata] = {}
        held: dict[tuple[str, int], AvailabilityOfEntries] = {}
        fetches = []  # bookies are asked about each chunk of ledgers while the next chunk's metadata arrives
        names = EnsembleNames()
        ids = options.ledger_ids
        if ids is None:
            self.progress.phase("listing ledgers", None, "ledgers")
            ids = await asyncio.to_thread(self._ledger_ids)
        self.progress.phase("reading ledger metadata", len(ids), "ledgers")
        read = 0
        async for chunk in self._ledger_chunks(ids):
            read += len(chunk)
            self.progress.advance(len(chunk))
            batch = {}
            for ledger_id, md in chunk:
                names.add(md)
                if not md.is_closed:
                    report.skipped_open += 1
                elif ledger_id in marked:
                    report.under_replicated.append(ledger_id)
                    self._under_replicated(report, marked[ledger_id])
                else:
                    closed[ledger_id] = batch[ledger_id] = md
            if options.replicas and batch:
                fetches.append(asyncio.ensure_future(self._fetch(self._wanted(batch), held, counted=True)))
        self.progress.advance(len(ids) - read)  # deleted while the check ran
        report.checked = len(closed)
        report.under_replicated.sort()
        if options.placement:
            for ledger_id, md in closed.items():
                report.violations.extend(self._placement(ledger_id, md))
        if options.replicas:
            pairs = sum(len(ledgers) for ledgers in self._wanted(closed).values())
            self.progress.phase("asking bookies", pairs, "replicas")
            self.progress.advance(self.answers)
            self.counting_answers = True
            failed = set().union(*await asyncio.gather(*fetches))
            self.counting_answers = False
            if failed:
                self.progress.phase(f"asking again in {options.recheck_delay:g} s", len(failed), "bookies")
            unknown = await self._recheck(failed, self._wanted(closed), held)
            if failed:
                self.progress.advance(len(failed))
            if options.verify_entries > 0:
                await self._verify_entries(closed, held, unknown, self.progress)
            missing = await asyncio.to_thread(missing_bookies, self.core.store, names)
            report.missing_bookies = [m for m in missing if m.ledgers]
            await self._replicas(report, closed, held, unknown, under_replication)
        if options.latency:
            report.violations.extend(await asyncio.to_thread(self._slow_bookies))
        now_ms = int(time.time() * 1000)
        for kind, done in (("placement", options.placement), ("replicas", options.replicas)):
            if done and options.record:
                await asyncio.to_thread(under_replication.set_check_time, kind, now_ms)
        report.seconds = time.monotonic() - started
        return report

    async def _ledger_chunks(self, ids: list[int], size: int = LEDGERS_PER_REQUEST):
        """The metadata of the ledgers ``ids``, read on a thread and handed over ``size`` at a time."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()

        def read() -> None:
            try:
                chunk = []
                for item in self._ledgers(ids):
                    chunk.append(item)
                    if len(chunk) >= size:
                        loop.call_soon_threadsafe(queue.put_nowait, chunk)
                        chunk = []
                loop.call_soon_threadsafe(queue.put_nowait, chunk)
                loop.call_soon_threadsafe(queue.put_nowait, None)
            except BaseException as exc:  # noqa: BLE001 - handed over: the consumer raises it, and must not wait forever
                loop.call_soon_threadsafe(queue.put_nowait, exc)

        reader = loop.run_in_executor(None, read)
        while (chunk := await queue.get()) is not None:
            if isinstance(chunk, BaseException):
                raise chunk
            yield chunk
        await reader

    def _ledger_ids(self) -> list[int]:
        return list(self.core.ledgers.iter_ledger_ids())

    def _ledgers(self, ids: Iterable[int]):
        wanted = self.options.ledger_ids
        seen = set()
        for ledger_id, md in self.core.ledgers.iter_ledgers(ids, on_corrupt=lambda exc: log.error("%s", exc)):
            seen.add(ledger_id)
            yield ledger_id, md
        if wanted is not None and len(seen) < len(set(wanted)):
            missing = sorted(set(wanted) - seen)
            raise NoSuchLedger(f"ledger {', '.join(map(str, missing))} does not exist")

    def _under_replicated(self, report: CheckReport, marker) -> None:
        grace = self.options.under_replicated_grace
        if grace is None or (marker.ctime is None and grace > 0):
            return  # allowed, or marked at an unknown time (a marker without ctime) while a grace is given
        if grace == 0 or time.time() * 1000 - marker.ctime > grace * 1000:
            report.violations.append(
                Violation(marker.ledger_id, cat.UNDER_REPLICATED_TOO_LONG, None, list(marker.replicas))
            )

    # ---- placement ----
    def _placement(self, ledger_id: int, md: LedgerMetadata) -> list[Violation]:
        rack_of = defaultdict(lambda: DEFAULT_RACK, {b: r.rack for b, r in self.registered.items()})
        racks = len({r.rack for r in self.registered.values()}) or 1
        worst = None
        for segment in md.segments:
            verdict = segment_verdict(segment.bookies, md.write_quorum_size, rack_of, racks)
            if verdict == FAIL or (verdict == MEETS_SOFT and worst is None):
                worst = (verdict, segment)
            if verdict == FAIL:
                break
        if worst is None:
            return []
        category = cat.PLACEMENT_FAIL if worst[0] == FAIL else cat.PLACEMENT_SOFT
        return [Violation(ledger_id, category, worst[1].first_entry_id, list(worst[1].bookies))]

    # ---- latency ----
    def _slow_bookies(self) -> list[Violation]:
        """The registered bookies whose p99 stands out (admin.top.flag_slow), from one scrape of each /metrics; a
        bookie whose metrics cannot be read is not judged (an unavailable one is reported by the replicas check)."""
        from admin.top import Sampler

        rows = Sampler(lambda: list(self.registered.values())).sample()
        for row in rows:
            if row.error:
                log.info("latency of bookie %s not compared: %s", row.bookie_id, row.error)
        return [
            Violation(None, cat.SLOW_BOOKIES, None, [r.bookie_id], reason="; ".join(r.slow)) for r in rows if r.slow
        ]

    # ---- replicas ----
    async def _replicas(self, report: CheckReport, ledgers: dict[int, LedgerMetadata], held, unknown, marks):
        report.unavailable_bookies = sorted(unknown | {m.bookie_id for m in report.missing_bookies})
        missing = {m.bookie_id: m for m in report.missing_bookies}
        for bookie_id in report.unavailable_bookies:
            ledger_id, error = self.failures.get(bookie_id, (None, None))
            if bookie_id in missing:
                error = f"not registered: missing, {missing[bookie_id].ledgers} ledgers name it"
            report.violations.append(Violation(ledger_id, cat.UNAVAILABLE_BOOKIES, None, [bookie_id], error=error))
        self.progress.phase("checking ledgers", len(ledgers), "ledgers")
        for ledger_id, md in ledgers.items():
            finding = self._analyse(ledger_id, md, held, unknown)
            self.progress.advance()
            if finding is not None:
                finding = await self._confirm(ledger_id, md, finding, marks, report)
            if finding is not None:
                report.violations.append(
                    Violation(
                        ledger_id,
                        finding.category,
                        finding.segment,
                        finding.bookies,
                        finding.missing_entries,
                        finding.missing_counts,
                    )
                )

    def _analyse(self, ledger_id, md, held, unknown):
        bookies = {b for s in md.segments for b in s.bookies}
        if bookies & unknown:
            return None  # a registered bookie that does not answer: reported as unavailable, not guessed about
        return analyse(md, {b: held.get((b, ledger_id), EMPTY) for b in bookies})

    async def _confirm(self, ledger_id, md, finding, marks, report: CheckReport):
        """Re-read before reporting: a ledger marked under-replicated meanwhile counts as one marked before; analyse
        again when its metadata changed (an ensemble change, a re-replication)."""
        for _ in range(REANALYSE):
            if self.options.before_report is not None:
                await self.options.before_report(ledger_id)
            if (marker := await asyncio.to_thread(marks.get, ledger_id)) is not None:
                report.checked -= 1
                report.under_replicated = sorted([*report.under_replicated, ledger_id])
                self._under_replicated(report, marker)
                return None
            try:
                current, _ = await asyncio.to_thread(self.core.ledgers.read, ledger_id)
            except NoSuchLedger:
                return None
            if current == md:
                return finding
            md = current
            if not md.is_closed:
                return None
            held, unknown = await self._ask_bookies({ledger_id: md})
            finding = self._analyse(ledger_id, md, held, unknown)
            if finding is None:
                return None
        return finding

    def _wanted(self, ledgers: dict[int, LedgerMetadata]) -> dict[str, set[int]]:
        """Which ledgers to ask each registered bookie about. Unregistered bookies are not asked: they hold
        nothing anyone can read."""
        wanted: dict[str, set[int]] = defaultdict(set)
        for ledger_id, md in ledgers.items():
            for segment in md.segments:
                for bookie_id in segment.bookies:
                    if bookie_id in self.registered:
                        wanted[bookie_id].add(ledger_id)
        return wanted

    async def _recheck(self, failed: set[str], wanted: dict[str, set[int]], held: dict) -> set[str]:
        """Ask the bookies that failed again after ``recheck_delay``; return those still failing and still
        registered (a bookie gone from the registry meanwhile holds nothing)."""
        if not failed:
            return set()
        await asyncio.sleep(self.options.recheck_delay)
        self.registered = {b.bookie_id: b for b in await asyncio.to_thread(self.core.registry.list, True, True)}
        gone = {b for b in failed if b not in self.registered}
        still = await self._fetch({b: wanted[b] for b in failed - gone}, held)
        log.info("recheck: %d bookies gone from the registry, %d still failing", len(gone), len(still))
        return still

    async def holdings(self, ledgers: dict[int, LedgerMetadata], probe_ends: bool = False):
        """The entry-level read of :meth:`run` for other tools: what each registered bookie holds of ``ledgers``
        (``(bookie, ledger) -> availability``; an unregistered bookie is not asked) and the registered bookies that
        failed twice. ``probe_ends``: a bookie that failed the listing is read instead (:meth:`_probe_ends`)."""
        self.registered = {b.bookie_id: b for b in await asyncio.to_thread(self.core.registry.list, True, True)}
        held, unknown = await self._ask_bookies(ledgers)
        if probe_ends and unknown:
            unknown = await self._probe_ends(ledgers, held, unknown)
        return held, unknown

    async def _probe_ends(self, ledgers: dict[int, LedgerMetadata], held: dict, failed: set[str]) -> set[str]:
        """Read, without fencing, the first and last entry of each final segment's share on each bookie of
        ``failed``, as BookKeeper's LedgerChecker does (Java bookies with DbLedgerStorage never answer the listing),
        and of a ledger with no final share there the last entry the bookie stores (entry -1). A bookie that answers
        every read is taken to hold its whole share but the ends it lacks (ENOENTRY), or nothing of a ledger it does
        not know (ENOLEDGER); one that a read fails on is returned."""
        window = asyncio.Semaphore(self.options.concurrency * 16)
        shares: dict[tuple[str, int], list[list[int]]] = defaultdict(list)  # the share of each final segment
        for ledger_id, md in ledgers.items():
            for bookie_id in {b for s in md.segments for b in s.bookies} & failed:
                shares[(bookie_id, ledger_id)] = []
            for first, last, bookies in segment_ranges(md):
                for index, bookie_id in enumerate(bookies):
                    if bookie_id in failed:
                        share = list(entries_of_bookie(index, first, last, md.ensemble_size, md.write_quorum_size))
                        shares[(bookie_id, ledger_id)] += [share] if share else []
        found: dict[tuple[str, int], set[int]] = defaultdict(set)  # entries read; -1 probes: the entry answered
        lacking: dict[tuple[str, int], set[int]] = defaultdict(set)
        none: set[tuple[str, int]] = set()  # ENOLEDGER: the bookie holds nothing of the ledger
        still: set[str] = set()

        async def read(bookie_id: str, ledger_id: int, entry_id: int) -> None:
            async with window:
                if bookie_id in still:  # a bookie that hangs costs one timeout, not one per read
                    return
                try:
                    answer = await self.core.bookie(bookie_id).read_entry(
                        ledger_id, entry_id, self.options.timeout, "probe entry"
                    )
                except BKError as exc:
                    log.warning("%s", exc)
                    still.add(bookie_id)
                    return
                if answer.status == ENOLEDGER:
                    none.add((bookie_id, ledger_id))
                elif answer.status == ENOENTRY:
                    lacking[(bookie_id, ledger_id)].add(entry_id)
                elif answer.status == EOK and len(answer.body) >= 16:
                    found[(bookie_id, ledger_id)].add(int.from_bytes(answer.body[8:16], "big", signed=True))
                else:
                    still.add(bookie_id)

        ends = {key: {e for share in parts for e in (share[0], share[-1])} or {-1} for key, parts in shares.items()}
        reads = [(b, lid, e) for (b, lid), entries in ends.items() for e in entries]
        await asyncio.gather(*(read(*r) for r in reads))
        for (bookie_id, ledger_id), parts in shares.items():
            if (bookie_id, ledger_id) in none:
                held[(bookie_id, ledger_id)] = EMPTY
            elif bookie_id not in still:
                gone = lacking.get((bookie_id, ledger_id), set())
                entries = (
                    [e for p in parts for e in p if e not in gone] if parts else found.get((bookie_id, ledger_id), ())
                )
                held[(bookie_id, ledger_id)] = AvailabilityOfEntries.from_entries(entries)
        return still

    async def _ask_bookies(self, ledgers: dict[int, LedgerMetadata]):
        """What each bookie holds of these ledgers, and the registered bookies that failed twice."""
        wanted = self._wanted(ledgers)
        held: dict[tuple[str, int], AvailabilityOfEntries] = {}
        unknown = await self._recheck(await self._fetch(wanted, held), wanted, held)
        if self.options.verify_entries > 0:
            await self._verify_entries(ledgers, held, unknown)
        return held, unknown

    async def _fetch(self, wanted: dict[str, set[int]], held: dict, counted: bool = False) -> set[str]:
        """Ask each bookie what it holds of the ledgers ``wanted`` of it; return those that failed. ``counted``:
        the first asking, whose answers the progress counts."""
        window = asyncio.Semaphore(self.options.concurrency)
        failed: set[str] = set()

        def answered(n: int) -> None:
            if counted:
                self.answers += n
                if self.counting_answers:
                    self.progress.advance(n)

        async def ask(bookie_id: str, chunk: list[int]) -> None:
            async with window:
                ledger_id = None
                answers = 0
                try:
                    async for ledger_id, status, data in self.core.bookie(bookie_id).list_entries(
                        chunk, self.options.timeout
                    ):
                        answers += 1
                        answered(1)
                        if status == EOK:
                            held[(bookie_id, ledger_id)] = AvailabilityOfEntries.decode(data)
                        elif status == ENOLEDGER:
                            held[(bookie_id, ledger_id)] = EMPTY
                        else:
                            raise BKError(f"bookie {bookie_id} answered {status_name(status)} for ledger {ledger_id}")
                    ledger_id = None
                except BKError as exc:
                    log.warning("%s", exc)
                    failed.add(bookie_id)
                    # kept so the report names the error and the ledger, not only "unavailable"; the recheck
                    # overwrites it with what the bookie says the second time
                    self.failures[bookie_id] = (ledger_id, str(exc))
                finally:
                    answered(len(chunk) - answers)  # the ledgers a failed request leaves: given up on

        jobs = []
        for bookie_id, ids in wanted.items():
            ordered = sorted(ids)
            for start in range(0, len(ordered), LEDGERS_PER_REQUEST):
                jobs.append(ask(bookie_id, ordered[start : start + LEDGERS_PER_REQUEST]))
        await asyncio.gather(*jobs)
        return failed

    async def _verify_entries(self, ledgers, held, failed, progress: Progress = NO_PROGRESS) -> None:
        """BookKeeper's costly "ledger check": read a share of all entries from every replica and count an
        unreadable or corrupt copy as missing. ``progress``: the entries read, of those sampled.

        The sample is drawn as it is read, one replica at a time, with at most ``concurrency * 16`` reads under
        way: memory stays flat however many entries the ledgers hold. Its size, for the progress total, is
        counted first: by arithmetic when every entry is read, else by drawing the same seeded sample once more."""
        share = self.options.verify_entries / 100.0
        limit = self.options.concurrency * 16
        replicas = [  # (ledger, its metadata, a bookie, its index in the segment's ensemble, the segment's entries)
            (ledger_id, md, bookie_id, index, first, last)
            for ledger_id, md in ledgers.items()
            for first, last, bookies in segment_ranges(md)
            for index, bookie_id in enumerate(bookies)
            if bookie_id not in failed and bookie_id in self.registered
        ]

        def sampled() -> Iterator[tuple[int, LedgerMetadata, str, Iterator[int]]]:
            """Each replica with the ids of its sampled entries, drawn lazily from a Random seeded alike at every
            call: consume each replica's ids before taking the next replica."""
            draw = random.Random(0)
            for ledger_id, md, bookie_id, index, first, last in replicas:
                ids = entries_of_bookie(index, first, last, md.ensemble_size, md.write_quorum_size)
                yield ledger_id, md, bookie_id, ids if share >= 1 else (e for e in ids if draw.random() < share)

        if share >= 1:
            total = sum(
                count_entries_of_bookie(index, first, last, md.ensemble_size, md.write_quorum_size)
                for _, md, _, index, first, last in replicas
            )
        else:
            total = sum(sum(1 for _ in ids) for *_, ids in sampled())
        progress.phase("reading entries", total, "entries")

        async def reader(ledger_id, bookie_id, digester, ids, lacking):
            """Read the entries of ``ids``, an iterator the replica's readers share: each entry is read once."""
            for entry_id in ids:
                try:
                    answer = await self.core.bookie(bookie_id).read_entry(
                        ledger_id, entry_id, self.options.timeout, "verify entry"
                    )
                    if answer.status != EOK:
                        raise BKError(f"status {answer.status}")
                    parse_entry(digester, answer.body, ledger_id, entry_id)
                except (BKError, CorruptEntry):
                    lacking.append(entry_id)
                progress.advance()

        for ledger_id, md, bookie_id, ids in sampled():
            digester = Digester(md.digest_type or self.core.config.digest_type, md.password or b"")
            lacking: list[int] = []
            head = list(itertools.islice(ids, limit))  # as many readers as entries, up to the limit
            pending = itertools.chain(head, ids)
            await asyncio.gather(*(reader(ledger_id, bookie_id, digester, pending, lacking) for _ in head))
            if lacking:
                keep = set(held.get((bookie_id, ledger_id), EMPTY)) - set(lacking)
                held[(bookie_id, ledger_id)] = AvailabilityOfEntries.from_entries(keep)

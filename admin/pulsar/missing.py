"""Every ledger Pulsar's metadata references, checked against BookKeeper: the reverse of the orphan search.

Pulsar's metadata is read as `pulsar orphans` reads it (admin.pulsar.metadata): managed ledgers' ledger lists,
cursors' ledgers, schema locators, and the compacted ledger a compaction cursor names. Each ledger it references
gets at most one reason:

| reason       | what is wrong                                                                              |
|--------------|--------------------------------------------------------------------------------------------|
| no-metadata  | no ledger metadata: the ledger was deleted (or never created) while Pulsar still names it;  |
|              | a current ledger may be an empty one its broker deleted before updating its list            |
| no-data      | metadata, but some entries have no copy on any bookie (``lost``: which ones)               |
| closed-head  | a managed ledger's current ledger, empty, and fenced under its writer: CLOSED by a recovery |
|              | (metadata version >= 2: OPEN, IN_RECOVERY, CLOSED; its writer closes it in one update; an   |
|              | ensemble change raises it too: harmless then unless a broker writes to it), or             |
|              | IN_RECOVERY for longer than ``min_age`` (apache/pulsar#26074)                              |
| in-recovery  | any other ledger IN_RECOVERY for longer than ``min_age``: a recovery that stopped          |
|              | (apache/pulsar#4599). Time from the znode's last change, when it entered IN_RECOVERY       |

A broker that unloads a topic closes the topic's current ledger itself, empty or not, and leaves it last in the list
(the next broker to load the topic drops an empty one): version 1, not reported.
Ledgers whose offload to tiered storage completed are read from there, and are not checked.

The bookies are asked what they hold as `cluster check` asks them (admin.check.checker: GET_LIST_OF_ENTRIES_OF_LEDGER,
up to 1000 ledgers per request, answered from their indexes; a bookie that fails is asked again), so every entry
of every final segment is checked for the cost of a request per bookie per 1000 ledgers: sampling entries would
save nothing. ``verify_entries`` also reads that share of the entries from every replica (BookKeeper's ledger
check), counting an unreadable copy as missing. A bookie that does not answer the listing (a Java bookie with
DbLedgerStorage never does) is read instead: the ends of its share of each final segment. A bookie that is not
registered is not asked: with a cookie it is down and its ledgers are not checked; without one it was decommissioned
and holds nothing. The last segment of a ledger that is not closed is not final (its writer may be adding to it):
only its earlier segments are checked.

A finding is judged again before it is reported: its owners' metadata re-read (a broker that trimmed the ledger
from its list meanwhile and deleted it leaves no finding), the ledger's metadata re-read and the bookies asked again.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from admin.check.checker import EMPTY
from admin.check.replicas import format_runs, lost_entries, segment_ranges
from admin.pulsar import metadata
from admin.pulsar.metadata import PulsarMetadata, Reference
from admin.pulsar.orphans import PulsarAudit
from bookie.codec.availability import AvailabilityOfEntries
from bookie.errors import CorruptData
from bookie.meta import ledger_metadata
from bookie.meta.cookies import CookieStore
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState
from bookie.meta.paths import ledger_path
from bookie.progress import NO_PROGRESS, Progress

NO_METADATA, NO_DATA, CLOSED_HEAD, IN_RECOVERY = "no-metadata", "no-data", "closed-head", "in-recovery"
REASONS = (NO_METADATA, NO_DATA, CLOSED_HEAD, IN_RECOVERY)
CHUNK = 5000  # ledgers whose bookies are asked at once
ASKS_IN_FLIGHT = 2
RECOVERED_CLOSE = 2  # metadata version of a ledger closed by a recovery, at the least: created, IN_RECOVERY, CLOSED

Held = dict[tuple[str, int], AvailabilityOfEntries]
# What the bookies hold of these ledgers, and the bookies that did not answer (Checker.holdings); called on
# ASKS_IN_FLIGHT threads of its own
Holdings = Callable[[dict[int, LedgerMetadata]], tuple[Held, set[str]]]
SKIP_NON_RECOVERABLE = "consumers behind them stop there unless the broker skips non-recoverable data"


def role(ref: Reference) -> str:
    """What the ledger is to its topic: ``current ledger``, ``cursor sub``, ``schema version 2``..."""
    if ref.kind == "ledger":
        return "current ledger" if ref.current else "ledger"
    if ref.kind == "cursor":
        return f"cursor {ref.cursor}"
    if ref.kind == "schema":
        return f"schema version {ref.schema_version}"
    return "compacted ledger"


@dataclass(frozen=True)
class Missing:
    ledger_id: int
    reason: str
    detail: str
    references: tuple[Reference, ...]
    state: str | None = None  # OPEN, IN_RECOVERY, CLOSED; None without metadata
    lost: tuple[tuple[int, int], ...] = ()  # no-data: inclusive runs of entries with no copy
    last_entry_id: int = -1

    def lost_text(self) -> str:
        """``all 3 entries``, ``entries 0-4, 9 (6)``."""
        count = sum(last - first + 1 for first, last in self.lost)
        if self.lost == ((0, self.last_entry_id),):
            return f"all {count} entries" if count != 1 else "its only entry"
        runs = format_runs(self.lost)
        return f"entries {runs} ({count})" if count != 1 else f"entry {runs}"

    def impact(self, ref: Reference) -> str:
        """What a broker will fail on, for the owner ``ref`` names."""
        lid, reason = self.ledger_id, self.reason
        if ref.kind == "ledger":
            if reason == NO_METADATA and ref.current:
                return (
                    f'a broker loading the topic drops ledger {lid} ("Ledger not found"): its messages are lost if it '
                    "held entries (Pulsar deletes an empty head before updating its list)"
                )
            if reason == NO_METADATA:
                what = f"its {ref.entries} entries" if ref.entries is not None else "its entries"
                return f"{what} are lost: reading ledger {lid} fails (NoSuchLedger); {SKIP_NON_RECOVERABLE}"
            if reason == NO_DATA:
                return f"{self.lost_text()} are lost: reading them fails; {SKIP_NON_RECOVERABLE}"
            if reason == CLOSED_HEAD:
                return (
                    "harmless if no broker serves the topic (idle or unloaded: the broker that loads it drops the empty"
                    f" head); if `pulsar-admin topics stats-internal` shows currentLedgerId {lid}, the broker writing"
                    " to it acknowledges messages that no reader will see (apache/pulsar#26074): unload the topic so"
                    " that it rolls over to a new ledger"
                )
            if ref.current:
                return f'the broker cannot open the topic until ledger {lid} is recovered ("Error while recovering")'
            return f"ledger {lid} was never closed: readers do not know where it ends until a recovery completes"
        if ref.kind == "cursor":
            if reason == IN_RECOVERY:
                return f"cursor {ref.cursor}: loading the topic fails while its ledger {lid} cannot be recovered"
            return (
                f"cursor {ref.cursor} loses its position: the broker rewinds it to the position in its znode, and "
                "messages acknowledged since are delivered again"
            )
        if ref.kind == "schema":
            return (
                f"schema version {ref.schema_version} is unreadable: producers and consumers with that schema "
                "cannot connect"
            )
        return "the compacted view is lost: readers of the compacted topic fail until the next compaction"

    def doc(self, ref: Reference) -> dict[str, object]:
        role = "current-ledger" if ref.kind == "ledger" and ref.current else ref.kind
        return {
            "ledgerId": self.ledger_id,
            "reason": self.reason,
            "role": role,
            "cursor": ref.cursor if ref.kind in ("cursor", "compacted") else None,
            "schemaVersion": ref.schema_version,
            "state": self.state,
            "lostEntries": [list(run) for run in self.lost] or None,
            "detail": self.detail,
            "impact": self.impact(ref),
        }


@dataclass
class Report:
    missing: list[Missing]
    pulsar: PulsarMetadata
    ledgers: int  # referenced ledgers checked
    offloaded: int  # referenced ledgers in tiered storage, not checked
    unavailable: list[str]  # registered bookies that did not answer, twice; unregistered ones with a cookie
    problems: list[str]
    seconds: float

    def topics(self) -> dict[str, list[tuple[Missing, Reference]]]:
        """Each topic's findings, topics and ledgers ascending."""
        found: dict[str, list[tuple[Missing, Reference]]] = defaultdict(list)
        for item in self.missing:
            for ref in item.references:
                found[ref.topic].append((item, ref))
        return {topic: found[topic] for topic in sorted(found)}

    def by_reason(self) -> dict[str, int]:
        return {reason: sum(1 for m in self.missing if m.reason == reason) for reason in REASONS}


@dataclass
class _Judged:
    missing: list[Missing] = field(default_factory=list)
    unavailable: set[str] = field(default_factory=set)
    unregistered: set[str] = field(default_factory=set)  # not asked (not registered), but with a cookie
    problems: list[str] = field(default_factory=list)
    ledgers: int = 0
    offloaded: int = 0


class MissingLedgers:
    """Checks what ``audit.pulsar`` references against ``audit.ledgers`` and the bookies (``holdings``)."""

    def __init__(self, audit: PulsarAudit, holdings: Holdings, min_age: float):
        self.audit, self.holdings, self.min_age = audit, holdings, min_age

    def run(self, now: float | None = None, progress: Progress = NO_PROGRESS) -> Report:
        """``progress``: Pulsar's metadata read (as orphans reads it), then the referenced ledgers' metadata."""
        started = time.monotonic()
        audit = self.audit
        pulsar = metadata.read_pulsar_metadata(audit.pulsar, audit.read_cursor_position, progress)
        judged = self._judge(pulsar, sorted(pulsar.references), now, progress)
        if judged.missing:
            again = metadata.reread(
                audit.pulsar, (r for m in judged.missing for r in m.references), audit.read_cursor_position
            )
            confirmed = self._judge(again, sorted({m.ledger_id for m in judged.missing} & set(again.references)), now)
            judged.missing = confirmed.missing
            judged.unavailable |= confirmed.unavailable | confirmed.unregistered
            judged.problems += confirmed.problems
        return Report(
            judged.missing,
            pulsar,
            judged.ledgers,
            judged.offloaded,
            sorted(judged.unavailable | judged.unregistered),
            judged.problems,
            time.monotonic() - started,
        )

    def _judge(
        self, pulsar: PulsarMetadata, ids: list[int], now: float | None, progress: Progress = NO_PROGRESS
    ) -> _Judged:
        out = _Judged()
        now = time.time() if now is None else now
        references = {i: tuple(pulsar.references[i]) for i in ids}
        ids = [i for i in ids if not all(r.offloaded for r in references[i])]
        out.offloaded = len(references) - len(ids)
        out.ledgers = len(ids)
        progress.phase("reading ledger metadata", len(ids), "ledgers")
        found: dict[int, tuple[LedgerMetadata, int, int]] = {}  # ledger -> metadata, znode version, mtime (ms)
        tree, root, manager = self.audit.ledgers, self.audit.ledgers.root, self.audit.manager
        paths = (ledger_path(root, i, manager) for i in ids)
        # the bookies are asked about each chunk (on other threads) while the next chunk's metadata arrives
        asks: list[Future[tuple[Held, set[str]]]] = []
        batch: dict[int, LedgerMetadata] = {}
        with ThreadPoolExecutor(ASKS_IN_FLIGHT) as pool:
            for lid, (path, data, stat) in zip(ids, tree.read_batched(paths), strict=True):
                progress.advance()
                if data is None or stat is None:
                    out.missing.append(Missing(lid, NO_METADATA, "no ledger metadata", references[lid]))
                    continue
                try:
                    md = ledger_metadata.parse(data, path)
                except CorruptData as exc:
                    out.problems.append(str(exc))
                    continue
                found[lid] = (md, stat.version, stat.mtime)
                if md.state == LedgerState.IN_RECOVERY or segment_ranges(md):
                    batch[lid] = md
                if len(batch) >= CHUNK:
                    asks.append(pool.submit(self.holdings, batch))
                    batch = {}
            if batch:
                asks.append(pool.submit(self.holdings, batch))
            held: Held = {}
            for ask in asks:
                answer, silent = ask.result()
                held.update(answer)
                out.unavailable |= silent
        # a bookie not asked is not registered: one with a cookie is down (stopped, restarting, cut off) and its
        # copies are unknown; one without was decommissioned and holds nothing
        asked = (lid for lid, (md, _, _) in found.items() if md.state == LedgerState.IN_RECOVERY or segment_ranges(md))
        unasked = {b for lid in asked for s in found[lid][0].segments for b in s.bookies if (b, lid) not in held}
        if unasked - out.unavailable:
            out.unregistered = (unasked - out.unavailable) & set(CookieStore(self.audit.ledgers.store).list())
        for lid, (md, version, mtime) in found.items():
            verdict = self._verdict(
                lid, md, version, now - mtime / 1000, references[lid], held, out.unavailable, out.unregistered
            )
            if isinstance(verdict, Missing):
                out.missing.append(verdict)
            elif verdict:
                out.problems.append(verdict)
        out.missing.sort(key=lambda m: m.ledger_id)
        return out

    def _verdict(
        self,
        lid: int,
        md: LedgerMetadata,
        version: int,
        since_change: float,
        refs: tuple[Reference, ...],
        held: Held,
        unknown: set[str],
        unregistered: set[str],
    ) -> Missing | str | None:
        """The finding about one ledger with metadata; a problem (why it could not be checked); or None."""
        state = md.state.name
        current = any(r.kind == "ledger" and r.current for r in refs)

        def made(reason: str, detail: str, lost: Iterable[tuple[int, int]] = ()) -> Missing:
            return Missing(lid, reason, detail, refs, state, tuple(lost), md.last_entry_id)

        if md.is_closed and md.last_entry_id < 0:
            if current and version >= RECOVERED_CLOSE:
                return made(
                    CLOSED_HEAD,
                    f"the current ledger, empty and CLOSED by a recovery or an ensemble change (version {version})",
                )
            return None
        bookies = {b for s in md.segments for b in s.bookies}
        if silent := sorted(bookies & unknown):
            return f"ledger {lid}: not checked, bookie {', '.join(silent)} did not answer"
        if down := sorted(bookies & unregistered):
            return f"ledger {lid}: not checked, bookie {', '.join(down)} is not registered"
        holding = {b: held.get((b, lid), EMPTY) for b in bookies}
        if lost := lost_entries(md, holding):
            return made(NO_DATA, "no bookie holds some of its entries", lost)
        if md.state == LedgerState.IN_RECOVERY and since_change >= self.min_age:
            minutes = f"for {since_change / 60:.0f} min"
            if current and not any(len(a) for a in holding.values()):
                return made(CLOSED_HEAD, f"the current ledger, empty and IN_RECOVERY {minutes}")
            return made(IN_RECOVERY, f"IN_RECOVERY {minutes}: its recovery stopped")
        return None

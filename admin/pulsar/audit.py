"""Every ledger of a cluster, next to Pulsar's metadata: its owner, who references it, and whether it is orphaned.

The orphan rules (README "Pulsar"): a ledger is reported as orphaned only when all of these hold —

1. Pulsar created it (custom metadata ``application=pulsar``) and its component is one whose references bkctl reads
   (a managed ledger's data or cursor ledger, a schema ledger, a compacted-topic ledger);
2. nothing in Pulsar's metadata references it: no ``ManagedLedgerInfo``, no cursor's ``cursorsLedgerId``, no schema
   locator, no compaction cursor's ``CompactedTopicLedger``;
3. the metadata of its owner could be read (an unreadable ``ManagedLedgerInfo`` or cursor protects the topic's
   ledgers; a compaction cursor whose cursor ledger could not be read protects the topic's compacted ledgers);
4. it is at least ``min_age`` old: by the ``ctime`` in its metadata (format 3, written when the client sets it),
   else by its znode's creation time — a broker may be creating it right now;
5. a compacted-topic ledger is neither open (a compaction may be writing it) nor the newest of its topic (its
   compaction may be acknowledging it right now, in a cursor ledger entry not yet readable).

Sizes are the ``length`` in ledger metadata: what the writer wrote, known once a ledger is closed (0 while it is
open; open ledgers are counted apart). The bookies hold each byte on ``write quorum`` bookies: ``stored`` bytes.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from admin.pulsar.metadata import PulsarMetadata, Reference
from admin.pulsar.ownership import Kind, Owner, owner_of, split_topic
from bookie.errors import CorruptData, InvalidArgument
from bookie.meta import ledger_metadata
from bookie.meta.layout import RESERVED
from bookie.meta.paths import ledger_path, parse_ledger_path
from bookie.meta.tree import ZooKeeperTree
from bookie.progress import NO_PROGRESS, Progress

DEFAULT_MIN_AGE = 3600.0  # seconds

REFERENCED, ORPHANED, YOUNG, PROTECTED, NOT_PULSAR = "referenced", "orphaned", "young", "protected", "not-pulsar"


@dataclass(frozen=True)
class LedgerFacts:
    """What ledger metadata says about a ledger, as the audit needs it."""

    ledger_id: int
    path: str
    version: int  # of the ledger's znode
    closed: bool
    length: int
    write_quorum: int
    ctime_ms: int
    age_source: str  # "metadata" (its ctime) or "znode" (the znode's creation time)
    owner: Owner | None

    @property
    def stored(self) -> int:
        return self.length * self.write_quorum


@dataclass(frozen=True)
class Verdict:
    ledger: LedgerFacts
    status: str
    age: float  # seconds
    references: tuple[Reference, ...]
    reason: str = ""

    def doc(self) -> dict[str, object]:
        owner = self.ledger.owner
        return {
            "ledgerId": self.ledger.ledger_id,
            "status": self.status,
            "kind": owner.kind.value if owner else None,
            "owner": owner.describe() if owner else None,
            "topic": owner.topic if owner else None,
            "referencedBy": [r.describe() for r in self.references],
            "ageSeconds": round(self.age, 1),
            "ageFrom": self.ledger.age_source,
            "state": "CLOSED" if self.ledger.closed else "OPEN",
            "bytes": self.ledger.length if self.ledger.closed else None,
            "storedBytes": self.ledger.stored if self.ledger.closed else None,
            "reason": self.reason or None,
        }


def ledger_ids(tree: ZooKeeperTree, root: str) -> list[int]:
    """Every ledger id under ``root``, listed level by level with pipelined reads (the short and long forms)."""
    top = [f"{root}/{name}" for name in sorted(tree.store.children(root)) if name not in RESERVED and name.isdigit()]
    found: list[int] = []
    for width, depth in ((2, 2), (3, 4)):
        level = [p for p in top if len(p.rsplit("/", 1)[1]) == width]
        for _ in range(depth):
            level = [
                f"{path}/{child}"
                for path, children in tree.children_many(level)
                for child in sorted(children or ())
                if child.isdigit() or child.startswith("L")
            ]
        for path in level:
            if path.rsplit("/", 1)[1].startswith("L"):
                try:
                    found.append(parse_ledger_path(root, path))
                except InvalidArgument:
                    continue
    return sorted(found)


def read_ledgers(
    tree: ZooKeeperTree,
    root: str,
    manager: str,
    ids: Iterable[int],
    problems: list[str],
    progress: Progress = NO_PROGRESS,
) -> Iterator[LedgerFacts]:
    """The facts of each ledger of ``ids`` that exists, read pipelined; unreadable metadata goes to ``problems``.
    ``progress``: ledgers read, of ``ids``."""
    ids = list(ids)
    paths = (ledger_path(root, i, manager) for i in ids)
    progress.phase("reading ledger metadata", len(ids), "ledgers")
    for ledger_id, (path, data, stat) in zip(ids, tree.read_many(paths), strict=True):
        progress.advance()
        if data is None or stat is None:
            continue
        try:
            yield facts(ledger_id, path, data, stat.version, stat.ctime)
        except CorruptData as exc:
            problems.append(str(exc))


def facts(ledger_id: int, path: str, data: bytes, version: int, znode_ctime: int) -> LedgerFacts:
    md = ledger_metadata.parse(data, path)  # no znode ctime given: tells whether the metadata has its own
    return LedgerFacts(
        ledger_id=ledger_id,
        path=path,
        version=version,
        closed=md.is_closed,
        length=md.length,
        write_quorum=md.write_quorum_size,
        ctime_ms=md.ctime if md.ctime is not None else znode_ctime,
        age_source="metadata" if md.ctime is not None else "znode",
        owner=owner_of(md.custom_metadata),
    )


@dataclass
class Judge:
    """Applies the orphan rules to ledgers, given Pulsar's metadata read once (see the module docstring)."""

    pulsar: PulsarMetadata
    min_age: float = DEFAULT_MIN_AGE
    now: float = field(default_factory=time.time)
    newest_compacted: dict[str, int] = field(default_factory=dict)  # topic -> its newest compacted ledger

    def note_compacted(self, ledgers: Iterable[LedgerFacts]) -> None:
        """Learn each topic's newest compacted ledger: the closed ones among ``ledgers`` and those referenced."""
        newest = self.newest_compacted
        for ledger in ledgers:
            owner = ledger.owner
            if owner is not None and owner.kind == Kind.COMPACTED and owner.topic and ledger.closed:
                newest[owner.topic] = max(newest.get(owner.topic, -1), ledger.ledger_id)
        for ledger_id, references in self.pulsar.references.items():
            for reference in references:
                if reference.kind == "compacted":
                    newest[reference.topic] = max(newest.get(reference.topic, -1), ledger_id)

    def verdict(self, ledger: LedgerFacts) -> Verdict:
        references = tuple(self.pulsar.references.get(ledger.ledger_id, ()))
        age = self.now - ledger.ctime_ms / 1000
        owner = ledger.owner

        def made(status: str, reason: str = "") -> Verdict:
            return Verdict(ledger, status, age, references, reason)

        if references:
            return made(REFERENCED)
        if owner is None:
            return made(NOT_PULSAR)
        if (reason := self.protection(ledger, owner)) is not None:
            return made(PROTECTED, reason)
        if age < self.min_age:
            return made(YOUNG, f"younger than {self.min_age:g} s")
        return made(ORPHANED, self.why_orphaned(owner))

    def protection(self, ledger: LedgerFacts, owner: Owner) -> str | None:
        """Why an unreferenced Pulsar ledger must not be called orphaned, or None."""
        pulsar = self.pulsar
        if owner.kind == Kind.OTHER:
            return f"component {owner.component or '<none>'}: bkctl does not read where Pulsar references it"
        if owner.managed_ledger is not None and owner.managed_ledger in pulsar.unreadable:
            return f"its managed ledger's metadata is unreadable: {pulsar.unreadable[owner.managed_ledger]}"
        if owner.schema_id is not None and owner.schema_id in pulsar.unreadable:
            return f"its schema locator is unreadable: {pulsar.unreadable[owner.schema_id]}"
        if owner.kind == Kind.COMPACTED:
            if owner.topic in pulsar.compaction_unknown:
                return "its topic's compaction cursor could not be read"
            if not ledger.closed:
                return "open: a compaction may be writing it"
            if owner.topic is not None and self.newest_compacted.get(owner.topic) == ledger.ledger_id:
                return "the newest compacted ledger of its topic: a compaction may be acknowledging it"
        return None

    def why_orphaned(self, owner: Owner) -> str:
        pulsar = self.pulsar
        if owner.kind == Kind.SCHEMA:
            exists = owner.schema_id in pulsar.schemas
            return "not in its schema locator" if exists else "its schema locator is gone"
        name = owner.managed_ledger
        if owner.kind == Kind.COMPACTED:
            return "not its topic's compacted ledger"
        if name is not None and name not in pulsar.managed_ledgers:
            return "its managed ledger is gone"
        if owner.kind == Kind.CURSOR:
            return "not its cursor's ledger (or the cursor is gone)"
        return "not in its managed ledger's list"


# ---- usage ----
@dataclass
class UsageRow:
    ledgers: int = 0
    bytes: int = 0  # closed ledgers' length
    stored: int = 0  # that times their write quorum
    open: int = 0  # open ledgers (their bytes are not known from metadata yet)

    def doc(self) -> dict[str, int]:
        return {"ledgers": self.ledgers, "bytes": self.bytes, "storedBytes": self.stored, "openLedgers": self.open}


@dataclass
class Usage:
    """Bytes per tenant / namespace / topic, and the orphaned and not-Pulsar's ones: ``(level, name) -> row``."""

    rows: dict[tuple[str, str], UsageRow] = field(default_factory=dict)

    def add(self, level: str, name: str, ledger: LedgerFacts) -> None:
        row = self.rows.setdefault((level, name), UsageRow())
        row.ledgers += 1
        if ledger.closed:
            row.bytes += ledger.length
            row.stored += ledger.stored
        else:
            row.open += 1

    def count(self, verdict: Verdict) -> None:
        """A ledger goes to the topic that references it (else, when unreferenced but young or protected, the
        topic its metadata names), to ``orphaned``, or to ``not Pulsar's``; ``total`` counts every ledger."""
        ledger = verdict.ledger
        self.add("total", "all ledgers", ledger)
        if verdict.status == ORPHANED:
            self.add("orphaned", "orphaned", ledger)
            return
        if verdict.status == NOT_PULSAR:
            self.add("other", "not Pulsar's", ledger)
            return
        topic = verdict.references[0].topic if verdict.references else (ledger.owner.topic if ledger.owner else None)
        if topic is None:
            self.add("other", "Pulsar's, no topic", ledger)
            return
        tenant, namespace, topic = split_topic(topic)
        self.add("tenant", tenant, ledger)
        self.add("namespace", namespace, ledger)
        self.add("topic", topic, ledger)

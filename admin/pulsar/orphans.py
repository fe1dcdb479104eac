"""The audit, run once over a cluster (:meth:`PulsarAudit.run`), and the deletion of the orphans it found
(:meth:`PulsarAudit.delete`).

Deletion re-checks each ledger right before deleting it, and deletes only what is still an orphan then:

1. the ledger's znode is re-read: gone (deleted meanwhile, e.g. by an earlier run) is done; another version than
   the audit saw (a broker opened, recovered or closed it) is skipped;
2. its owner's metadata is re-read (its managed ledger and cursors, its schema locator, or its topic's compaction
   cursor): a reference to it now, or metadata that cannot be read, skips it;
3. the ledger's znode is deleted at the version read in 1, in one ZooKeeper transaction with a check that every
   znode read in 2 is still at the version read — when Pulsar's metadata shares the bookies' ZooKeeper. A broker
   that adds the ledger to its metadata between 2 and 3 fails the transaction, and the ledger stays. With Pulsar's
   metadata in another ZooKeeper the check covers the ledger's own znode only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from admin.pulsar import audit, metadata
from admin.pulsar.audit import ORPHANED, Judge, Verdict
from admin.pulsar.formats import parse_position_info
from admin.pulsar.metadata import CursorPositionReader, PulsarMetadata
from admin.pulsar.ownership import Kind
from bookie._proto.pulsar_ml_data_formats_pb2 import PositionInfo
from bookie.errors import BKError, CorruptData
from bookie.meta.tree import ZooKeeperTree
from bookie.progress import NO_PROGRESS, Progress

if TYPE_CHECKING:
    from bookie.client import BookKeeper

DELETED, SKIPPED, GONE = "deleted", "skipped", "gone"


@dataclass(frozen=True)
class Deletion:
    ledger_id: int
    outcome: str  # deleted | skipped | gone
    reason: str = ""

    def doc(self) -> dict[str, object]:
        return {"ledgerId": self.ledger_id, "outcome": self.outcome, "reason": self.reason or None}


@dataclass
class Report:
    verdicts: list[Verdict]
    pulsar: PulsarMetadata
    problems: list[str]  # ledger metadata that could not be read
    seconds: float
    ledgers: int  # how many ledgers the cluster has (or were asked about)

    @property
    def orphans(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.status == ORPHANED]


class PulsarAudit:
    """The ledgers of one cluster (``ledgers``: a tree whose root is the ledgers root) against Pulsar's metadata
    (``pulsar``: a tree whose root is Pulsar's metadata root, in the same session or another)."""

    def __init__(
        self,
        ledgers: ZooKeeperTree,
        manager: str,
        pulsar: ZooKeeperTree,
        min_age: float = audit.DEFAULT_MIN_AGE,
        read_cursor_position: CursorPositionReader | None = None,
        same_zookeeper: bool = False,
    ):
        self.ledgers = ledgers
        self.manager = manager
        self.pulsar = pulsar
        self.min_age = min_age
        self.read_cursor_position = read_cursor_position
        self.same_zookeeper = same_zookeeper

    def run(
        self,
        ids: list[int] | None = None,
        now: float | None = None,
        referenced_too: bool = True,
        progress: Progress = NO_PROGRESS,
    ) -> Report:
        """Verdicts on ``ids`` (every ledger when None), ascending. Without ``referenced_too`` only the ledgers
        nothing references get one (and only their metadata is read): all an orphan search needs. ``progress``:
        Pulsar's metadata read, the ledgers listed, their metadata read (a phase each)."""
        started = time.monotonic()
        pulsar = metadata.read_pulsar_metadata(self.pulsar, self.read_cursor_position, progress)
        if ids is None:
            progress.phase("listing ledgers", None, "ledgers")
            ids = audit.ledger_ids(self.ledgers, self.ledgers.root)
        wanted = ids if referenced_too else [i for i in ids if i not in pulsar.references]
        problems: list[str] = []
        read = audit.read_ledgers(self.ledgers, self.ledgers.root, self.manager, wanted, problems, progress)
        facts = list(read)
        judge = Judge(pulsar, self.min_age, time.time() if now is None else now)
        judge.note_compacted(facts)
        verdicts = [judge.verdict(f) for f in facts]
        return Report(verdicts, pulsar, problems, time.monotonic() - started, len(ids))

    def delete(
        self,
        orphans: list[Verdict],
        before_recheck: Callable[[int], None] | None = None,
        before_delete: Callable[[int], None] | None = None,
    ) -> Iterator[Deletion]:
        """Delete ``orphans`` that are still orphans, one at a time (see the module docstring).
        ``before_recheck(ledger_id)`` and ``before_delete(ledger_id)`` run at those moments: injection points
        where tests change the world."""
        for verdict in orphans:
            if before_recheck is not None:
                before_recheck(verdict.ledger.ledger_id)
            yield self._delete_one(verdict, before_delete)

    def _delete_one(self, verdict: Verdict, before_delete: Callable[[int], None] | None) -> Deletion:
        seen = verdict.ledger
        lid = seen.ledger_id
        got = self.ledgers.get(seen.path)
        if got is None:
            return Deletion(lid, GONE, "already deleted")
        data, stat = got
        if stat.version != seen.version:
            return Deletion(lid, SKIPPED, "its metadata changed since the audit (a broker may be using it)")
        try:
            now_facts = audit.facts(lid, seen.path, data, stat.version, stat.ctime)
        except CorruptData as exc:
            return Deletion(lid, SKIPPED, str(exc))
        owner = now_facts.owner
        if owner is None or owner.kind == Kind.OTHER:
            return Deletion(lid, SKIPPED, "no longer a ledger of Pulsar's that bkctl audits")
        fresh = metadata.recheck(
            self.pulsar,
            owner.managed_ledger,
            owner.schema_id,
            owner.topic if owner.kind == Kind.COMPACTED else None,
            self.read_cursor_position,
        )
        judge = Judge(fresh, self.min_age, time.time())
        judge.note_compacted(())  # the compacted ledger referenced now: one newer than this leaves it judged
        again = judge.verdict(now_facts)
        if again.status != ORPHANED:
            why = ", ".join(r.describe() for r in again.references) or again.reason
            return Deletion(lid, SKIPPED, f"no longer an orphan: {again.status} ({why})")
        checks = sorted(fresh.versions.items()) if self.same_zookeeper else []
        if before_delete is not None:
            before_delete(lid)
        if not self.ledgers.delete_if_unchanged(seen.path, seen.version, checks):
            return Deletion(lid, SKIPPED, "it or its owner's metadata changed while deleting")
        self.ledgers.store.delete_empty_parents(seen.path, self.ledgers.root)
        return Deletion(lid, DELETED)


def cursor_position_reader(client: Callable[[], BookKeeper]) -> CursorPositionReader:
    """Reads a cursor ledger's last position from the bookies with ``client()`` (made on first use), as an
    administrator and without fencing: the entry at the LAC and any after it that a bookie already has (the
    writer's last add is confirmed only by its next one)."""

    def read(ledger_id: int) -> PositionInfo | None:
        bk: Any = client()  # BookKeeper.run is not annotated yet
        reader = bk.run(bk.core.open(ledger_id, None, False))
        last = reader.metadata.last_entry_id if reader.metadata.is_closed else reader.lac
        if not reader.metadata.is_closed:
            while True:
                try:
                    bk.run(reader.read_entry(last + 1))
                except BKError:  # no such entry (or no bookie has it): the last one was before
                    break
                last += 1
        if last < 0:
            return None
        entry = bk.run(reader.read_entry(last))
        try:
            return parse_position_info(entry.payload, f"ledger {ledger_id} entry {last}")
        except CorruptData:
            return None

    return read

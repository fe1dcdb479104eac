"""Rewrite a bookie id in ledger metadata: BookKeeper's ``updateBookieInLedger`` (UpdateLedgerOp), its
``updateledgers`` (a bookie switching between its IP and host name as its id) and ``bookieid search-replace``.

Every ledger is read; those whose ensembles name the old id get it replaced by the new one in every segment, by a
compare-and-set on the version read (re-read and retried when a writer changed the ledger meanwhile, as
MetadataUpdateLoop does), at most ``rate`` ledgers a second and ``limit`` ledgers in all. The data stays where it
is: the new id must reach the same bookie, on the same disks (its cookie follows with `bkctl cookie update`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

from bookie.errors import InvalidArgument, MetadataVersionConflict, NoSuchLedger
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.ledger_metadata import LedgerMetadata, Segment
from bookie.meta.registration import require_not_registered
from bookie.meta.store import MetadataStore
from bookie.progress import NO_PROGRESS, Progress


@dataclass(frozen=True)
class Replaced:
    ledger_id: int
    segments: int  # segments whose ensemble named the old id
    version: int | None  # the znode's version after the update (None: dry run)

    def doc(self) -> dict[str, object]:
        return {"ledgerId": self.ledger_id, "segments": self.segments, "znodeVersion": self.version}


def _replace(md: LedgerMetadata, old: str, new: str) -> tuple[LedgerMetadata, int]:
    segments = tuple(
        Segment(s.first_entry_id, tuple(new if b == old else b for b in s.bookies)) if old in s.bookies else s
        for s in md.segments
    )
    return md.with_changes(segments=segments), sum(old in s.bookies for s in md.segments)


class _Rate:
    """At most ``per_second`` calls a second (None: no limit)."""

    def __init__(self, per_second: float | None):
        self.interval = 1.0 / per_second if per_second else 0.0
        self.next = time.monotonic()

    def wait(self) -> None:
        now = time.monotonic()
        if self.next > now:
            time.sleep(self.next - now)
        self.next = max(now, self.next) + self.interval


def check_replacement(store: MetadataStore, old: str, new: str) -> None:
    """Refuse what cannot be right: the same id twice, or an old id still in use by a running bookie (exit 3, as
    UpdateBookieInLedgerCommand refuses an active source bookie)."""
    if old == new:
        raise InvalidArgument(f"{old} is both the bookie id to replace and its replacement")
    require_not_registered(store, old, "replace its id in ledger metadata")


def replace_bookie_in_ledgers(
    store: MetadataStore,
    old: str,
    new: str,
    limit: int | None = None,
    rate: float | None = None,
    dry_run: bool = False,
    progress: Progress = NO_PROGRESS,
    ledger_ids: list[int] | None = None,
) -> Iterator[Replaced]:
    """The ledgers changed (or that would be, with ``dry_run``), as they are. ``ledger_ids``: those to look at
    (every ledger when None, listed first). ``progress``: ledgers read, of all those."""
    manager = LedgerManager(store)
    throttle = _Rate(rate)
    changed = 0
    ids = list(manager.iter_ledger_ids()) if ledger_ids is None else ledger_ids
    progress.phase("reading ledgers", len(ids), "ledgers")
    for ledger_id in ids:
        if limit is not None and changed >= limit:
            return
        progress.advance()
        while True:
            try:
                md, version = manager.read(ledger_id)
            except NoSuchLedger:  # deleted meanwhile
                break
            updated, segments = _replace(md, old, new)
            if not segments:
                break
            if dry_run:
                changed += 1
                yield Replaced(ledger_id, segments, None)
                break
            throttle.wait()
            try:
                written = manager.write(ledger_id, updated, version)
            except MetadataVersionConflict:
                continue  # a writer changed it: read it again
            except NoSuchLedger:
                break
            changed += 1
            yield Replaced(ledger_id, segments, written)
            break

"""cluster check --verify-entries against bookies that answer from memory: the sample is drawn as it is read (never
every entry id first), its size known before the first read, and the same entries sampled at every run."""

import asyncio
from types import SimpleNamespace

import admin.check.checker as checker
from admin.check.checker import Checker, CheckOptions
from bookie.client.bookie_client import ENOENTRY, EOK
from bookie.codec.availability import AvailabilityOfEntries
from bookie.codec.digest import Digester, DigestType
from bookie.codec.entry import frame_entry
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState, Segment

from support.progress import RecordingProgress

LEDGER, ENTRIES, BOOKIES = 7, 3000, ("a:1", "b:1", "c:1")


class Bookies:
    """``core`` of a Checker: every bookie holds every entry but ``missing`` ((bookie, entry) pairs); each read
    notes how many entry ids were drawn and not yet read at that moment."""

    def __init__(self, missing=()):
        self.missing = set(missing)
        self.digester = Digester(DigestType.CRC32C)
        self.drawn = 0
        self.read: list[tuple[str, int]] = []
        self.most_waiting = 0

    def bookie(self, bookie_id):
        async def read_entry(ledger_id, entry_id, timeout, what):
            self.most_waiting = max(self.most_waiting, self.drawn - len(self.read))
            self.read.append((bookie_id, entry_id))
            await asyncio.sleep(0)
            if (bookie_id, entry_id) in self.missing:
                return SimpleNamespace(status=ENOENTRY, body=b"")
            body = frame_entry(self.digester, ledger_id, entry_id, -1, 1, b"x")
            return SimpleNamespace(status=EOK, body=body)

        return SimpleNamespace(read_entry=read_entry)


def verify(bookies: Bookies, percent: float, monkeypatch) -> tuple[RecordingProgress, dict]:
    drawing = checker.entries_of_bookie

    def counted(*args):
        for entry_id in drawing(*args):
            bookies.drawn += 1
            yield entry_id

    monkeypatch.setattr(checker, "entries_of_bookie", counted)
    md = LedgerMetadata(
        3, 2, 2, (Segment(0, BOOKIES),), LedgerState.CLOSED, ENTRIES - 1, ENTRIES, DigestType.CRC32C, b""
    )
    check = Checker(bookies, CheckOptions(verify_entries=percent, concurrency=1))
    check.registered = dict.fromkeys(BOOKIES)
    held = {(b, LEDGER): AvailabilityOfEntries.from_entries(range(ENTRIES)) for b in BOOKIES}
    progress = RecordingProgress()
    asyncio.run(check._verify_entries({LEDGER: md}, held, set(), progress))
    return progress, held


def test_every_entry_is_read_while_it_is_drawn_with_the_total_known_first(monkeypatch):
    bookies = Bookies(missing=[("b:1", 1)])  # entry 1 is on b:1 and c:1
    progress, held = verify(bookies, 100, monkeypatch)
    assert [(p.name, p.total) for p in progress.phases] == [("reading entries", 2 * ENTRIES)]  # WQ 2 of E 3
    progress.assert_complete()
    assert len(bookies.read) == len(set(bookies.read)) == 2 * ENTRIES
    assert bookies.most_waiting <= 16  # concurrency 1: 16 reads under way; never the 6000 ids drawn up front
    assert 1 not in held[("b:1", LEDGER)] and 1 in held[("c:1", LEDGER)]


def test_a_share_is_sampled_alike_at_every_run_and_counted_before_reading(monkeypatch):
    runs = []
    for _ in range(2):
        bookies = Bookies()
        progress, _ = verify(bookies, 10, monkeypatch)
        progress.assert_complete()  # the total counted first is what was read
        runs.append(sorted(bookies.read))
    assert runs[0] == runs[1]
    assert 0.05 * 2 * ENTRIES < len(runs[0]) < 0.15 * 2 * ENTRIES

"""A bookie's ledger (or index) directories: which are writable, which are full, and where new files go —
BookKeeper's ``LedgerDirsManager``, ``LedgerDirsMonitor`` and ``DiskChecker`` in one small class.

Interface (kept small so that any ledger storage can use it; InterleavedLedgerStorage here, DbLedgerStorage too)::

    dirs = LedgerDirs([Path("/d1/ledgers"), Path("/d2/ledgers")], DiskThresholds(0.95, 0.90))
    dirs.all                     # the configured directories, in configuration order (files are under <dir>/current)
    dirs.writable, dirs.full     # the state as of the last check(); every dir starts writable
    dirs.has_writable            # False: the bookie turns read-only
    dirs.usage(d)                # used share of d's disk at the last check, 0..1
    dirs.for_ledger(ledger_id)   # the dir a ledger is bound to by id: all[signSafeMod(ledgerId, n)]
                                 # (DbLedgerStorage: one SingleDirectoryDbLedgerStorage per dir)
    dirs.pick_for_new_log()      # a random writable dir for a new entry log (readonly: any dir with room left)
    dirs.pick_for_new_index(exclude=d)   # the same for a new index file (moved off a full dir: not d)
    dirs.has_room_for_new_index(d)       # a full dir with room left keeps an index file no other dir can take
    dirs.find("3/e/3e.idx")      # the first dir whose current/ holds that file: its full path, or None
    dirs.check()                 # measure every dir, move dirs between writable and full, tell the listeners
    dirs.add_listener(fn)        # fn(dir, event), event "full", "almost_full" or "writable", on the checking thread
    dirs.total_space(), dirs.free_space()   # of the distinct filesystems under the dirs

The rules are BookKeeper's: a dir is full when its disk's used share is over ``diskUsageThreshold`` (used = 1 -
usable/total, as Java's File.getUsableSpace); over ``diskUsageWarnThreshold`` it is almost full (an entry log there
is rolled over to another dir). A full dir becomes writable again once under the threshold — but when every dir is
full (the bookie read-only) only once the usage of all of them together is under ``diskUsageLwmThreshold`` (which
defaults to the threshold). With no writable dir, new entry logs and index files may still be created (journal
replay, compaction) in dirs with more than ``minUsableSizeForEntryLogCreation`` /
``minUsableSizeForIndexFileCreation`` bytes left. A dir that cannot be measured or written is a failed disk: the
error propagates from :meth:`check` (BookKeeper shuts the bookie down).

Thread safety: :meth:`check` runs on one thread (the disk monitor); the state it publishes is replaced whole
(tuples), so picks and reads from other threads see one state or the next, never a mix.
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple

from bookie.errors import BookieIOError

log = logging.getLogger(__name__)
CURRENT = "current"
DirEvent = Literal["full", "almost_full", "writable"]
Listener = Callable[[Path, DirEvent], None]


class NoWritableLedgerDir(BookieIOError):
    """No directory can take a new file (BookKeeper's NoWritableLedgerDirException)."""


class DiskSpace(NamedTuple):
    usable: int  # bytes an unprivileged writer may still use (statvfs f_bavail)
    total: int
    device: int  # st_dev: dirs on one filesystem count once in totals

    @property
    def used(self) -> float:
        return 1.0 - self.usable / self.total if self.total else 1.0


def disk_space(directory: Path) -> DiskSpace:
    """What BookKeeper's DiskChecker reads: ``File.getUsableSpace`` / ``getTotalSpace`` of the dir's filesystem."""
    st = os.statvfs(directory)
    return DiskSpace(st.f_bavail * st.f_frsize, st.f_blocks * st.f_frsize, os.stat(directory).st_dev)


@dataclass(frozen=True)
class DiskThresholds:
    """BookKeeper's keys: diskUsageThreshold, diskUsageWarnThreshold, diskUsageLwmThreshold (None: the threshold),
    minUsableSizeForEntryLogCreation, minUsableSizeForIndexFileCreation."""

    threshold: float = 0.95
    warn: float = 0.90
    lwm: float | None = None
    # BookKeeper's default is written ``(long) 1.2 * logSizeLimit``: the cast binds first, so it is logSizeLimit
    min_usable_for_new_log: int = 1 << 30
    min_usable_for_new_index: int = 100 << 20


def sign_safe_mod(dividend: int, divisor: int) -> int:
    """BookKeeper's MathUtils.signSafeMod (Python's % is already non-negative for a positive divisor)."""
    return dividend % divisor


class LedgerDirs:
    """The directories of one kind (ledger, or index) of one bookie. See the module docstring."""

    def __init__(
        self,
        dirs: Sequence[Path | str],
        thresholds: DiskThresholds | None = None,
        measure: Callable[[Path], DiskSpace] = disk_space,
    ):
        if not dirs:
            raise ValueError("no directories")
        self.all: tuple[Path, ...] = tuple(Path(d) for d in dirs)
        if len(set(self.all)) != len(self.all):
            raise ValueError(f"a directory is listed twice: {', '.join(map(str, self.all))}")
        self.thresholds = thresholds or DiskThresholds()
        self._measure = measure
        self._writable: tuple[Path, ...] = self.all
        self._usage: dict[Path, float] = dict.fromkeys(self.all, 0.0)
        self._listeners: list[Listener] = []
        self._random = random.Random()

    # ---- state ----
    @property
    def writable(self) -> tuple[Path, ...]:
        return self._writable

    @property
    def full(self) -> tuple[Path, ...]:
        writable = self._writable
        return tuple(d for d in self.all if d not in writable)

    @property
    def has_writable(self) -> bool:
        return bool(self._writable)

    def is_full(self, directory: Path) -> bool:
        return directory not in self._writable

    def usage(self, directory: Path) -> float:
        return self._usage[directory]

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    # ---- placement ----
    def for_ledger(self, ledger_id: int) -> Path:
        return self.all[sign_safe_mod(ledger_id, len(self.all))]

    def pick_for_new_log(self) -> Path:
        return self._pick(self.thresholds.min_usable_for_new_log, None)

    def pick_for_new_index(self, exclude: Path | None = None) -> Path:
        return self._pick(self.thresholds.min_usable_for_new_index, exclude)

    def _pick(self, min_usable: int, exclude: Path | None) -> Path:
        candidates = [d for d in self._writable if d != exclude]
        if not candidates and not self._writable:
            # read-only: replay and compaction may still write where room is left
            candidates = [d for d in self.all if d != exclude and self._measure(d).usable > min_usable]
        if not candidates:
            raise NoWritableLedgerDir(
                f"no writable directory among {', '.join(map(str, self.all))}"
                + (f" other than {exclude}" if exclude is not None else "")
            )
        return self._random.choice(candidates)

    def has_room_for_new_index(self, directory: Path) -> bool:
        """Whether a full dir may still take an index file (isDirWritableForNewIndexFile)."""
        return directory in self.all and self._measure(directory).usable > self.thresholds.min_usable_for_new_index

    def find(self, relative: str | Path) -> Path | None:
        for directory in self.all:
            path = directory / CURRENT / relative
            if path.exists():
                return path
        return None

    # ---- space ----
    def _spaces(self) -> dict[Path, DiskSpace]:
        spaces = {}
        for directory in self.all:
            try:
                spaces[directory] = self._measure(directory)
            except OSError as exc:
                raise BookieIOError(f"ledger directory {directory} failed its disk check: {exc}") from exc
        return spaces

    @staticmethod
    def _distinct(spaces: dict[Path, DiskSpace]) -> list[DiskSpace]:
        return list({s.device: s for s in spaces.values()}.values())

    def total_space(self) -> int:
        return sum(s.total for s in self._distinct(self._spaces()))

    def free_space(self) -> int:
        return sum(s.usable for s in self._distinct(self._spaces()))

    # ---- the disk checker ----
    def check(self) -> bool:
        """Measure every dir and update the state (LedgerDirsMonitor.check); True when a dir changed state."""
        t = self.thresholds
        spaces = self._spaces()
        for d, space in spaces.items():
            self._usage[d] = space.used
        before = self._writable
        writable = [d for d in before if spaces[d].used <= t.threshold]
        for d in before:
            if d not in writable:
                log.error("ledger directory %s is out of space: usage %.1f%%", d, 100 * spaces[d].used)
                self._tell(d, "full")
            elif spaces[d].used > t.warn:
                log.warning("ledger directory %s is almost full: usage %.1f%%", d, 100 * spaces[d].used)
                self._tell(d, "almost_full")
        full = [d for d in self.all if d not in before]
        if full:
            distinct = self._distinct(spaces)
            free, total = sum(s.usable for s in distinct), sum(s.total for s in distinct)
            all_together = 1.0 - free / total if total else 1.0
            may_return = bool(writable) or all_together < (t.lwm if t.lwm is not None else t.threshold)
            returning = [d for d in full if may_return and spaces[d].used <= t.threshold]
            for d in returning:
                log.info("ledger directory %s is writable again: usage %.1f%%", d, 100 * spaces[d].used)
            writable += returning
        self._writable = tuple(d for d in self.all if d in writable)  # configuration order
        for d in self._writable:
            if d not in before:
                self._tell(d, "writable")
        return self._writable != before

    def _tell(self, directory: Path, event: DirEvent) -> None:
        for listener in self._listeners:
            listener(directory, event)

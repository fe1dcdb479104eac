"""How long work reports its progress: as a sequence of phases, each announced with its total before it starts
(``None`` where no total is known), then advanced towards it. The library calls a :class:`Progress`; the CLI's is
a bar on a terminal (bkctl/terminal.py), a test's records the calls."""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    def phase(self, name: str, total: int | None, unit: str = "items", total_bytes: int | None = None) -> None:
        """A new phase begins: ``total`` items (and ``total_bytes`` bytes, where bytes are what takes long)."""

    def advance(self, n: int = 1, size: int = 0) -> None:
        """``n`` more items (and ``size`` more bytes) of the current phase are done."""


class NoProgress:
    """Reports nowhere: the default of every function that takes a ``progress``."""

    def phase(self, name: str, total: int | None, unit: str = "items", total_bytes: int | None = None) -> None:
        pass

    def advance(self, n: int = 1, size: int = 0) -> None:
        pass


NO_PROGRESS = NoProgress()

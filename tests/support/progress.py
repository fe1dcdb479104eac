"""A :class:`bookie.progress.Progress` that records what it was told, for tests of the library's progress."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Phase:
    name: str
    total: int | None
    unit: str
    total_bytes: int | None
    done: int = 0
    bytes: int = 0


class RecordingProgress:
    def __init__(self) -> None:
        self.phases: list[Phase] = []

    def phase(self, name: str, total: int | None, unit: str = "items", total_bytes: int | None = None) -> None:
        self.phases.append(Phase(name, total, unit, total_bytes))

    def advance(self, n: int = 1, size: int = 0) -> None:
        assert self.phases, "advanced before any phase was announced"
        self.phases[-1].done += n
        self.phases[-1].bytes += size

    def named(self, name: str) -> Phase:
        [found] = [p for p in self.phases if p.name == name]
        return found

    def assert_complete(self) -> None:
        """Every phase with a total reached it exactly (and its bytes, when it counts bytes)."""
        for p in self.phases:
            if p.total is not None:
                assert p.done == p.total, p
            if p.total_bytes is not None:
                assert p.bytes == p.total_bytes, p


def show_bars(monkeypatch) -> None:
    """Make bkctl draw its progress bars on stderr as on a terminal (a CliRunner's stderr is none)."""
    monkeypatch.setattr("bkctl.terminal.stderr_is_terminal", lambda: True)

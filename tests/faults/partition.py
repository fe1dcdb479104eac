"""Network partitions of one bookie. Not yet available: see ``Partitioner.reason``."""

from __future__ import annotations


class Partitioner:
    def __init__(self):
        self.available = False
        self.reason = "not implemented yet"

    def cut(self, bookie) -> None:
        raise NotImplementedError

    def heal(self, bookie) -> None:
        raise NotImplementedError

    def heal_all(self) -> None:
        pass

"""The fault suite's cluster: its own ZooKeeper (the nemesis kills it) and five bookies, shared by the module.

Its directory is not under pytest's basetemp (which keeps only the last three runs, and other runs on the machine
rotate it away): it is removed when every schedule passed and kept, with its logs, when one failed."""

from dataclasses import dataclass

import pytest
from faults.cluster import kept_cluster


@dataclass
class Tally:
    """Entries the disk-fault tests saw acknowledged and read back (``tests/faults/run --disk-faults`` prints it)."""

    acknowledged: int = 0
    read_back: int = 0

    def check(self, got: list[bytes], expected: list[bytes]) -> None:
        """``expected`` were acknowledged; ``got`` is what reads returned of them, in order."""
        self.acknowledged += len(expected)
        self.read_back += sum(g == e for g, e in zip(got, expected, strict=False))
        assert got == expected

    def render(self) -> str:
        return (
            f"entries acknowledged: {self.acknowledged}\n"
            f"entries read back:    {self.read_back}\n"
            f"entries lost:         {self.acknowledged - self.read_back}"
        )


TALLY = Tally()


@pytest.fixture
def tally() -> Tally:
    return TALLY


def pytest_unconfigure(config):
    if TALLY.acknowledged:  # after pytest's own summary: the last line is the one scripts look for
        print(TALLY.render())


@pytest.fixture(scope="module")
def fault_cluster(request):
    yield from kept_cluster(request, "bkctl-faults-")


@pytest.fixture
def disk(tmp_path):
    """A lossy disk (tests/faults/lossyfs) mounted for the test; its modules skip where FUSE is missing."""
    from faults.lossyfs.mount import LossyMount

    mount = LossyMount(tmp_path / "store", tmp_path / "mnt")
    mount.mount()
    yield mount
    mount.unmount()

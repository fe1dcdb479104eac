"""The power-loss profile of the fault suite (CI): five bookies on lossy disks (interleaved, sorted and
DbLedgerStorage, one or two ledger directories), fixed seeds, each a ~30 s schedule of power cuts to one bookie, two
and all five, timed cuts (the N-th sync, a checkpoint, an entry-log rotation, a compaction, the start after a cut)
with torn writes, checked ledger by ledger as the other faults are. ``BKCTL_FAULT_SEED=<seed>`` runs that seed's
schedule instead; ``tests/faults/run --power-loss --long`` runs schedules for as long as asked."""

import os

import pytest
from faults.cluster import kept_cluster
from faults.lossyfs.mount import fuse_missing
from faults.suite import POWER_SEEDS, SHORT_SECONDS, Totals, run_schedule

pytestmark = [pytest.mark.root, pytest.mark.slow]
if reason := fuse_missing():
    pytest.skip(f"lossyfs cannot mount here: {reason}", allow_module_level=True)
SEEDS = [int(os.environ["BKCTL_FAULT_SEED"])] if os.environ.get("BKCTL_FAULT_SEED") else list(POWER_SEEDS)
_checked: set[int] = set()
_totals = Totals(power=True)


@pytest.fixture(scope="module")
def power_cluster(request):
    """The cluster on lossy disks; its directory is kept, with the logs and the disks, when a schedule failed."""
    yield from kept_cluster(request, "bkctl-power-", power=True)


@pytest.mark.parametrize("seed", SEEDS)
def test_nothing_acknowledged_is_lost_when_the_power_goes(power_cluster, seed):
    run = run_schedule(power_cluster, seed, SHORT_SECONDS, _checked)
    _totals.add(run)
    print(f"\n{_totals.render()}")
    if not run.ok:
        pytest.fail(run.report(), pytrace=False)

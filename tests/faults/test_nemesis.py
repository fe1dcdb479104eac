"""The short profile of the fault suite (CI): fixed seeds, each a ~30 s schedule of every kind of fault, checked
ledger by ledger. ``BKCTL_FAULT_SEED=<seed>`` runs that seed's schedule instead; ``tests/faults/run --long`` runs
schedules for as long as asked."""

import os

import pytest
from faults.partition import Partitioner
from faults.suite import SHORT_SECONDS, SHORT_SEEDS, Totals, run_schedule

pytestmark = pytest.mark.slow
SEEDS = [int(os.environ["BKCTL_FAULT_SEED"])] if os.environ.get("BKCTL_FAULT_SEED") else list(SHORT_SEEDS)
_checked: set[int] = set()
_totals = Totals()


@pytest.fixture(scope="module")
def partitioner():
    p = Partitioner()
    if not p.available:
        print(f"\npartition faults skipped: {p.reason}")
    yield p
    p.heal_all()


@pytest.mark.parametrize("seed", SEEDS)
def test_nothing_acknowledged_is_lost_under_faults(fault_cluster, partitioner, seed):
    run = run_schedule(fault_cluster, seed, SHORT_SECONDS, _checked, partitioner)
    _totals.add(run)
    print(f"\n{_totals.render()}")
    if not run.ok:
        pytest.fail(run.report(), pytrace=False)

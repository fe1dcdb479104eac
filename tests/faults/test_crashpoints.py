"""The crash-point sweep (faults/crashpoints): every sync of each scripted workload cut in turn, on both storages;
after each cut the bookie starts on what the disk kept (or refuses, with a reason, having acknowledged nothing) and
every entry it acknowledged before the cut reads back exactly.

The sweep runs once for the module (three cases at a time, ~3 minutes for all of them on two cores); each test
checks one (workload, storage) case of it. ``python -m faults.crashpoints`` runs the same from a shell.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from faults.crashpoints import STORAGES, WORKLOADS, sweep
from faults.crashpoints.sweep import SweepResult
from faults.lossyfs.mount import fuse_missing

pytestmark = pytest.mark.root
if reason := fuse_missing():
    pytest.skip(f"lossyfs cannot mount here: {reason}", allow_module_level=True)

# Known losses, each a bug of the bookie named by its suspect in issue 28's crash-consistency audit (S1..S12): the
# case fails until the fix lands, then its xfail turns red (strict) and the entry is removed from here.
KNOWN_FAILURES: dict[tuple[str, str], str] = {}

CASES = [
    pytest.param(
        w.name,
        storage,
        id=f"{w.name}-{storage}",
        marks=[pytest.mark.xfail(strict=True, reason=KNOWN_FAILURES[w.name, storage])]
        if (w.name, storage) in KNOWN_FAILURES
        else [],
    )
    for w in WORKLOADS
    for storage in STORAGES
    if storage in w.storages
]


_SWEPT: dict[frozenset[tuple[str, str]], SweepResult] = {}  # a sweep runs once per selection and process


@pytest.fixture(scope="module")
def swept(request, zookeeper):
    """The sweep of the cases this run selected (all, unless -k narrows them), keyed by (workload, storage). Its
    directory is not under pytest's basetemp (other runs on the machine rotate that away): removed when every test
    here went as expected, kept with its disks, snapshots and bookie logs when one did not."""
    selected = {
        (item.callspec.params["workload"], item.callspec.params["storage"])
        for item in request.session.items
        if item.module is request.module and hasattr(item, "callspec")
    }
    key = frozenset(selected)
    if key in _SWEPT:  # set up again: pytest-xdist tears module fixtures down when it does not know the next test yet
        yield {(c.workload, c.storage): c for c in _SWEPT[key].cases}
        return
    workloads = [w for w in WORKLOADS if any(name == w.name for name, _ in selected)]
    storages = tuple(s for s in STORAGES if any(storage == s for _, storage in selected))
    directory = Path(tempfile.mkdtemp(prefix="bkctl-crashpoints-"))
    failed_before = request.session.testsfailed
    result = _SWEPT[key] = sweep(
        workloads, storages, directory, progress=print, zk_address=zookeeper.address, only=selected
    )
    yield {(c.workload, c.storage): c for c in result.cases}
    reporter = request.config.pluginmanager.getplugin("terminalreporter")
    capture = request.config.pluginmanager.getplugin("capturemanager")
    if reporter is not None and capture is not None:  # the table in the run's output, passed or not
        with capture.global_and_fixture_disabled():
            reporter.write_sep("-", "crash-point sweep")
            reporter.write_line(result.render())
    if request.session.testsfailed == failed_before:
        shutil.rmtree(directory, ignore_errors=True)
    else:
        print(f"\nthe crash-point sweep's disks, snapshots and bookie logs are kept in {directory}")


@pytest.mark.parametrize(("workload", "storage"), CASES)
def test_every_crash_point(swept, workload, storage):
    case = swept[workload, storage]
    assert case.error is None, case.error
    syncs = case.points[-1].number
    first = case.points[0].number
    assert [p.number for p in case.points] == list(range(first, syncs + 1)), "a crash point was not checked"
    assert case.acknowledged > 0 and case.points[-1].acknowledged > 0
    for point in case.refusals:
        assert point.refused, f"crash point {point.number}: the start was refused without a reason"
    failures = "\n".join(p.describe() for p in case.failures)
    assert not failures, f"{workload} on {storage} ({case.directory}):\n{failures}"


def test_a_crash_point_expects_what_was_acknowledged_before_the_next_sync():
    """The rule of the checker: an acknowledgement received before sync k + 1 completed binds crash point k; deleted
    ledgers bind nothing, formatted ones nothing once the format began; the cookie is the one of that moment."""
    from faults.crashpoints.sweep import Ack, Recording

    recording = Recording("seed", acks=[Ack(1, 0, 1.0), Ack(1, 1, 2.0), Ack(2, 0, 1.5), Ack(3, 0, 1.0)])
    recording.deleted.add(3)
    recording.forgotten[2] = 1.8
    assert recording.expected(1.2) == {1: 0}
    assert recording.expected(1.8) == {1: 0, 2: 0}
    assert recording.expected(float("inf")) == {1: 1}
    recording.cookie = [(float("-inf"), b"old"), (3.0, None), (5.0, b"new")]
    assert [recording.cookie_at(t) for t in (0.0, 3.0, 3.5, 6.0)] == [b"old", b"old", None, b"new"]

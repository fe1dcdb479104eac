"""Moving the ledger id generator past ids written by a restore, on the real ZooKeeper."""

from __future__ import annotations

from bookie.meta import idgen
from bookie.meta.idgen import _bump, _take_sequence, advance_past, generate_ledger_id
from bookie.meta.paths import SHORT_ID_LIMIT

from support.progress import RecordingProgress


def test_a_create_and_delete_pair_advances_the_sequence_by_one(cluster):
    """What advance_past's docstring says it measured: 100 pairs in a multi, then the next id is 101 further; and
    rounds of multis in flight at once add up."""
    parent = f"{cluster.root}/idgen"
    before = _take_sequence(cluster, parent)
    _bump(cluster, parent, [100])
    assert _take_sequence(cluster, parent) == before + 101
    _bump(cluster, parent, [500] * 9 + [7])
    assert _take_sequence(cluster, parent) == before + 101 + 4507 + 1


def test_advance_past_a_short_id(cluster):
    first = generate_ledger_id(cluster)
    assert advance_past(cluster, 5000) > 5000
    following = generate_ledger_id(cluster)
    assert first < 5000 < following <= 5002  # moved past, not far past
    assert not cluster.zk.get_children(f"{cluster.root}/idgen")  # no throw-away child left
    assert not cluster.zk.exists(f"{cluster.root}/idgen-long")  # still the short generator


def test_a_long_bump_shows_its_progress_in_ids_one_probe_at_a_time(cluster, monkeypatch):
    """A restore's million ids take most of a minute: the bump is a phase with its total, stepped at each probe."""
    monkeypatch.setattr(idgen, "PROBE_PAIRS", 1000)
    steps = []

    class Steps(RecordingProgress):
        def advance(self, n: int = 1, size: int = 0) -> None:
            steps.append(n)
            super().advance(n, size)

    progress = Steps()
    start = generate_ledger_id(cluster)
    assert advance_past(cluster, 5000, progress=progress) > 5000
    [phase] = progress.phases
    assert (phase.name, phase.total, phase.unit) == ("moving the ledger id generator", 5000 - start - 1, "ids")
    progress.assert_complete()
    assert len(steps) >= 5 and max(steps) <= 1001  # the first round of 500, then at most 1000 pairs and a probe
    advance_past(cluster, 5000, progress=progress)  # already past; and the long generator takes one create
    advance_past(cluster, SHORT_ID_LIMIT + 1, progress=progress)
    assert len(progress.phases) == 1


def test_advance_past_is_a_no_op_when_already_past(cluster):
    advance_past(cluster, 1200)
    before = generate_ledger_id(cluster)
    advance_past(cluster, 1200)
    advance_past(cluster, 7)
    assert generate_ledger_id(cluster) - before <= 3  # only the probes took ids


def test_advance_past_a_long_id(cluster):
    target = (3 << 32) | 17
    assert advance_past(cluster, target) == 4 << 32
    ledger_id = generate_ledger_id(cluster)
    assert ledger_id > target and ledger_id >> 32 == 4
    assert cluster.zk.get_children(f"{cluster.root}/idgen-long") == ["HOB-0000000004"]
    advance_past(cluster, target)  # already past: nothing created
    advance_past(cluster, 12)
    assert cluster.zk.get_children(f"{cluster.root}/idgen-long") == ["HOB-0000000004"]
    assert generate_ledger_id(cluster) == ledger_id + 1


def test_advance_past_the_short_limit_moves_to_the_long_generator(cluster):
    generate_ledger_id(cluster)
    advance_past(cluster, SHORT_ID_LIMIT)
    assert generate_ledger_id(cluster) >> 32 == 1


def test_a_short_id_far_ahead_moves_to_the_long_generator_unless_the_layout_holds_short_ids_only(cluster, monkeypatch):
    """Millions of ids of bumping would take minutes: the long generator is past every short id at once. A layout
    of short ids only (legacyhierarchical) is bumped however far."""
    monkeypatch.setattr(idgen, "SHORT_BUMP_LIMIT", 1000)
    far = generate_ledger_id(cluster) + 1500
    assert advance_past(cluster, far, long_ids=False) > far
    assert far < generate_ledger_id(cluster) < SHORT_ID_LIMIT
    assert not cluster.exists(f"{cluster.root}/idgen-long")
    assert advance_past(cluster, far + 1500) == 1 << 32
    assert generate_ledger_id(cluster) >> 32 == 1

"""Placement repair on live bookies: racks set with `bookies racks set` after the ledgers were written make some
segments fail placement; `cluster repair-placement` moves the fewest replicas, `cluster check` is clean again, and
every entry reads back."""

import asyncio
import json
import os
import signal

from bookie.client import BookKeeper

from support.checks import check, write_ledgers


def entries(bk, ledger_id):
    md = bk.ledger_metadata(ledger_id)
    return [e.payload for e in bk.open_ledger(ledger_id).read(0, md.last_entry_id)]


def set_racks(bkctl, uri, racks):
    for bookie_id, rack in racks.items():
        result = bkctl("-u", uri, "bookies", "racks", "set", bookie_id, "--rack", rack)
        assert result.exit_code == 0, result.stderr


def placement_failures(bkctl, uri):
    code, report = check(bkctl, uri, "--placement")
    return code, sorted(v["ledgerId"] for v in report["violations"] if "NOT_ADHERING" in v["category"])


def test_ledgers_written_before_the_racks_are_repaired(harness, bkctl):
    """The acceptance case: 6 bookies, 7 ledgers written on one (default) rack, then two racks of three."""
    uri = harness.service_uri
    bookies = [b.bookie_id for b in harness.start(6)]
    ledgers = write_ledgers(uri, 4, quorum=(3, 3, 2), entries=40)
    ledgers += write_ledgers(uri, 2, quorum=(2, 2, 2), entries=40) + write_ledgers(uri, 1, quorum=(4, 2, 2), entries=40)
    assert placement_failures(bkctl, uri) == (0, [])
    with BookKeeper(uri) as bk:
        before = {lid: bk.ledger_metadata(lid) for lid in ledgers}
    rack_a = set(before[ledgers[0]].segments[0].bookies)
    racks = {b: "/rack-a" if b in rack_a else "/rack-b" for b in bookies}
    set_racks(bkctl, uri, racks)

    def fails(md):
        wq, ensemble = md.write_quorum_size, md.segments[0].bookies
        windows = [{racks[ensemble[(i + w) % len(ensemble)]] for w in range(wq)} for i in range(len(ensemble))]
        return any(len(w) < 2 for w in windows)

    failing = sorted(lid for lid, md in before.items() if fails(md))
    assert ledgers[0] in failing
    assert placement_failures(bkctl, uri) == (3, failing)

    dry = bkctl("-u", uri, "cluster", "repair-placement", "--dry-run", "-o", "json")
    assert dry.exit_code == 0, dry.stderr
    plan = json.loads(dry.stdout)
    assert plan["dryRun"] and plan["clean"] and plan["unrepairable"] == []
    assert sorted({m["ledgerId"] for m in plan["moves"]}) == failing
    assert all(m["toRack"] != m["fromRack"] for m in plan["moves"])
    with BookKeeper(uri) as bk:
        assert {lid: bk.ledger_metadata(lid) for lid in ledgers} == before  # a dry run changes nothing

    result = bkctl("-u", uri, "cluster", "repair-placement", "--yes", "-o", "json")
    assert result.exit_code == 0, result.stderr
    done = json.loads(result.stdout)
    assert done["clean"] and len(done["report"]["moved"]) == len(plan["moves"]) == len(done["moves"])
    assert done["remaining"]["moves"] == [] and done["remaining"]["failingSegments"] == 0
    # a (3,3,2) ledger on one rack needs one move; BP-54's aim too: as few moves as possible
    assert len([m for m in plan["moves"] if m["ledgerId"] == ledgers[0]]) == 1

    code, report = check(bkctl, uri)  # placement and replicas: the targets hold what the write-set rule says
    assert code == 0, report["violations"]
    with BookKeeper(uri) as bk:
        for lid in ledgers:
            assert entries(bk, lid) == [b"entry-%d" % i for i in range(40)]
    again = bkctl("-u", uri, "cluster", "repair-placement", "--yes")
    assert (again.exit_code, again.stdout.splitlines()[-1]) == (0, "no segment fails placement")


def test_an_open_ledgers_last_segment_is_listed_and_repaired_once_closed(harness, bkctl):
    uri = harness.service_uri
    bookies = [b.bookie_id for b in harness.start(4)]
    with BookKeeper(uri) as bk:
        writer = bk.create_ledger(3, 3, 2)
        writer.add_entries(b"open-%d" % i for i in range(10))
        rack_a = set(writer.ensemble)
        set_racks(bkctl, uri, {b: "/rack-a" if b in rack_a else "/rack-b" for b in bookies})
        result = bkctl("-u", uri, "cluster", "repair-placement", "--yes", "-o", "json")
        assert result.exit_code == 0, result.stderr  # `cluster check` skips open ledgers: it is clean
        done = json.loads(result.stdout)
        assert done["moves"] == [] and [u["ledgerId"] for u in done["unrepairable"]] == [writer.ledger_id]
        assert done["unrepairable"][0]["reason"].startswith("the ledger is open")
        writer.add_entries(b"open-%d" % i for i in range(10, 20))  # the writer was never disturbed
        writer.close()
        result = bkctl("-u", uri, "cluster", "repair-placement", "--yes", "-o", "json")
        assert result.exit_code == 0 and len(json.loads(result.stdout)["report"]["moved"]) == 1
        assert entries(bk, writer.ledger_id) == [b"open-%d" % i for i in range(20)]


def test_too_few_racks_is_listed_with_why_and_exits_3(harness, bkctl):
    """E 3 W 2 on two racks: a cycle of three write quorums cannot all span two racks."""
    uri = harness.service_uri
    bookies = [b.bookie_id for b in harness.start(4)]
    (ledger_id,) = write_ledgers(uri, 1, quorum=(3, 2, 2), entries=10)
    with BookKeeper(uri) as bk:
        ensemble = set(bk.ledger_metadata(ledger_id).segments[0].bookies)
    set_racks(bkctl, uri, {b: "/rack-a" if b in ensemble else "/rack-b" for b in bookies})
    result = bkctl("-u", uri, "cluster", "repair-placement", "--dry-run")
    assert result.exit_code == 3
    assert "no choice among the 1 other writable bookies (1 rack(s))" in result.stdout


def test_new_ensembles_follow_the_mapping(harness, bkctl):
    uri = harness.service_uri
    bookies = sorted(b.bookie_id for b in harness.start(4))
    racks = {b: "/rack-a" if i < 2 else "/rack-b" for i, b in enumerate(bookies)}
    set_racks(bkctl, uri, racks)
    with BookKeeper(uri) as bk:
        for _ in range(10):
            ledger = bk.create_ledger(2, 2, 2)
            assert {racks[b] for b in ledger.ensemble} == {"/rack-a", "/rack-b"}
            ledger.close()


def test_ctrl_c_says_how_far_it_got_and_a_rerun_finishes(harness, bkctl, monkeypatch):
    """Interrupted by Ctrl-C after its first move, the command says so and exits 130; run again, it plans afresh
    from the metadata and moves what is left."""
    from bookie.client.move import ReplicaMover

    uri = harness.service_uri
    bookies = [b.bookie_id for b in harness.start(4)]
    ledgers = write_ledgers(uri, 3, quorum=(2, 2, 2), entries=20)
    with BookKeeper(uri) as bk:
        first = bk.ledger_metadata(ledgers[0]).segments[0].bookies
    set_racks(bkctl, uri, {b: "/rack-a" if b in first else "/rack-b" for b in bookies})
    real = ReplicaMover.run

    async def interrupted(self, moves):
        await real(self, list(moves)[:1])
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C: KeyboardInterrupt in the main thread, which cancels this
        await asyncio.sleep(30)

    monkeypatch.setattr(ReplicaMover, "run", interrupted)
    result = bkctl("-u", uri, "cluster", "repair-placement", "--yes")
    assert result.exit_code == 130
    assert "interrupted after 1 of " in result.stderr and "run it again" in result.stderr
    monkeypatch.setattr(ReplicaMover, "run", real)
    result = bkctl("-u", uri, "cluster", "repair-placement", "--yes", "-o", "json")
    assert result.exit_code == 0 and json.loads(result.stdout)["remaining"]["failingSegments"] == 0
    assert check(bkctl, uri)[0] == 0

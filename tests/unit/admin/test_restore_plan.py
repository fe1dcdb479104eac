"""The restore's plan from a backup's manifest and ledgers, without a cluster: the id map, passwords, ranges, ids
against the target's ledgers, and how files are grouped into tasks."""

from __future__ import annotations

import dataclasses

import pytest

from admin.backup.manifest import BackedUpLedger, FileEntry, LedgerCounts, Manifest, Source
from admin.restore.plan import (
    MARKER_KEY,
    assign_ids,
    check_ranges,
    check_target,
    parse_id_map,
    resolve_passwords,
    tasks,
)
from bookie.client.replay import ledger_differs
from bookie.codec.digest import DigestType
from bookie.errors import CorruptData, InvalidArgument, Unauthorized, Unsafe
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState, Segment

ENSEMBLE = ("127.0.0.1:3181", "127.0.0.1:3182", "127.0.0.1:3183")


def backed_up(ledger_id: int, last: int = 9, password: bytes | None = b"pw", has_password: bool = True, size=3):
    md = LedgerMetadata(
        size,
        2,
        2,
        (Segment(0, ENSEMBLE[:size]),),
        state=LedgerState.CLOSED,
        last_entry_id=last,
        length=10 * (last + 1),
        digest_type=DigestType.CRC32C,
        password=password,
        ctime=1000 + ledger_id,
        custom_metadata={"app": b"x"},
    )
    return BackedUpLedger(ledger_id, md, has_password, "CLOSED", last, 10 * (last + 1), last + 1, 10 * (last + 1), 7, 3)


def manifest(*files: FileEntry) -> Manifest:
    return Manifest("2026-11-29T00:00:00Z", Source("zk://x/ledgers", "iid", "hierarchical"), "included",
                    LedgerCounts(), list(files), data=True)  # fmt: skip


def data_file(name: str, *ranges: tuple[int, int, int]) -> FileEntry:
    return FileEntry(f"data/{name}.parquet", 100, "00", sum(c - b + 1 for _, b, c in ranges), tuple(ranges))


def test_an_id_map_is_lines_of_old_and_new_ids():
    assert parse_id_map("# old new\n1 101\n\n2   102  # moved\n", "ids.txt") == {1: 101, 2: 102}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1 101\n2\n", "ids.txt, line 2: expected OLD NEW"),
        ("1 101\n2 x\n", "ids.txt, line 2: expected OLD NEW"),
        ("1 -5\n", "ids.txt, line 1: expected OLD NEW"),
        ("1 101\n1 102\n", "ids.txt, line 2: ledger 1 is mapped twice"),
        ("1 101\n2 101\n", "ids.txt, line 2: ledger 101 is the new id of ledger 1 too"),
    ],
)
def test_a_malformed_id_map_names_its_line(text, message):
    with pytest.raises(InvalidArgument, match=message):
        parse_id_map(text, "ids.txt")


def test_passwords_come_from_the_backup_else_the_password_file():
    ledgers = [backed_up(1), backed_up(2, password=None), backed_up(3, password=None, has_password=False)]
    assert resolve_passwords(ledgers, b"file") == {1: b"pw", 2: b"file", 3: b""}


def test_missing_passwords_are_counted_and_named():
    ledgers = [backed_up(i, password=None) for i in range(1, 9)] + [backed_up(20)]
    with pytest.raises(Unauthorized, match=r"^8 ledgers have a password .* \(ledger 1, 2, 3, 4, 5 and 3 more\)"):
        resolve_passwords(ledgers, None)


def test_ranges_must_cover_each_ledger_in_order():
    ledgers = [backed_up(1, last=9), backed_up(2, last=4)]
    check_ranges(manifest(data_file("part-00000", (1, 0, 5)), data_file("part-00001", (1, 6, 9), (2, 0, 4))), ledgers)
    with pytest.raises(CorruptData, match=r"data/part-00001.parquet: ledger 1 entries 7\.\.9 where entry 6 comes"):
        check_ranges(
            manifest(data_file("part-00000", (1, 0, 5)), data_file("part-00001", (1, 7, 9), (2, 0, 4))), ledgers
        )
    with pytest.raises(CorruptData, match=r"hold entries 0\.\.3 of ledger 2, its metadata says 0\.\.4"):
        check_ranges(manifest(data_file("part-00000", (1, 0, 9), (2, 0, 3))), ledgers)
    with pytest.raises(CorruptData, match="entries of ledger 1 come after another ledger's"):
        check_ranges(
            manifest(data_file("part-00000", (1, 0, 5), (2, 0, 4)), data_file("part-00001", (1, 6, 9))), ledgers
        )


def test_ids_are_kept_and_a_taken_one_is_refused():
    ledgers = [backed_up(i) for i in (1, 2, 3)]
    passwords = dict.fromkeys((1, 2, 3), b"pw")
    planned = assign_ids(ledgers, passwords, {}, None, False)
    assert [(lg.target_id, lg.action) for lg in planned] == [(1, "create"), (2, "create"), (3, "create")]
    other = backed_up(2).metadata.with_changes(ctime=5)
    with pytest.raises(Unsafe, match=r"^1 ledger ids of the backup exist in the target \(ledger 2\): pass --id-map"):
        assign_ids(ledgers, passwords, {2: other}, None, False)
    with pytest.raises(Unsafe, match=r"\(ledger 3\)"):
        assign_ids(ledgers, passwords, {3: None}, None, False)  # unreadable metadata is someone's too
    planned = assign_ids(ledgers, passwords, {2: other}, None, True)
    assert [lg.target_id for lg in planned] == [1, None, 3]  # --new-ids: generated at the claim


def test_an_id_map_moves_ledgers_and_its_targets_are_checked():
    ledgers = [backed_up(i) for i in (1, 2)]
    passwords = dict.fromkeys((1, 2), b"pw")
    assert [lg.target_id for lg in assign_ids(ledgers, passwords, {}, {1: 100}, False)] == [100, 2]
    with pytest.raises(InvalidArgument, match="ledgers 1 and 2 would both be restored as ledger 2"):
        assign_ids(ledgers, passwords, {}, {1: 2}, False)
    with pytest.raises(InvalidArgument, match="the id map names ledgers the backup does not hold: 7"):
        assign_ids(ledgers, passwords, {}, {7: 70}, False)
    with pytest.raises(Unsafe, match=r"\(ledger 100\): change them in --id-map"):
        assign_ids(ledgers, passwords, {100: backed_up(9).metadata}, {1: 100}, False)


def test_a_rerun_skips_restored_ledgers_and_redoes_marked_ones():
    ledgers = [backed_up(1), backed_up(2)]
    restored = ledgers[0].metadata
    marked = ledgers[1].metadata.with_changes(
        state=LedgerState.OPEN, custom_metadata={"app": b"x", MARKER_KEY: b"run1"}
    )
    planned = assign_ids(ledgers, {1: b"pw", 2: b"pw"}, {1: restored, 2: marked}, None, False)
    assert [lg.action for lg in planned] == ["skip", "redo"]
    with pytest.raises(Unsafe):  # another password: another ledger
        assign_ids(ledgers[:1], {1: b"other"}, {1: restored}, None, False)


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"ensemble_size": 2}, "its ensemble, write or ack quorum size differs"),
        ({"ack_quorum_size": 1}, "its ensemble, write or ack quorum size differs"),
        ({"digest_type": DigestType.HMAC}, "its digest type or password differs"),
        ({"password": b"other"}, "its digest type or password differs"),
        ({"ctime": 5}, "its creation time differs"),
        ({"custom_metadata": {"app": b"y", MARKER_KEY: b"run1"}}, "its custom metadata differs"),
    ],
)
def test_a_marked_ledger_is_written_again_only_when_it_is_the_backups_ledger(change, why):
    ledger = backed_up(1)
    claimed = ledger.metadata.with_changes(state=LedgerState.OPEN, custom_metadata={"app": b"x", MARKER_KEY: b"run1"})
    other = claimed.with_changes(**change)
    differs = [ledger_differs(md, ledger.metadata, b"pw", MARKER_KEY) for md in (claimed, other)]
    assert differs == ["", why]
    with pytest.raises(Unsafe, match=r"\(ledger 1\): pass --id-map"):
        assign_ids([ledger], {1: b"pw"}, {1: other}, None, False)
    assert [lg.target_id for lg in assign_ids([ledger], {1: b"pw"}, {1: other}, None, True)] == [None]
    with pytest.raises(Unsafe, match=r"\(ledger 50\): change them in --id-map"):
        assign_ids([ledger], {1: b"pw"}, {50: other}, {1: 50}, False)


def test_the_target_needs_bookies_for_the_widest_ensemble_and_room_for_the_ids():
    planned = assign_ids([backed_up(1, size=3), backed_up(2**31, size=2)], {1: b"", 2**31: b""}, {}, None, False)
    room = dict.fromkeys(ENSEMBLE[:3], 1 << 30)
    check_target(planned, "hierarchical", lambda: room)
    with pytest.raises(Unsafe, match="the target has 2 writable bookies; ledger 1 needs an ensemble of 3"):
        check_target(planned, "hierarchical", lambda: dict(list(room.items())[:2]))
    with pytest.raises(Unsafe, match=r"legacyhierarchical\) holds ids below 2147483647 only: 1 ledgers are above"):
        check_target(planned, "legacyhierarchical", lambda: room)
    with pytest.raises(Unsafe, match=r"the target is too small: its 3 writable bookies have 0\.0 MB free"):
        check_target(planned, "hierarchical", lambda: dict.fromkeys(room, 10))
    skipped = [dataclasses.replace(lg, action="skip") for lg in planned]
    check_target(skipped, "hierarchical", lambda: pytest.fail("the room asked with nothing to write"))


def test_files_sharing_a_ledger_go_to_one_task():
    ledgers = [backed_up(1, last=9), backed_up(2, last=4), backed_up(3, last=0), backed_up(4, last=-1)]
    files = manifest(
        data_file("part-00000", (1, 0, 5)),
        data_file("part-00001", (1, 6, 9), (2, 0, 2)),
        data_file("part-00002", (2, 3, 4)),
        data_file("part-00003", (3, 0, 0)),
    )
    check_ranges(files, ledgers)
    planned = assign_ids(ledgers, dict.fromkeys((1, 2, 3, 4), b"pw"), {}, None, False)
    one = tasks(files, planned, task_bytes=1)
    assert [(t.files, t.ledgers) for t in one] == [
        (("data/part-00000.parquet", "data/part-00001.parquet", "data/part-00002.parquet"), (1, 2)),
        (("data/part-00003.parquet",), (3,)),
    ]
    assert (one[0].entries, one[0].bytes) == (15, 150)
    assert len(tasks(files, planned)) == 1  # small groups packed together

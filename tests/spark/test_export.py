"""`bkctl ledger export` end to end: real bookies, local Spark, the files read back with pyarrow."""

import base64
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from bookie.client import BookKeeper
from bookie.meta.ledger_metadata import LedgerState


def read_parquet(path: Path) -> pa.Table:
    """Every row of the export, the files in Spark's partition order (their names)."""
    files = sorted(path.glob("part-*.parquet"))
    return pa.concat_tables([pq.read_table(f) for f in files]) if files else None


def export(bkctl, uri, *args):
    result = bkctl("-u", uri, "ledger", "export", *args, "-o", "json")
    return result, json.loads(result.stdout) if result.exit_code == 0 else None


def test_fifty_ledgers_to_parquet_byte_identical_in_order(bkctl, spark, three_bookies, mixed_ledgers, tmp_path):
    uri = three_bookies.service_uri
    ledgers = mixed_ledgers(uri, 50)
    out = tmp_path / "out"
    first, last = min(ledgers), max(ledgers)
    result, doc = export(bkctl, uri, f"{first}-{last}", "--to", str(out), "--partition-bytes", "1m", "--verify")
    assert result.exit_code == 0, result.stderr
    entries = sum(map(len, ledgers.values()))
    assert doc["ledgers"] == 50 and doc["entries"] == entries and doc["verified"] is True
    assert doc["bytes"] == sum(len(p) for payloads in ledgers.values() for p in payloads)
    table = read_parquet(out)
    assert doc["files"] == len(list(out.glob("part-*.parquet"))) > 1
    assert table.schema.names == ["ledgerId", "entryId", "payload", "length", "lastAddConfirmed"]
    expected = [(lid, eid, p) for lid in sorted(ledgers) for eid, p in enumerate(ledgers[lid])]
    got = list(
        zip(table["ledgerId"].to_pylist(), table["entryId"].to_pylist(), table["payload"].to_pylist(), strict=True)
    )
    assert got == expected  # every entry, byte-identical, in order, nothing extra
    assert table["length"].to_pylist() == [len(p) for _, _, p in expected]
    assert result.stderr == ""


def test_json_lines_with_base64_payloads(bkctl, spark, three_bookies, mixed_ledgers, tmp_path):
    uri = three_bookies.service_uri
    ledgers = mixed_ledgers(uri, 4, seed=1)
    out = tmp_path / "json"
    result, doc = export(bkctl, uri, *map(str, ledgers), "--to", str(out), "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert doc["format"] == "json" and doc["verified"] is None
    rows = [json.loads(line) for f in sorted(out.glob("part-*.json")) for line in f.read_text().splitlines()]
    assert [(r["ledgerId"], r["entryId"]) for r in rows] == [
        (lid, e) for lid in sorted(ledgers) for e in range(len(ledgers[lid]))
    ]
    for row in rows:
        payload = ledgers[row["ledgerId"]][row["entryId"]]
        assert base64.b64decode(row["payload"]) == payload and row["length"] == len(payload)
        assert row["lastAddConfirmed"] <= row["entryId"] - 1


def test_open_ledgers_only_when_asked_up_to_their_lac_never_fenced(bkctl, spark, three_bookies, tmp_path):
    uri = three_bookies.service_uri
    with BookKeeper(uri) as bk:
        writer = bk.create_ledger(3, 2, 2, password=b"w")
        for i in range(20):  # one at a time: entry i carries LAC i - 1, so readers see up to entry 18
            writer.add_entry(b"open %d" % i)
        lid = str(writer.ledger_id)
        result, doc = export(bkctl, uri, lid, "--to", str(tmp_path / "closed-only"))
        assert result.exit_code == 0 and doc["ledgers"] == 0 and doc["leftOpen"] == [writer.ledger_id]
        assert "1 open ledger(s) left out" in result.stderr
        assert read_parquet(tmp_path / "closed-only").num_rows == 0

        result, doc = export(bkctl, uri, lid, "--to", str(tmp_path / "open"), "--include-open", "--verify")
        assert result.exit_code == 0, result.stderr
        assert doc["entries"] == 19 and doc["verified"] is True
        table = read_parquet(tmp_path / "open")
        assert table["payload"].to_pylist() == [b"open %d" % i for i in range(19)]
        assert table["lastAddConfirmed"].to_pylist() == list(range(-1, 18))

        assert writer.add_entry(b"after export") == 20  # not fenced: the writer goes on
        md = writer.close()
    assert (md.state, md.last_entry_id) == (LedgerState.CLOSED, 20)


def test_a_stopped_bookie_leaves_the_export_complete_but_a_lost_ledger_fails_it(
    bkctl, spark, harness, mixed_ledgers, tmp_path
):
    harness.start(3)
    uri = harness.service_uri
    ledgers = mixed_ledgers(uri, 12, seed=3)
    with BookKeeper(uri) as bk:
        only_copy = bk.create_ledger(1, 1, 1, password=b"x")
        only_copy.add_entries([b"a", b"b"])
        only_copy.close()
        victim = bk.ledger_metadata(only_copy.ledger_id).segments[0].bookies[0]
        metadata = {lid: bk.ledger_metadata(lid) for lid in ledgers}
    next(b for b in harness.bookies if b.bookie_id == victim).stop()
    # Every ledger with another replica of each entry, or no entries at all, can still be read in full.
    readable = {
        lid: p
        for lid, p in ledgers.items()
        if not p or metadata[lid].write_quorum_size > 1 or victim not in metadata[lid].segments[0].bookies
    }
    assert any(p and victim in metadata[lid].segments[0].bookies for lid, p in readable.items())
    result, doc = export(bkctl, uri, *map(str, readable), "--to", str(tmp_path / "ok"), "--verify")
    assert result.exit_code == 0, result.stderr
    assert doc["verified"] is True and doc["entries"] == sum(map(len, readable.values()))
    table = read_parquet(tmp_path / "ok")
    assert table["payload"].to_pylist() == [p for lid in sorted(readable) for p in readable[lid]]

    failed = bkctl("-u", uri, "ledger", "export", str(only_copy.ledger_id), "--to", str(tmp_path / "lost"))
    assert failed.exit_code == 5
    assert failed.stderr.startswith(f"error: ledger {only_copy.ledger_id} entry ")
    assert "no readable replica" in failed.stderr and failed.stderr.count("\n") == 1
    assert list((tmp_path / "lost").iterdir()) == []  # no part files, nothing of the attempts left


def test_verify_finds_files_that_do_not_match(spark, three_bookies, mixed_ledgers, tmp_path):
    from admin.export.job import run_export, verify_output
    from admin.export.part_files import LedgerStats, filesystem, read_file
    from admin.export.plan import Selection, plan_export

    uri = three_bookies.service_uri
    ledgers = mixed_ledgers(uri, 3, seed=5)
    with BookKeeper(uri) as bk:
        plan = plan_export(bk, Selection(ids=tuple(ledgers)))
    out = tmp_path / "out"
    progress = []
    report = run_export(spark, uri, plan, str(out), verify=True, progress=lambda *n: progress.append(n))
    assert report.verified is True and report.problems == []
    assert progress[-1] == (len(plan.partitions), len(plan.partitions))  # the last report: every task done
    assert sorted(p.name for p in out.iterdir()) == [
        "_SUCCESS",
        *(f"part-{i:05d}.parquet" for i in range(len(plan.partitions))),
    ]

    def stats():
        result = LedgerStats()
        for f in out.glob("part-*"):
            for batch in read_file(filesystem(str(f))[0], str(f), "parquet"):
                result.add(batch)
        return result

    read = stats()
    table = read_parquet(out)
    for f in out.glob("part-*"):
        f.unlink()
    payloads = table["payload"].to_pylist()
    payloads[-1] = b"tampered" + payloads[-1]
    pq.write_table(table.set_column(2, "payload", pa.array(payloads, pa.binary())), out / "part-00000.parquet")
    last = max(lid for lid in ledgers if ledgers[lid])
    written = stats()
    length = len(b"".join(ledgers[last]))
    assert verify_output(plan, read, written) == [
        f"ledger {last}: {length + 8} payload bytes written, its metadata says {length}",
        f"payload checksum of the files ({written.checksum:#x}) differs from that of the entries read "
        f"({read.checksum:#x})",
    ]


def test_overwrite_replaces_an_earlier_export(bkctl, spark, three_bookies, mixed_ledgers, tmp_path):
    uri = three_bookies.service_uri
    first, second = sorted(mixed_ledgers(uri, 3, seed=9))[1:]  # 1 and 3 entries
    out = tmp_path / "again"
    out.mkdir()  # an empty directory is no earlier export: written into without --overwrite
    assert export(bkctl, uri, str(first), str(second), "--to", str(out))[0].exit_code == 0
    refused = bkctl("-u", uri, "ledger", "export", str(second), "--to", str(out))
    assert refused.exit_code == 2
    assert refused.stderr == f"error: {out} exists and is not empty: pass --overwrite to replace it\n"
    result, doc = export(bkctl, uri, str(second), "--to", str(out), "--overwrite")
    assert result.exit_code == 0 and doc["ledgers"] == 1
    assert read_parquet(out)["ledgerId"].to_pylist() == [second] * 3

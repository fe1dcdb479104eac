"""`bkctl cluster backup --data` end to end: real bookies, local Spark; the backup read back with pyarrow and the
manifest module."""

import hashlib
import json
import os
import stat

import pyarrow.parquet as pq

from admin.backup.manifest import Manifest, read_ledgers
from admin.export.part_files import LedgerStats
from bookie.client import BookKeeper


def test_a_data_backup_with_checksums_ledger_lengths_and_passwords(
    bkctl, spark, three_bookies, mixed_ledgers, tmp_path
):
    uri = three_bookies.service_uri
    ledgers = mixed_ledgers(uri, 12, seed=3)
    with BookKeeper(uri) as bk:
        writer = bk.create_ledger(3, 2, 2, password=b"open-pw")
        for i in range(10):  # one at a time: entry i carries LAC i - 1, so readers see up to entry 8
            writer.add_entry(b"open %d" % i)
        opened = writer.ledger_id
        out = tmp_path / "backup"
        args = [*map(str, ledgers), str(opened), "--to", str(out), "--data", "--include-open", "--with-passwords"]
        result = bkctl("-u", uri, "cluster", "backup", *args, "--partition-bytes", "256k", "-o", "json")
        assert result.exit_code == 0, result.stderr
        doc = json.loads(result.stdout)
        stored = {}  # every entry's stored (LAC, length) fields, as the bookies give them
        for lid in [*ledgers, opened]:
            with bk.open_ledger(lid, bk.core.ledgers.read(lid)[0].password, recovery=False) as reader:
                last = reader.last_add_confirmed
                entries_read = reader.read(0, last) if last >= 0 else []
                stored |= {(lid, e.entry_id): (e.last_add_confirmed, e.length) for e in entries_read}
        writer.close()
    entries = sum(map(len, ledgers.values())) + 9
    assert (doc["ledgers"], doc["entries"], doc["verified"], doc["problems"]) == (13, entries, True, [])
    assert doc["openIncluded"] == [opened] and doc["openLeftOut"] == [] and doc["passwords"] == "included"

    manifest = Manifest.load(str(out))
    manifest.check_files(str(out))
    data_files = [f for f in manifest.files if f.path.startswith("data/part-")]
    assert len(data_files) > 1 and sum(f.rows for f in data_files) == entries
    for f in manifest.files:  # the SHA-256 the tasks took while writing is that of the file as it lies
        assert f.sha256 == hashlib.sha256((out / f.path).read_bytes()).hexdigest(), f.path
    assert {f.path for f in manifest.files} == {
        os.path.relpath(os.path.join(d, n), out) for d, _, names in os.walk(out) for n in names
    } - {"manifest.json"}

    files = LedgerStats()
    for f in data_files:
        table = pq.read_table(out / f.path)
        assert table.schema.names == ["ledgerId", "entryId", "payload", "length", "lastAddConfirmed", "ledgerLength"]
        for row in table.select(["ledgerId", "entryId", "lastAddConfirmed", "ledgerLength"]).to_pylist():
            fields = (row["lastAddConfirmed"], row["ledgerLength"])
            assert fields == stored[row["ledgerId"], row["entryId"]]
        for batch in table.to_batches():
            files.add(batch)
        assert [r[0] for r in f.ranges] == sorted(r[0] for r in f.ranges)
    backed_up = {ledger.ledger_id: ledger for ledger in read_ledgers(str(out))}
    for lid, ledger in backed_up.items():
        count, size, _, _, xor = files.ledgers.get(lid, (0, 0, 0, -1, 0))
        assert (ledger.entries, ledger.payload_bytes, ledger.payload_xor) == (count, size, xor)
        covered = [(first, last) for f in manifest.files_of(lid) for i, first, last in f.ranges if i == lid]
        assert [e for first, last in covered for e in range(first, last + 1)] == list(range(ledger.last_entry_id + 1))
    assert backed_up[opened].state_at_backup == "OPEN"
    assert (backed_up[opened].last_entry_id, backed_up[opened].length) == (8, stored[opened, 8][1])
    assert backed_up[opened].metadata.password == b"open-pw"

    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    for d, names, filenames in os.walk(out):
        assert all(stat.S_IMODE(os.stat(os.path.join(d, n)).st_mode) == 0o700 for n in names)
        assert all(stat.S_IMODE(os.stat(os.path.join(d, n)).st_mode) == 0o600 for n in filenames), d


def test_a_ledger_deleted_before_its_entries_are_read_is_listed(
    bkctl, spark, three_bookies, mixed_ledgers, tmp_path, monkeypatch
):
    from admin.backup import job
    from bookie.meta.ledger_manager import LedgerManager
    from bookie.meta.store import MetadataStore
    from bookie.meta.uri import parse_service_uri

    uri = three_bookies.service_uri
    ledgers = mixed_ledgers(uri, 3, seed=5)
    victim = max(ledgers, key=lambda lid: len(ledgers[lid]))
    runs = []

    def deleted_meanwhile(*args, **kwargs):  # after planning: the ledger goes, and its bookies collect it
        if not runs:
            with MetadataStore(parse_service_uri(uri)) as store:
                LedgerManager(store).delete(victim)
            assert bkctl("-u", uri, "bookie", "gc", "--all", "--wait", "--timeout", "30").exit_code == 0
        runs.append(args)
        return export(*args, **kwargs)

    export = job.run_export
    monkeypatch.setattr(job, "run_export", deleted_meanwhile)
    out = tmp_path / "b"
    result = bkctl("-u", uri, "cluster", "backup", *map(str, ledgers), "--to", str(out), "--data", "-o", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert len(runs) == 2 and doc["deletedDuringBackup"] == [victim] and doc["ledgers"] == 2
    assert "1 ledger(s) deleted while the backup ran" in result.stderr
    Manifest.load(str(out)).check_files(str(out))
    assert sorted(ledger.ledger_id for ledger in read_ledgers(str(out))) == sorted(set(ledgers) - {victim})


def test_an_overwrite_with_data_moves_the_new_backup_into_place(bkctl, spark, three_bookies, mixed_ledgers, tmp_path):
    uri = three_bookies.service_uri
    ledgers = sorted(mixed_ledgers(uri, 3, seed=9))
    out = tmp_path / "b"
    for selected in (ledgers, ledgers[:1]):
        args = ["--to", str(out), "--data", "--overwrite", "--partition-bytes", "64k", *map(str, selected)]
        result = bkctl("-u", uri, "cluster", "backup", *args, "-o", "json")
        assert result.exit_code == 0, result.stderr
    manifest = Manifest.load(str(out))
    manifest.check_files(str(out))
    assert [ledger.ledger_id for ledger in read_ledgers(str(out))] == ledgers[:1]
    assert not [name for name in os.listdir(out) if name.startswith(".")]

"""The backup manifest (admin/backup/manifest.py): round trip, its own checksum, the format version, file checks."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest

from admin.backup.manifest import (
    FORMAT_VERSION,
    FileEntry,
    LedgerCounts,
    Manifest,
    Source,
    canonical_sha256,
    read_passwords,
)
from admin.backup.pulsar import read_pulsar_snapshot
from bookie.errors import CorruptData, InvalidArgument, NotFound


def _file(root, name: str, data: bytes, rows=None, ranges=()) -> FileEntry:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return FileEntry(name, len(data), hashlib.sha256(data).hexdigest(), rows, tuple(ranges))


@pytest.fixture
def backup(tmp_path):
    files = [
        _file(tmp_path, "metadata/ledgers.parquet", b"ledgers"),
        _file(tmp_path, "data/part-00000.parquet", b"first file", 15, [(1, 0, 9), (2, 0, 4)]),
        _file(tmp_path, "data/part-00001.parquet", b"second file", 20, [(2, 5, 24)]),
        _file(tmp_path, "data/_SUCCESS", b""),
    ]
    manifest = Manifest(
        created_at="2026-11-29T00:40:00Z",
        source=Source("zk+hierarchical://127.0.0.1:2181/ledgers", "iid", "hierarchical", "2\nX:1", {"maxLedgerId": 2}),
        passwords="absent",
        ledgers=LedgerCounts(2, 35, 3500, 2, [], [7], [9]),
        files=files,
        data=True,
        finished_at="2026-11-29T00:41:00Z",
        created_by="bkctl test",
    )
    manifest.dump(str(tmp_path))
    return tmp_path, manifest


def test_round_trip_and_sorted_keys(backup):
    root, manifest = backup
    loaded = Manifest.load(str(root))
    assert loaded == manifest.__class__(**{**manifest.__dict__, "files": sorted(manifest.files, key=lambda f: f.path)})
    text = (root / "manifest.json").read_text()
    assert json.loads(text)["formatVersion"] == FORMAT_VERSION
    assert list(json.loads(text)) == sorted(json.loads(text))
    assert not list(root.glob(".manifest*"))  # the temporary file is renamed into place


def test_pulsar_is_null_without_it_absent_in_an_older_manifest_and_round_trips(backup):
    root, manifest = backup
    doc = json.loads((root / "manifest.json").read_text())
    assert doc["pulsar"] is None
    del doc["pulsar"]  # as written before the field existed: still format 1, still read
    doc["manifestSha256"] = canonical_sha256(doc)
    (root / "manifest.json").write_text(json.dumps(doc))
    assert Manifest.load(str(root)).pulsar is None
    assert read_pulsar_snapshot(str(root)) is None
    pulsar = {"root": "/", "znodes": 9, "topics": 1, "referencedLedgers": [3, 5], "offloadedLedgers": []}
    manifest.pulsar = pulsar
    manifest.dump(str(root))
    assert Manifest.load(str(root)).pulsar == pulsar
    doc = json.loads((root / "manifest.json").read_text())
    doc["pulsar"] = [1]
    doc["manifestSha256"] = canonical_sha256(doc)
    (root / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(CorruptData, match=r"manifest\.json: pulsar is not an object"):
        Manifest.load(str(root))


def test_files_of_a_ledger_in_entry_order(backup):
    _, manifest = backup
    assert [f.path for f in manifest.files_of(2)] == ["data/part-00000.parquet", "data/part-00001.parquet"]
    assert [f.path for f in manifest.files_of(1)] == ["data/part-00000.parquet"]
    assert manifest.files_of(3) == []


def test_the_manifest_checksum_covers_every_field(backup):
    root, _ = backup
    doc = json.loads((root / "manifest.json").read_text())
    assert doc["manifestSha256"] == canonical_sha256(doc)
    doc["ledgers"]["count"] = 3
    (root / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(CorruptData, match=r"manifest.json: manifestSha256 does not match its content"):
        Manifest.load(str(root))


def test_a_newer_format_is_refused(backup):
    root, _ = backup
    doc = json.loads((root / "manifest.json").read_text())
    doc["formatVersion"] = FORMAT_VERSION + 1
    doc["manifestSha256"] = canonical_sha256(doc)
    (root / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(InvalidArgument, match=r"^backup format 2 is newer than this bkctl reads \(1\)$"):
        Manifest.load(str(root))


def test_not_a_backup(tmp_path):
    with pytest.raises(NotFound, match=r"manifest\.json does not exist"):
        Manifest.load(str(tmp_path))
    (tmp_path / "manifest.json").write_text('{"format": "something else"}')
    with pytest.raises(InvalidArgument, match="not a bkctl backup manifest"):
        Manifest.load(str(tmp_path))
    (tmp_path / "manifest.json").write_text("{")
    with pytest.raises(CorruptData, match="not JSON"):
        Manifest.load(str(tmp_path))


def test_check_files_passes_on_an_intact_backup(backup):
    root, _ = backup
    Manifest.load(str(root)).check_files(str(root))


def test_check_files_names_a_flipped_byte(backup):
    root, manifest = backup
    part = root / "data/part-00001.parquet"
    data = bytearray(part.read_bytes())
    data[3] ^= 1
    part.write_bytes(bytes(data))
    with pytest.raises(CorruptData, match=r"^data/part-00001.parquet: SHA-256 mismatch \(corrupt or changed\)$"):
        manifest.check_files(str(root))


def test_check_files_names_a_truncated_or_missing_file(backup):
    root, manifest = backup
    (root / "metadata/ledgers.parquet").write_bytes(b"ledg")
    with pytest.raises(CorruptData, match=r"^metadata/ledgers.parquet: 4 bytes, the manifest says 7"):
        manifest.check_files(str(root))
    (root / "metadata/ledgers.parquet").unlink()
    with pytest.raises(CorruptData, match=r"^metadata/ledgers.parquet: listed in the manifest but missing$"):
        manifest.check_files(str(root))


def test_check_files_names_an_extra_data_file(backup):
    root, manifest = backup
    (root / "data/sub").mkdir()
    (root / "data/sub/part-00002.parquet").write_bytes(b"stray")
    with pytest.raises(CorruptData, match=r"^data/sub/part-00002.parquet: in the backup's data/ but not in its"):
        manifest.check_files(str(root))


def test_passwords(tmp_path):
    assert read_passwords(str(tmp_path)) == {}
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets/passwords.json").write_text(json.dumps({"7": base64.b64encode(b"\x00pw").decode()}))
    assert read_passwords(str(tmp_path)) == {7: b"\x00pw"}
    (tmp_path / "secrets/passwords.json").write_text('{"7": "not base64!"}')
    with pytest.raises(CorruptData, match=r"^secrets/passwords.json: malformed") as caught:
        read_passwords(str(tmp_path))
    assert "not base64" not in str(caught.value)  # a malformed secret is not echoed

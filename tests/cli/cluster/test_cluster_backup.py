"""`bkctl cluster backup` of metadata only (no Spark): what the backup holds, passwords kept out (or in, private),
open and deleted ledgers, the plan (--dry-run) and refusals. Backups with --data are tested in tests/spark/."""

import base64
import json
import os
import stat
from pathlib import Path

import pytest

from admin.backup.manifest import Manifest, read_ledgers, read_passwords
from bookie.client import BookKeeper
from bookie.meta.layout import read_instance_id
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.ledger_metadata import LedgerState, without_password

PASSWORDS = (b"crc-secret-7f3a91", b"mac-secret-c04e52")


@pytest.fixture
def source(harness, service_uri):
    """A cluster with a CRC32C ledger, an HMAC one with Pulsar-style custom metadata (both closed, with
    passwords), and an open one: ``{name: ledgerId}``."""
    harness.start(1)
    with BookKeeper(service_uri) as bk:
        crc = bk.create_ledger(1, 1, 1, digest_type="crc32c", password=PASSWORDS[0])
        crc.add_entries([b"a" * 10, b"b" * 20])
        crc.close()
        mac = bk.create_ledger(
            1,
            1,
            1,
            digest_type="mac",
            password=PASSWORDS[1],
            custom_metadata={"application": b"pulsar", "component": b"managed-ledger", "raw": b"\x00\xff"},
        )
        mac.add_entry(b"m" * 5)
        mac.close()
        opened = bk.create_ledger(1, 1, 1, password=b"")
        opened.add_entry(b"open")
        return {"crc": crc.ledger_id, "mac": mac.ledger_id, "open": opened.ledger_id}


def backup(bkctl, uri, *args):
    result = bkctl("-u", uri, "cluster", "backup", *args, "-o", "json")
    return result, json.loads(result.stdout) if result.exit_code == 0 else None


def every_file(root):
    return [os.path.join(d, n) for d, _, names in os.walk(root) for n in names]


def test_a_metadata_backup_holds_every_ledger_as_stored_without_passwords(
    bkctl, service_uri, cluster, source, tmp_path
):
    out = tmp_path / "backup"
    result, doc = backup(bkctl, service_uri, "--to", str(out))
    assert result.exit_code == 0, result.stderr
    assert (doc["ledgers"], doc["data"], doc["entries"], doc["verified"]) == (3, False, 0, None)
    assert (doc["openLeftOut"], doc["openIncluded"], doc["deletedDuringBackup"]) == ([source["open"]], [], [])
    assert (doc["passwords"], doc["passwordsFile"]) == ("absent", None)
    assert result.stderr == "warning: 1 open ledger(s): entries left out (metadata only)\n"

    manifest = Manifest.load(str(out))
    manifest.check_files(str(out))
    assert doc["manifestSha256"] == json.loads((out / "manifest.json").read_text())["manifestSha256"]
    assert manifest.source.instance_id == read_instance_id(cluster)
    assert (manifest.source.service_uri, manifest.source.manager) == (service_uri, "hierarchical")
    assert manifest.ledgers.max_ledger_id == max(source.values()) and manifest.passwords == "absent"
    assert [f.path for f in manifest.files] == ["metadata/ledgers.parquet"]

    manager = LedgerManager(cluster)
    ledgers = {ledger.ledger_id: ledger for ledger in read_ledgers(str(out))}
    assert sorted(ledgers) == sorted(source.values())
    for lid, ledger in ledgers.items():
        stored, _ = manager.read(lid)
        assert ledger.metadata == stored.with_changes(password=None)  # every field as stored but the password
        assert ledger.has_password is (lid != source["open"])
        assert ledger.format_version == 3 and ledger.entries is None and ledger.payload_xor is None
        assert ledger.state_at_backup == stored.state.name
    assert ledgers[source["crc"]].metadata.digest_type.name == "CRC32C"
    assert ledgers[source["mac"]].metadata.digest_type.name == "HMAC"
    assert ledgers[source["mac"]].metadata.custom_metadata["raw"] == b"\x00\xff"
    assert ledgers[source["open"]].state_at_backup == LedgerState.OPEN.name
    znode, _ = cluster.get(manager.path(source["mac"]))
    import pyarrow.parquet as pq

    row = next(r for r in pq.read_table(out / "metadata/ledgers.parquet").to_pylist() if r["ledgerId"] == source["mac"])
    assert row["znode"] == without_password(znode) and dict(row["customMetadata"])["application"] == b"pulsar"
    assert read_passwords(str(out)) == {}
    # no password, in any form, in any file of the backup nor in what the command printed
    for password in PASSWORDS:
        forms = (password, base64.b64encode(password), password.decode().encode("utf-16-le"))
        for path in every_file(out):
            with open(path, "rb") as f:
                data = f.read()
            assert not any(form in data for form in forms), path
        assert password.decode() not in result.stdout + result.stderr


def test_with_passwords_the_backup_is_private(bkctl, service_uri, source, tmp_path):
    out = tmp_path / "private"
    result, doc = backup(bkctl, service_uri, "--to", str(out), "--with-passwords", str(source["crc"]))
    assert result.exit_code == 0, result.stderr
    assert doc["passwords"] == "included" and doc["passwordsFile"] == f"{out}/secrets/passwords.json"
    assert PASSWORDS[0].decode() not in result.stdout + result.stderr
    assert read_passwords(str(out)) == {source["crc"]: PASSWORDS[0]}
    (ledger,) = read_ledgers(str(out))
    assert ledger.metadata.password == PASSWORDS[0]
    Manifest.load(str(out)).check_files(str(out))
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    assert stat.S_IMODE((out / "secrets").stat().st_mode) == 0o700
    for path in every_file(out):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path
    table = bkctl(
        "-u", service_uri, "cluster", "backup", str(source["mac"]), "--to", str(tmp_path / "t"), "--with-passwords"
    )
    lines = table.stdout.splitlines()
    assert [line.split()[1:] for line in lines if line.startswith("Passwords:")] == [
        [f"{tmp_path}/t/secrets/passwords.json"]
    ]


def test_selection_and_dry_run_write_nothing(bkctl, service_uri, source, tmp_path):
    out = tmp_path / "never"
    result, doc = backup(bkctl, service_uri, "--to", str(out), "--meta", "application=pulsar", "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert (doc["ledgers"], doc["data"], doc["dataFiles"], doc["path"]) == (1, False, 0, str(out))
    assert not out.exists()
    result, doc = backup(bkctl, service_uri, "--to", str(out), "--data", "--include-open", "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert (doc["ledgers"], doc["entries"], doc["bytes"], doc["dataFiles"]) == (3, 3, 35, 1)
    assert doc["openIncluded"] == [source["open"]] and doc["openLeftOut"] == [] and not out.exists()
    lids = f"{source['crc']}-{source['open']}"
    table = bkctl("-u", service_uri, "cluster", "backup", lids, "--to", "x", "--dry-run")
    assert table.stdout == "would back up 3 ledgers' metadata to x (dry run)\n"


def test_a_ledger_deleted_while_the_backup_runs_is_listed(bkctl, service_uri, cluster, source, tmp_path, monkeypatch):
    manager = LedgerManager(cluster)
    listed = list(manager.iter_ledger_ids())
    manager.delete(source["crc"])  # listed, then gone before its metadata is read
    monkeypatch.setattr(LedgerManager, "iter_ledger_ids", lambda self: iter(listed))
    result, doc = backup(bkctl, service_uri, "--to", str(tmp_path / "b"))
    assert result.exit_code == 0, result.stderr
    assert doc["ledgers"] == 2 and doc["deletedDuringBackup"] == [source["crc"]]
    assert "warning: 1 ledger(s) deleted while the backup ran: left out (deletedDuringBackup)" in result.stderr
    assert Manifest.load(str(tmp_path / "b")).ledgers.deleted_during_backup == [source["crc"]]


def test_bad_input_is_one_line(bkctl, service_uri, source, tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    result = bkctl("-u", service_uri, "cluster", "backup", "--to", str(tmp_path / "full"))
    assert (result.exit_code, result.stderr) == (
        2,
        f"error: {tmp_path}/full exists and is not empty: pass --overwrite to replace it\n",
    )
    result = bkctl("-u", service_uri, "cluster", "backup", "--to", str(tmp_path / "full"), "--overwrite")
    assert (result.exit_code, result.stderr) == (
        2,
        f"error: {tmp_path}/full is not empty and not a backup (no manifest.json): --overwrite replaces a backup\n",
    )
    assert os.listdir(tmp_path / "full") == ["x"]
    result = bkctl(
        "-u", service_uri, "cluster", "backup", str(source["crc"]), "--to", str(tmp_path / "full" / "x" / "sub")
    )
    assert (result.exit_code, result.stderr) == (2, f"error: cannot write to {tmp_path}/full/x/sub: Not a directory\n")
    result = bkctl("-u", service_uri, "cluster", "backup", "999999", "--to", str(tmp_path / "m"))
    assert (result.exit_code, result.stderr) == (5, "error: ledger 999999 does not exist\n")
    result = bkctl("-u", service_uri, "cluster", "backup", "--include-open", "--to", str(tmp_path / "o"))
    assert result.exit_code == 2 and "--include-open backs up open ledgers' entries: it needs --data" in result.stderr
    assert not (tmp_path / "m").exists() and not (tmp_path / "o").exists()


V1 = b"BookieMetadataFormatVersion\t1\n2\n2\n300\n0\t127.0.0.1:1\t127.0.0.1:2\n19\tCLOSED\n"
V2 = (
    b"BookieMetadataFormatVersion\t2\nquorumSize: 2\nensembleSize: 2\nlength: 30\nlastEntryId: 2\nstate: CLOSED\n"
    b'segment {\n  ensembleMember: "127.0.0.1:1"\n  ensembleMember: "127.0.0.1:2"\n  firstEntryId: 0\n}\n'
    b'digestType: HMAC\npassword: "v2-secret-9d1"\nackQuorumSize: 2\n'
)


def test_each_metadata_format_is_kept_as_stored(bkctl, service_uri, cluster, tmp_path):
    """Format 1 and 2 znodes (written by older BookKeeper clients) stay in their format, byte for byte but the
    password; no bookie is needed for a metadata backup."""
    import pyarrow.parquet as pq

    manager = LedgerManager(cluster)
    for lid, data in ((1, V1), (2, V2)):
        cluster.zk.create(manager.path(lid), data, makepath=True)
    result, doc = backup(bkctl, service_uri, "--to", str(tmp_path / "b"))
    assert result.exit_code == 0 and doc["ledgers"] == 2, result.stderr
    rows = {r["ledgerId"]: r for r in pq.read_table(tmp_path / "b/metadata/ledgers.parquet").to_pylist()}
    assert (rows[1]["formatVersion"], rows[1]["znode"], rows[1]["hasPassword"]) == (1, V1, False)
    assert (rows[2]["formatVersion"], rows[2]["hasPassword"]) == (2, True)
    assert rows[2]["znode"] == V2.replace(b'password: "v2-secret-9d1"\n', b"")
    assert rows[1]["digestType"] is None and rows[2]["digestType"] == "HMAC"
    for ledger in read_ledgers(str(tmp_path / "b")):
        assert ledger.metadata == manager.read(ledger.ledger_id)[0].with_changes(password=None)


def test_an_overwrite_keeps_the_earlier_backup_until_the_new_one_is_complete(
    bkctl, service_uri, source, tmp_path, monkeypatch
):
    from bookie.errors import BKError

    out = tmp_path / "nightly"
    result, _ = backup(bkctl, service_uri, "--to", str(out), "--with-passwords")
    assert result.exit_code == 0, result.stderr
    earlier = {path: Path(path).read_bytes() for path in every_file(out)}

    def disk_full(self, path):
        raise BKError("disk full")

    with monkeypatch.context() as patched:  # the new backup written but its manifest
        patched.setattr(Manifest, "dump", disk_full)
        result = bkctl("-u", service_uri, "cluster", "backup", "--to", str(out), "--overwrite", str(source["crc"]))
    assert result.exit_code != 0 and result.stderr == "error: disk full\n"
    assert {path: Path(path).read_bytes() for path in every_file(out)} == earlier
    Manifest.load(str(out)).check_files(str(out))

    result, doc = backup(bkctl, service_uri, "--to", str(out), "--overwrite", str(source["crc"]))
    assert result.exit_code == 0, result.stderr
    assert doc["ledgers"] == 1 and doc["passwords"] == "absent"
    manifest = Manifest.load(str(out))
    manifest.check_files(str(out))
    assert manifest.ledgers.count == 1 and read_passwords(str(out)) == {}
    assert sorted(os.listdir(out)) == ["manifest.json", "metadata"]

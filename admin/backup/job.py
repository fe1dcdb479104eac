"""Writing a backup planned by :mod:`admin.backup.plan`: the entries through the export's Spark job into
``PATH/data`` (with the entries' ledger-length fields, each file's SHA-256 taken as its task writes it, and the
export's verification), then ``metadata/ledgers.parquet``, the passwords when asked, and ``manifest.json`` last.

Overwriting: the new backup is written into ``PATH/.bkctl-new-<id>/`` beside the earlier one, which stays whole
until the new one is complete; then the earlier one's manifest goes, then its other files, and the new files move
up into PATH, the manifest last (renames locally; a copy and a delete each on an object store). A failed overwrite
removes its directory and leaves the earlier backup as it was.

Privacy with passwords: locally the backup's root is made 0700 before anything is written into it (the Spark tasks
write under it), and at the end every directory is 0700 and every file 0600. On hdfs://, s3://, ... the store's own
permissions decide (the command warns).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow.fs import FileSelector, FileType

from admin.backup.manifest import (
    DATA_DIR,
    LEDGERS_FILE,
    MANIFEST,
    PASSWORDS_FILE,
    FileEntry,
    LedgerCounts,
    Manifest,
    file_sha256,
    is_local,
    ledgers_schema,
    list_files,
    local_path,
)
from admin.backup.plan import BackupPlan
from admin.backup.pulsar import PULSAR_FILE, PulsarSnapshot, missing_from_backup, pulsar_table
from admin.export.job import ExportReport, run_export
from admin.export.part_files import HashingStream, filesystem, is_empty_or_missing
from bookie.errors import InvalidArgument, NoSuchEntry, NoSuchLedger, Unsafe
from bookie.meta.ledger_metadata import without_password

RERUNS_FOR_DELETED = 3  # data jobs rerun without ledgers deleted under them
STAGING = ".bkctl-new-"  # the directory in PATH an overwrite writes the new backup into


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class BackupReport:
    path: str
    manifest: Manifest
    seconds: float = 0.0  # the data's Spark job (as the export's: its write and commit)
    verified: bool | None = None  # None: no data
    problems: list[str] = field(default_factory=list)

    @property
    def passwords_file(self) -> str | None:
        return f"{self.path.rstrip('/')}/{PASSWORDS_FILE}" if self.manifest.passwords == "included" else None

    def doc(self) -> dict[str, Any]:
        ledgers = self.manifest.ledgers
        size = ledgers.bytes
        return {
            "path": self.path,
            "ledgers": ledgers.count,
            "data": self.manifest.data,
            "entries": ledgers.entries,
            "bytes": size,
            "files": len(self.manifest.files) + 1,  # and manifest.json
            "seconds": round(self.seconds, 3),
            "mbPerSec": round(size / self.seconds / 1e6, 1) if self.seconds else 0.0,
            "verified": self.verified,
            "problems": self.problems,
            "openIncluded": ledgers.open_included,
            "openLeftOut": ledgers.open_left_out,
            "deletedDuringBackup": ledgers.deleted_during_backup,
            "passwords": self.manifest.passwords,
            "passwordsFile": self.passwords_file,
            "manifestSha256": self.manifest.doc()["manifestSha256"],
        }


def _unwritable(path: str, exc: OSError) -> InvalidArgument:
    return InvalidArgument(f"cannot write to {path}: {os.strerror(exc.errno) if exc.errno else exc}")


def check_replaceable(path: str) -> None:
    """InvalidArgument unless PATH is empty, missing or a backup (has a manifest.json): --overwrite replaces a
    backup, never a directory of something else."""
    if is_empty_or_missing(path):
        return
    fs, root = filesystem(path)
    try:
        found = fs.get_file_info(f"{root}/{MANIFEST}").type
    except OSError as exc:
        raise _unwritable(path, exc) from None
    if found != FileType.File:
        raise InvalidArgument(f"{path} is not empty and not a backup (no {MANIFEST}): --overwrite replaces a backup")


def prepare(path: str, private: bool) -> None:
    """Create the backup's root (0700 locally when ``private``)."""
    fs, root = filesystem(path)
    try:
        fs.create_dir(root)
    except OSError as exc:
        raise _unwritable(path, exc) from None
    if private and is_local(path):
        os.chmod(root, 0o700)


def replace_earlier(path: str, staging: str, private: bool) -> None:
    """Put the complete backup in ``staging`` (a directory in PATH) in the place of PATH's earlier one: the earlier
    manifest goes first (what is left of the earlier backup is never taken for a complete one), then its other
    files; the new files move up, the manifest last."""
    fs, root = filesystem(path)
    new = filesystem(staging)[1]
    if fs.get_file_info(f"{root}/{MANIFEST}").type == FileType.File:
        fs.delete_file(f"{root}/{MANIFEST}")
    for info in fs.get_file_info(FileSelector(root)):
        if info.path == new:
            continue
        if info.type == FileType.Directory:
            fs.delete_dir(info.path)
        else:
            fs.delete_file(info.path)
    for info in fs.get_file_info(FileSelector(new, recursive=True)):
        if info.type == FileType.File and info.path != f"{new}/{MANIFEST}":
            moved = root + info.path[len(new) :]
            fs.create_dir(moved.rsplit("/", 1)[0])
            fs.move(info.path, moved)
    fs.move(f"{new}/{MANIFEST}", f"{root}/{MANIFEST}")
    fs.delete_dir(new)
    if private and is_local(path):
        _private(path)


def write_data(
    spark,
    service_uri: str,
    plan: BackupPlan,
    path: str,
    progress: Callable[[int, int], None] | None,
    exists: Callable[[int], bool],
) -> ExportReport:
    """The export of the plan's entries into PATH/data, verified. A read that fails because its ledger was deleted
    meanwhile (``exists`` says so) drops that ledger from the plan (listed as deleted) and runs the job again."""
    assert plan.data is not None
    for run in range(RERUNS_FOR_DELETED + 1):
        try:
            return run_export(
                spark, service_uri, plan.data, f"{path.rstrip('/')}/{DATA_DIR}", "parquet", False, True, progress, True
            )
        except (NoSuchLedger, NoSuchEntry):
            gone = {ledger.ledger_id for ledger in plan.data.ledgers if not exists(ledger.ledger_id)}
            if not gone or run == RERUNS_FOR_DELETED:
                raise
            plan.without(gone)
    raise AssertionError("unreachable")


def ledger_rows(plan: BackupPlan, report: ExportReport | None, with_passwords: bool) -> pa.Table:
    """metadata/ledgers.parquet's table (LEDGERS_SCHEMA)."""
    backed_up = {ledger.ledger_id: ledger for ledger in plan.data.ledgers} if plan.data is not None else {}
    stats = report.read.ledgers if report is not None and report.read is not None else {}
    rows = []
    for snapshot in plan.ledgers:
        lid, md = snapshot.ledger_id, snapshot.metadata
        row: dict[str, Any] = {
            "ledgerId": lid,
            "formatVersion": md.format_version,
            "znode": snapshot.znode if with_passwords else without_password(snapshot.znode, f"ledger {lid}"),
            "hasPassword": bool(md.password),
            "state": md.state.name,
            "lastEntryId": md.last_entry_id,
            "length": md.length,
            "ctime": md.ctime,
            "customMetadata": list(md.custom_metadata.items()),
            "digestType": md.digest_type.name if md.digest_type is not None else None,
            "ensembleSize": md.ensemble_size,
            "writeQuorum": md.write_quorum_size,
            "ackQuorum": md.ack_quorum_size,
            "segments": " ".join(f"{s.first_entry_id}:{','.join(s.bookies)}" for s in md.segments),
        }
        if plan.data is not None:  # a ledger left out (open) holds no entries in the backup
            planned = backed_up.get(lid)
            entries, size, _, _, xor = stats.get(lid, (0, 0, 0, -1, 0))
            row |= {
                "backedUpLastEntryId": planned.last_entry_id if planned else -1,
                "backedUpLength": planned.length if planned else 0,
                "entries": entries,
                "payloadBytes": size,
                "payloadXor": xor,
            }
        rows.append(row)
    return pa.Table.from_pylist(rows, schema=ledgers_schema())


def _write(path: str, name: str, write: Callable[[Any], None]) -> FileEntry:
    """Write PATH/name through ``write(stream)``, hashing as it goes."""
    fs, root = filesystem(path)
    directory = f"{root}/{name.rsplit('/', 1)[0]}"
    fs.create_dir(directory)
    with fs.open_output_stream(f"{root}/{name}") as stream:
        hashing = HashingStream(stream)
        write(hashing)
    return FileEntry(name, hashing.size, hashing.sha256)


def _private(path: str) -> None:
    """Every directory of the local backup 0700, every file 0600 (the Spark tasks wrote theirs under their umask)."""
    root = local_path(path)
    os.chmod(root, 0o700)
    for directory, names, files in os.walk(root):
        for name in names:
            os.chmod(os.path.join(directory, name), 0o700)
        for name in files:
            os.chmod(os.path.join(directory, name), 0o600)


def finish(
    plan: BackupPlan,
    path: str,
    report: ExportReport | None,
    with_passwords: bool,
    created_at: str,
    created_by: str,
    pulsar: PulsarSnapshot | None = None,
) -> Manifest:
    """Write metadata/ledgers.parquet, metadata/pulsar.parquet with a Pulsar snapshot, the passwords when asked,
    and the manifest, last."""
    files = []
    if report is not None:
        files += [
            FileEntry(f"{DATA_DIR}/{o['name']}", o["fileBytes"], o["sha256"], o["rows"], tuple(map(tuple, o["ranges"])))
            for o in report.outputs
        ]
    table = ledger_rows(plan, report, with_passwords)
    files.append(_write(path, LEDGERS_FILE, lambda stream: pq.write_table(table, stream)))
    if pulsar is not None:
        znodes = pulsar_table(pulsar)
        files.append(_write(path, PULSAR_FILE, lambda stream: pq.write_table(znodes, stream)))
    if with_passwords:
        secrets = {str(s.ledger_id): base64.b64encode(s.metadata.password or b"").decode() for s in plan.ledgers}
        text = json.dumps(secrets, sort_keys=True).encode()
        if is_local(path):  # private from its first byte, not only once chmod-ed
            directory = os.path.join(local_path(path), "secrets")
            os.makedirs(directory, mode=0o700, exist_ok=True)
            descriptor = os.open(
                os.path.join(directory, "passwords.json"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600
            )
            with os.fdopen(descriptor, "wb") as f:
                f.write(text)
            files.append(FileEntry(PASSWORDS_FILE, len(text), hashlib.sha256(text).hexdigest()))
        else:
            files.append(_write(path, PASSWORDS_FILE, lambda stream: stream.write(text)))
    files += _others(path, {f.path for f in files})
    if with_passwords and is_local(path):
        _private(path)
    data = plan.data
    manifest = Manifest(
        created_at=created_at,
        source=plan.source,
        passwords="included" if with_passwords else "absent",
        ledgers=LedgerCounts(
            count=len(plan.ledgers),
            entries=data.entries if data is not None else 0,
            bytes=data.bytes if data is not None else 0,
            max_ledger_id=max((s.ledger_id for s in plan.ledgers), default=-1),
            open_included=plan.open_included,
            open_left_out=plan.open_left_out,
            deleted_during_backup=plan.deleted_during_backup,
        ),
        files=files,
        data=data is not None,
        finished_at=now_iso(),
        created_by=created_by,
        pulsar=pulsar.doc() if pulsar is not None else None,
    )
    manifest.dump(path)
    if with_passwords and is_local(path):
        os.chmod(os.path.join(local_path(path), MANIFEST), 0o600)
    return manifest


def _others(path: str, listed: set[str]) -> list[FileEntry]:
    """The files under PATH not listed yet (the export's empty _SUCCESS), hashed here: they are small."""
    found = []
    for name in sorted(set(list_files(path)) - listed - {MANIFEST}):
        size, digest = file_sha256(path, name)
        found.append(FileEntry(name, size, digest))
    return found


def run_backup(
    plan: BackupPlan,
    path: str,
    *,
    spark=None,
    service_uri: str = "",
    with_passwords: bool = False,
    overwrite: bool = False,
    created_by: str = "",
    progress: Callable[[int, int], None] | None = None,
    exists: Callable[[int], bool] = lambda _lid: True,
    pulsar: PulsarSnapshot | None = None,
) -> BackupReport:
    """Write the backup. With problems found by the data's verification, no manifest is written (the backup is
    not complete) and the report lists them. With a Pulsar snapshot, every ledger it needs must be backed up with
    its entries when the data is written (a referenced ledger deleted meanwhile: :class:`Unsafe`, no manifest)."""
    created_at = now_iso()
    staging = None
    if overwrite and not is_empty_or_missing(path):
        check_replaceable(path)
        staging = f"{path.rstrip('/')}/{STAGING}{uuid.uuid4().hex[:12]}"
    prepare(path, with_passwords)
    into = staging or path
    report = BackupReport(path, Manifest(created_at, plan.source, "absent", LedgerCounts(), []))
    try:
        export = None
        if plan.data is not None:
            export = write_data(spark, service_uri, plan, into, progress, exists)
            report.seconds = export.seconds
            report.problems, report.verified = export.problems, export.verified
        if not report.problems:
            if pulsar is not None:
                check_pulsar_complete(plan, pulsar)
            report.manifest = finish(plan, into, export, with_passwords, created_at, created_by, pulsar)
    except BaseException:
        if staging is not None:
            _discard(staging)
        raise
    if staging is not None:
        if report.problems:
            _discard(staging)
        else:
            replace_earlier(path, staging, with_passwords)
    return report


def _discard(staging: str) -> None:
    """Remove an overwrite's unfinished backup; the earlier one stays as it was."""
    fs, root = filesystem(staging)
    with contextlib.suppress(OSError):
        fs.delete_dir(root)


def check_pulsar_complete(plan: BackupPlan, pulsar: PulsarSnapshot) -> None:
    """Every ledger the Pulsar snapshot needs is in the plan's data (closed, or open up to its LAC); else
    :class:`Unsafe` naming the first: a restore of the snapshot would point Pulsar at a ledger it does not have."""
    backed_up = [ledger.ledger_id for ledger in plan.data.ledgers] if plan.data is not None else []
    missing = missing_from_backup(pulsar, backed_up)
    if missing:
        gone = set(plan.deleted_during_backup)
        why = "deleted while the backup ran" if missing[0] in gone else "not in the backup's data"
        raise Unsafe(
            f"{len(missing)} ledger(s) Pulsar's metadata references are not backed up (first: "
            f"{pulsar.describe(missing[0])}, {why}): run the backup again"
        )

"""A backup's manifest: what is in the backup, from which cluster, when, and every file's size and SHA-256.

Layout of a backup at PATH (a local path or any path ``ledger export`` writes)::

    PATH/manifest.json             written last, atomically: its presence means the backup is complete
    PATH/metadata/ledgers.parquet  one row per ledger (LEDGERS_SCHEMA)
    PATH/data/part-NNNNN.parquet   with --data: the export's rows plus ledgerLength (the entry's stored length field)
    PATH/data/_SUCCESS             the export's marker, empty
    PATH/secrets/passwords.json    with --with-passwords only: {"<ledgerId>": "<base64>"}
    PATH/metadata/pulsar.parquet   with --with-pulsar-metadata only: Pulsar's znodes (admin/backup/pulsar.py)

``manifest.json`` is JSON with sorted keys::

    {"format": "bkctl-backup", "formatVersion": 1, "createdBy": "bkctl 0.1.0",
     "createdAt": "2026-11-29T01:00:00Z", "finishedAt": "...", "data": true,
     "source": {"serviceUri": ..., "instanceId": ..., "manager": ..., "layout": ..., "idGenerator": {...}},
     "passwords": "included" | "absent",
     "ledgers": {"count", "entries", "bytes", "maxLedgerId", "openIncluded", "openLeftOut", "deletedDuringBackup"},
     "files": [{"path": "data/part-00000.parquet", "bytes", "sha256", "rows", "ranges": [[ledgerId, first, last]]}],
     "pulsar": null | {"root", "znodes", "topics", "referencedLedgers", "offloadedLedgers"},
     "manifestSha256": "<hex>"}

``files`` lists every file under PATH but manifest.json, by its path relative to PATH with ``/``; ``rows`` and
``ranges`` only for data files (the entries of each ledger a file holds, in entry order). ``pulsar`` is null
without --with-pulsar-metadata; a manifest without the key (an older bkctl's) reads as null. ``manifestSha256`` is the
SHA-256 of the canonical JSON of the manifest without that key (sorted keys, no spaces, ASCII), so any edit of the
manifest shows. Entry counts and bytes are payload: ``bytes`` is the sum of the backed-up ledgers' lengths.

Reading needs only the standard library for local backups; pyarrow for ledgers.parquet and remote file systems.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from bookie.errors import CorruptData, InvalidArgument, NotFound
from bookie.meta import ledger_metadata
from bookie.meta.ledger_metadata import LedgerMetadata

FORMAT = "bkctl-backup"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
LEDGERS_FILE = "metadata/ledgers.parquet"
PASSWORDS_FILE = "secrets/passwords.json"
DATA_DIR = "data"
READ_CHUNK = 1 << 20


def __getattr__(name: str) -> Any:  # LEDGERS_SCHEMA needs pyarrow, which reading a local manifest does not
    if name == "LEDGERS_SCHEMA":
        return ledgers_schema()
    raise AttributeError(name)


def ledgers_schema() -> Any:
    """metadata/ledgers.parquet: one row per ledger.

    ``znode`` is the metadata as the source stored it (format 1, 2 or 3: ``formatVersion``), with the password
    removed unless the backup includes passwords. ``lastEntryId``/``length`` are the metadata's (-1/0 for an open
    ledger); ``backedUpLastEntryId``/``backedUpLength`` what the backup holds (an open ledger's LAC and that entry's
    length field, -1/0 when its entries were not backed up). ``entries``, ``payloadBytes``, ``payloadXor`` (the
    export's BLAKE2b-8 XOR, as uint64) are those of the data files; null without --data.
    """
    import pyarrow as pa

    return pa.schema(
        [
            ("ledgerId", pa.int64()),
            ("formatVersion", pa.int32()),
            ("znode", pa.binary()),
            ("hasPassword", pa.bool_()),
            ("state", pa.string()),
            ("lastEntryId", pa.int64()),
            ("length", pa.int64()),
            ("ctime", pa.int64()),
            ("customMetadata", pa.map_(pa.string(), pa.binary())),
            ("digestType", pa.string()),
            ("ensembleSize", pa.int32()),
            ("writeQuorum", pa.int32()),
            ("ackQuorum", pa.int32()),
            ("segments", pa.string()),
            ("backedUpLastEntryId", pa.int64()),
            ("backedUpLength", pa.int64()),
            ("entries", pa.int64()),
            ("payloadBytes", pa.int64()),
            ("payloadXor", pa.uint64()),
        ]
    )


@dataclass(frozen=True)
class FileEntry:
    """One file of the backup: its path relative to the backup's root, size, SHA-256; for data files the rows and
    the ``(ledgerId, firstEntry, lastEntry)`` ranges it holds, in file order."""

    path: str
    bytes: int
    sha256: str
    rows: int | None = None
    ranges: tuple[tuple[int, int, int], ...] = ()

    def doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"path": self.path, "bytes": self.bytes, "sha256": self.sha256}
        if self.rows is not None:
            doc["rows"] = self.rows
            doc["ranges"] = [list(r) for r in self.ranges]
        return doc

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> FileEntry:
        ranges = tuple((int(a), int(b), int(c)) for a, b, c in doc.get("ranges", ()))
        rows = doc.get("rows")
        return cls(str(doc["path"]), int(doc["bytes"]), str(doc["sha256"]), None if rows is None else int(rows), ranges)


@dataclass
class Source:
    """The cluster backed up: its service URI without credentials, instance id, ledger manager, LAYOUT text and
    the id generator's position when the backup started (informational)."""

    service_uri: str
    instance_id: str
    manager: str
    layout: str = ""
    id_generator: dict[str, Any] = field(default_factory=dict)

    def doc(self) -> dict[str, Any]:
        return {
            "serviceUri": self.service_uri,
            "instanceId": self.instance_id,
            "manager": self.manager,
            "layout": self.layout,
            "idGenerator": self.id_generator,
        }

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> Source:
        layout, id_generator = doc.get("layout", ""), doc.get("idGenerator", {})
        return cls(doc["serviceUri"], doc["instanceId"], doc["manager"], layout, id_generator)


@dataclass
class LedgerCounts:
    count: int = 0
    entries: int = 0
    bytes: int = 0
    max_ledger_id: int = -1
    open_included: list[int] = field(default_factory=list)
    open_left_out: list[int] = field(default_factory=list)
    deleted_during_backup: list[int] = field(default_factory=list)

    def doc(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "entries": self.entries,
            "bytes": self.bytes,
            "maxLedgerId": self.max_ledger_id,
            "openIncluded": self.open_included,
            "openLeftOut": self.open_left_out,
            "deletedDuringBackup": self.deleted_during_backup,
        }

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> LedgerCounts:
        return cls(
            int(doc["count"]),
            int(doc["entries"]),
            int(doc["bytes"]),
            int(doc["maxLedgerId"]),
            [int(i) for i in doc.get("openIncluded", ())],
            [int(i) for i in doc.get("openLeftOut", ())],
            [int(i) for i in doc.get("deletedDuringBackup", ())],
        )


@dataclass
class Manifest:
    created_at: str
    source: Source
    passwords: str  # "included" | "absent"
    ledgers: LedgerCounts
    files: list[FileEntry]
    data: bool = False  # entries backed up (--data), or metadata only
    finished_at: str = ""
    created_by: str = ""
    format_version: int = FORMAT_VERSION
    pulsar: dict[str, Any] | None = None  # with --with-pulsar-metadata: PulsarSnapshot.doc()

    def doc(self) -> dict[str, Any]:
        """The manifest as written, ``manifestSha256`` included."""
        doc = {
            "format": FORMAT,
            "formatVersion": self.format_version,
            "createdBy": self.created_by,
            "createdAt": self.created_at,
            "finishedAt": self.finished_at,
            "data": self.data,
            "source": self.source.doc(),
            "passwords": self.passwords,
            "ledgers": self.ledgers.doc(),
            "files": [f.doc() for f in sorted(self.files, key=lambda f: f.path)],
            "pulsar": self.pulsar,
        }
        doc["manifestSha256"] = canonical_sha256(doc)
        return doc

    def files_of(self, ledger_id: int) -> list[FileEntry]:
        """The data files holding entries of the ledger, in entry order."""
        firsts = []
        for f in self.files:
            starts = [first for lid, first, _ in f.ranges if lid == ledger_id]
            if starts:
                firsts.append((min(starts), f.path, f))
        return [f for _, _, f in sorted(firsts, key=lambda item: (item[0], item[1]))]

    def dump(self, path: str) -> None:
        """Write ``PATH/manifest.json`` atomically: a temporary file, then a rename (on object stores, which have
        no rename, a single put is atomic already)."""
        text = json.dumps(self.doc(), sort_keys=True, indent=1, ensure_ascii=True) + "\n"
        if is_local(path):
            root = local_path(path)
            temporary = os.path.join(root, f".{MANIFEST}.tmp")
            with open(temporary, "w", encoding="ascii") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temporary, os.path.join(root, MANIFEST))
            return
        filesystem, root = _remote(path)
        with filesystem.open_output_stream(f"{root}/{MANIFEST}") as f:
            f.write(text.encode("ascii"))

    @classmethod
    def from_doc(cls, doc: dict[str, Any], where: str = MANIFEST) -> Manifest:
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise InvalidArgument(f"{where}: not a bkctl backup manifest (format is not {FORMAT!r})")
        version = doc.get("formatVersion")
        if not isinstance(version, int):
            raise CorruptData(f"{where}: formatVersion missing or not a number")
        if version > FORMAT_VERSION:
            raise InvalidArgument(f"backup format {version} is newer than this bkctl reads ({FORMAT_VERSION})")
        if doc.get("manifestSha256") != canonical_sha256(doc):
            raise CorruptData(f"{where}: manifestSha256 does not match its content (corrupt or edited)")
        try:
            manifest = cls(
                created_at=doc["createdAt"],
                source=Source.from_doc(doc["source"]),
                passwords=doc["passwords"],
                ledgers=LedgerCounts.from_doc(doc["ledgers"]),
                files=[FileEntry.from_doc(f) for f in doc["files"]],
                data=bool(doc.get("data", False)),
                finished_at=doc.get("finishedAt", ""),
                created_by=doc.get("createdBy", ""),
                format_version=version,
                pulsar=doc.get("pulsar"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptData(f"{where}: malformed manifest ({type(exc).__name__}: {exc})") from None
        if manifest.pulsar is not None and not isinstance(manifest.pulsar, dict):
            raise CorruptData(f"{where}: pulsar is not an object")
        if manifest.passwords not in ("included", "absent"):
            raise CorruptData(f"{where}: passwords is {manifest.passwords!r}, expected included or absent")
        return manifest

    @classmethod
    def load(cls, path: str) -> Manifest:
        """The manifest of the backup at ``path``: parsed, its format version and its own checksum checked."""
        where = f"{path.rstrip('/')}/{MANIFEST}"
        try:
            data = _read_bytes(path, MANIFEST)
        except FileNotFoundError:
            raise NotFound(f"{where} does not exist: not a backup, or one that did not finish") from None
        except NotADirectoryError:
            raise InvalidArgument(f"{path} is not a directory: not a backup") from None
        except OSError as exc:
            raise InvalidArgument(f"cannot read {where}: {os.strerror(exc.errno) if exc.errno else exc}") from None
        try:
            doc = json.loads(data)
        except ValueError as exc:
            raise CorruptData(f"{where}: not JSON ({exc})") from None
        return cls.from_doc(doc, where)

    def check_files(self, path: str) -> None:
        """Every listed file exists with its size and SHA-256, and data/ holds no other file; else
        :class:`CorruptData` naming the first file that is wrong."""
        listed = {f.path for f in self.files}
        for name in sorted(list_files(path, DATA_DIR)):
            if name not in listed:
                raise CorruptData(f"{name}: in the backup's data/ but not in its manifest (added or left behind)")
        for entry in sorted(self.files, key=lambda f: f.path):
            try:
                size, digest = file_sha256(path, entry.path)
            except FileNotFoundError:
                raise CorruptData(f"{entry.path}: listed in the manifest but missing") from None
            if size != entry.bytes:
                raise CorruptData(f"{entry.path}: {size} bytes, the manifest says {entry.bytes} (truncated or changed)")
            if digest != entry.sha256:
                raise CorruptData(f"{entry.path}: SHA-256 mismatch (corrupt or changed)")


def canonical_sha256(doc: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of ``doc`` without its ``manifestSha256``."""
    body = {k: v for k, v in doc.items() if k != "manifestSha256"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


# --- the backup's files, local or remote ----------------------------------------------------------------------------


def is_local(path: str) -> bool:
    return "://" not in path or path.startswith("file://")


def local_path(path: str) -> str:
    return os.path.abspath(path.removeprefix("file://"))


def _remote(path: str) -> tuple[Any, str]:
    from admin.export.part_files import filesystem

    return filesystem(path, "read")


def _read_bytes(path: str, name: str) -> bytes:
    return b"".join(_chunks(path, name))


def _chunks(path: str, name: str) -> Iterator[bytes]:
    if is_local(path):
        with open(os.path.join(local_path(path), name), "rb") as f:
            while chunk := f.read(READ_CHUNK):
                yield chunk
        return
    filesystem, root = _remote(path)
    from pyarrow import fs

    if filesystem.get_file_info(f"{root}/{name}").type == fs.FileType.NotFound:
        raise FileNotFoundError(name)
    with filesystem.open_input_stream(f"{root}/{name}") as f:
        while chunk := f.read(READ_CHUNK):
            yield chunk


def file_sha256(path: str, name: str) -> tuple[int, str]:
    """(size, SHA-256 hex) of the backup's file ``name``; FileNotFoundError when it is not there."""
    digest, size = hashlib.sha256(), 0
    for chunk in _chunks(path, name):
        digest.update(chunk)
        size += len(chunk)
    return size, digest.hexdigest()


def list_files(path: str, under: str = "") -> list[str]:
    """Every file below ``PATH/under`` (all of PATH by default), as paths relative to PATH with ``/``."""
    if is_local(path):
        root = local_path(path)
        found = []
        for directory, _, names in os.walk(os.path.join(root, under)):
            found += [os.path.relpath(os.path.join(directory, n), root).replace(os.sep, "/") for n in names]
        return found
    filesystem, root = _remote(path)
    from pyarrow import fs

    top = f"{root}/{under}".rstrip("/")
    if filesystem.get_file_info(top).type == fs.FileType.NotFound:
        return []
    infos = filesystem.get_file_info(fs.FileSelector(top, recursive=True))
    return [i.path[len(root) + 1 :] for i in infos if i.type == fs.FileType.File]


# --- what a backup holds per ledger ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class BackedUpLedger:
    """A ledger as the backup has it. ``metadata`` carries the password only when the backup includes passwords
    (else None); ``last_entry_id``/``length`` are what the backup holds (an open ledger's LAC and that entry's length
    field); ``state_at_backup`` is the metadata's state then (OPEN, IN_RECOVERY, CLOSED)."""

    ledger_id: int
    metadata: LedgerMetadata
    has_password: bool
    state_at_backup: str
    last_entry_id: int
    length: int
    entries: int | None
    payload_bytes: int | None
    payload_xor: int | None
    format_version: int


def read_ledgers(path: str) -> list[BackedUpLedger]:
    """The ledgers of the backup at ``path``, in id order, from metadata/ledgers.parquet (and the passwords, when
    the backup includes them)."""
    import pyarrow.parquet as pq

    if is_local(path):
        table = pq.read_table(os.path.join(local_path(path), LEDGERS_FILE))
    else:
        filesystem, root = _remote(path)
        table = pq.read_table(f"{root}/{LEDGERS_FILE}", filesystem=filesystem)
    passwords = read_passwords(path)
    ledgers = []
    for row in table.to_pylist():
        lid = row["ledgerId"]
        md = ledger_metadata.parse(row["znode"], f"{LEDGERS_FILE}: ledger {lid}", row["ctime"])
        md = md.with_changes(password=passwords.get(lid) if md.format_version > 1 else None)
        ledgers.append(
            BackedUpLedger(
                ledger_id=lid,
                metadata=md,
                has_password=row["hasPassword"],
                state_at_backup=row["state"],
                last_entry_id=row["backedUpLastEntryId"],
                length=row["backedUpLength"],
                entries=row["entries"],
                payload_bytes=row["payloadBytes"],
                payload_xor=row["payloadXor"],
                format_version=row["formatVersion"],
            )
        )
    return sorted(ledgers, key=lambda ledger: ledger.ledger_id)


def read_passwords(path: str) -> dict[int, bytes]:
    """``{ledgerId: password}`` from secrets/passwords.json; empty when the backup has no passwords."""
    try:
        data = _read_bytes(path, PASSWORDS_FILE)
    except FileNotFoundError:
        return {}
    try:
        return {int(k): base64.b64decode(v, validate=True) for k, v in json.loads(data).items()}
    except (ValueError, AttributeError) as exc:
        raise CorruptData(f"{PASSWORDS_FILE}: malformed ({type(exc).__name__})") from None

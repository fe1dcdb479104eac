"""A backup made without Spark, for tests of what a restore refuses: the layout `bkctl cluster backup --data` writes
(admin/backup/manifest.py), one data file per ledger, read with the client."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from admin.backup.manifest import FileEntry, LedgerCounts, Manifest, Source, ledgers_schema
from bookie.client import BookKeeper
from bookie.client.replay import payload_xor
from bookie.meta import ledger_metadata

DATA_SCHEMA = pa.schema(
    [
        ("ledgerId", pa.int64()),
        ("entryId", pa.int64()),
        ("payload", pa.binary()),
        ("length", pa.int64()),
        ("lastAddConfirmed", pa.int64()),
        ("ledgerLength", pa.int64()),
    ]
)


def _listed(root: Path, name: str, rows: int | None = None, ranges=()) -> FileEntry:
    data = (root / name).read_bytes()
    return FileEntry(name, len(data), hashlib.sha256(data).hexdigest(), rows, tuple(ranges))


def write_backup(root: Path, bk: BookKeeper, ledger_ids: list[int], with_passwords: bool = True) -> Manifest:
    """Back up these closed ledgers of ``bk``'s cluster to ``root``."""
    (root / "data").mkdir(parents=True)
    (root / "metadata").mkdir()
    (root / "data" / "_SUCCESS").write_bytes(b"")
    files, rows, passwords = [_listed(root, "data/_SUCCESS")], [], {}
    for index, ledger_id in enumerate(ledger_ids):
        md = bk.ledger_metadata(ledger_id)
        with bk.open_ledger(ledger_id, md.password, recovery=False) as handle:
            entries = handle.read(0, md.last_entry_id) if md.last_entry_id >= 0 else []
        name = f"data/part-{index:05d}.parquet"
        columns = (
            list(
                zip(
                    *(
                        (ledger_id, e.entry_id, e.payload, len(e.payload), e.last_add_confirmed, e.length)
                        for e in entries
                    ),
                    strict=True,
                )
            )
            or [()] * 6
        )
        pq.write_table(pa.table([pa.array(c, f.type) for c, f in zip(columns, DATA_SCHEMA, strict=True)],
                                schema=DATA_SCHEMA), root / name)  # fmt: skip
        files.append(_listed(root, name, len(entries), [(ledger_id, 0, md.last_entry_id)] if entries else ()))
        passwords[str(ledger_id)] = base64.b64encode(md.password or b"").decode()
        kept = md if with_passwords else md.with_changes(password=b"")
        rows.append(
            {
                "ledgerId": ledger_id,
                "formatVersion": md.format_version,
                "znode": ledger_metadata.serialize(kept),
                "hasPassword": bool(md.password),
                "state": "CLOSED",
                "lastEntryId": md.last_entry_id,
                "length": md.length,
                "ctime": md.ctime,
                "customMetadata": list(md.custom_metadata.items()),
                "digestType": md.digest_type.name if md.digest_type else None,
                "ensembleSize": md.ensemble_size,
                "writeQuorum": md.write_quorum_size,
                "ackQuorum": md.ack_quorum_size,
                "segments": " ".join(f"{s.first_entry_id}:{','.join(s.bookies)}" for s in md.segments),
                "backedUpLastEntryId": md.last_entry_id,
                "backedUpLength": md.length,
                "entries": len(entries),
                "payloadBytes": md.length,
                "payloadXor": payload_xor(ledger_id, ((e.entry_id, e.payload) for e in entries)),
            }
        )
    pq.write_table(pa.Table.from_pylist(rows, schema=ledgers_schema()), root / "metadata" / "ledgers.parquet")
    files.append(_listed(root, "metadata/ledgers.parquet"))
    if with_passwords:
        (root / "secrets").mkdir(mode=0o700)
        (root / "secrets" / "passwords.json").write_text(json.dumps(passwords))
        files.append(_listed(root, "secrets/passwords.json"))
    counts = LedgerCounts(
        len(ledger_ids), sum(f.rows or 0 for f in files), sum(r["length"] for r in rows), max(ledger_ids)
    )
    source = Source(bk.core.store.uri.zk_hosts, "instance", bk.core.ledgers.manager)
    manifest = Manifest("2026-11-29T00:00:00Z", source, "included" if with_passwords else "absent", counts, files)
    manifest.data = True
    manifest.dump(str(root))
    return manifest


def rewrite_manifest(root: Path, **changes) -> None:
    """Change top-level fields of ``root``'s manifest.json and seal it again (its own SHA-256 recomputed)."""
    from admin.backup.manifest import canonical_sha256

    path = root / "manifest.json"
    doc = {**json.loads(path.read_text()), **changes}
    doc["manifestSha256"] = canonical_sha256(doc)
    path.write_text(json.dumps(doc, sort_keys=True))


def reseal(root: Path) -> None:
    """Take the sizes and SHA-256 of ``root``'s files as they are now into its manifest: a backup changed on
    purpose that passes every check of its files."""
    manifest = Manifest.load(str(root))
    manifest.files = [_listed(root, f.path, f.rows, f.ranges) for f in manifest.files]
    manifest.dump(str(root))

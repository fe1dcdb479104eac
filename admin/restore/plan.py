"""What a restore will do, decided before it writes anything: which ledger of the backup goes to which id of the
target, with which password, which data files each Spark task reads; and the checks that refuse a restore that
cannot succeed, each with the one line the user sees: :class:`CorruptData` for a backup that contradicts itself,
:class:`Unsafe` for a target that cannot take it, :class:`InvalidArgument` and :class:`Unauthorized` for the input.

Ids: kept, unless ``--id-map FILE`` (lines ``OLD NEW``; ``#`` starts a comment) maps them, or ``--new-ids`` gives
every id that exists in the target a generated one (generated at the claim, after the id generator moved past the
kept ids, so a new id never takes a kept one). A target ledger under a kept id is a collision, except one this
restore wrote before from the same backup ledger (its sizes, digest type, password, ctime and custom metadata):
CLOSED without a marker at its last entry (skipped: "restored already"), or OPEN and still carrying a restore's
marker (written again: "redo").

Tasks: a data file holds ranges of entries of one or more ledgers, and a big ledger spans several files; the files
that share a ledger go to the same task (one ledger is never split across writers), and small groups are packed
together up to a size the job picks (:func:`task_bytes`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from admin.backup.manifest import BackedUpLedger, FileEntry, Manifest
from admin.restore.room import check_room, wanted
from bookie.client.replay import ledger_differs
from bookie.errors import CorruptData, InvalidArgument, Unauthorized, Unsafe
from bookie.meta.ledger_metadata import LedgerMetadata, LedgerState
from bookie.meta.paths import MAX_LEDGER_ID, SHORT_ID_LIMIT

MARKER_KEY = "bkctl.restore"  # custom metadata of a ledger a restore claimed and has not closed: the run's id
TASK_BYTES = 64 << 20  # payload per Spark task at most, as the export's default partition
MIN_TASK_BYTES = 4 << 20
SHOWN_IDS = 5  # ledger ids a refusal names


@dataclass(frozen=True)
class RestoreLedger:
    """One ledger of the backup and what the restore does with it. ``target_id`` None: a new id, generated at the
    claim (--new-ids). ``action``: ``create``, ``redo`` (a restore's marked ledger, written again) or ``skip``
    (restored already)."""

    source: BackedUpLedger
    target_id: int | None
    password: bytes = field(repr=False)
    action: str = "create"

    @property
    def source_id(self) -> int:
        return self.source.ledger_id

    @property
    def ledger_id(self) -> int:
        """The target id, once it is known (a generated one is given at the claim)."""
        if self.target_id is None:
            raise ValueError(f"ledger {self.source_id} has no target id yet")
        return self.target_id

    @property
    def entries(self) -> int:
        return self.source.last_entry_id + 1

    @property
    def bytes(self) -> int:
        return self.source.length


@dataclass(frozen=True)
class TaskSpec:
    """What one Spark task restores: the data files it reads, in order, and the ledgers they hold (source ids)."""

    index: int
    files: tuple[str, ...]
    ledgers: tuple[int, ...]
    entries: int
    bytes: int


@dataclass
class RestorePlan:
    path: str
    manifest: Manifest
    ledgers: list[RestoreLedger]
    open_left_out: list[int] = field(default_factory=list)

    @property
    def to_write(self) -> list[RestoreLedger]:
        return [ledger for ledger in self.ledgers if ledger.action != "skip"]

    @property
    def entries(self) -> int:
        return sum(ledger.entries for ledger in self.to_write)

    @property
    def bytes(self) -> int:
        return sum(ledger.bytes for ledger in self.to_write)

    def id_map(self) -> dict[int, int | None]:
        """Source id → target id of every ledger whose id changes (None: to be generated)."""
        return {lg.source_id: lg.target_id for lg in self.ledgers if lg.target_id != lg.source_id}

    def doc(self) -> dict[str, Any]:
        """``create``: how many ledgers are new; ``redo`` and ``restoredAlready``: the target ids of those an
        earlier run left marked, or restored and closed."""
        return {
            "path": self.path,
            "source": self.manifest.source.service_uri,
            "backupCreatedAt": self.manifest.created_at,
            "ledgers": len(self.to_write),
            "entries": self.entries,
            "bytes": self.bytes,
            "create": sum(lg.action == "create" for lg in self.ledgers),
            "redo": [lg.target_id for lg in self.ledgers if lg.action == "redo"],
            "restoredAlready": [lg.target_id for lg in self.ledgers if lg.action == "skip"],
            "openLeftOut": self.open_left_out,
            "idMap": {str(k): v for k, v in self.id_map().items()},
        }


# ---- input: the id map, passwords ----


def parse_id_map(text: str, where: str) -> dict[int, int]:
    """``OLD NEW`` per line (blank lines and ``#`` comments allowed); InvalidArgument naming the line otherwise."""
    mapping: dict[int, int] = {}
    targets: dict[int, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) != 2 or not all(w.isdigit() and int(w) <= MAX_LEDGER_ID for w in words):
            raise InvalidArgument(f"{where}, line {number}: expected OLD NEW (two ledger ids), got {line.strip()!r}")
        old, new = int(words[0]), int(words[1])
        if old in mapping:
            raise InvalidArgument(f"{where}, line {number}: ledger {old} is mapped twice")
        if new in targets:
            raise InvalidArgument(f"{where}, line {number}: ledger {new} is the new id of ledger {targets[new]} too")
        mapping[old], targets[new] = new, old
    return mapping


def resolve_passwords(ledgers: Iterable[BackedUpLedger], password_file: bytes | None) -> dict[int, bytes]:
    """Each ledger's password: the backup's, else empty for a ledger that had none, else ``password_file``'s.
    Unauthorized naming how many and the first when some have none."""
    found, missing = {}, []
    for ledger in ledgers:
        if ledger.metadata.password is not None:
            found[ledger.ledger_id] = ledger.metadata.password
        elif not ledger.has_password:
            found[ledger.ledger_id] = b""
        elif password_file is not None:
            found[ledger.ledger_id] = password_file
        else:
            missing.append(ledger.ledger_id)
    if missing:
        raise Unauthorized(
            f"{len(missing)} ledgers have a password the backup does not include (ledger {_first(missing)}): "
            "pass --password-file F"
        )
    return found


def _first(ids: list[int]) -> str:
    shown = ", ".join(map(str, ids[:SHOWN_IDS]))
    return shown + (f" and {len(ids) - SHOWN_IDS} more" if len(ids) > SHOWN_IDS else "")


# ---- the backup's own consistency ----


def read_order(manifest: Manifest) -> list[FileEntry]:
    """The data files in the order a reader meets each ledger's entries from 0 up: by their first range."""
    return sorted((f for f in manifest.files if f.ranges), key=lambda f: (f.ranges[0][0], f.ranges[0][1], f.path))


def check_ranges(manifest: Manifest, ledgers: Iterable[BackedUpLedger]) -> None:
    """In read order, each ledger's ranges are contiguous, run from entry 0 to the backed-up last entry, and no
    ledger's ranges are interleaved with another's: CorruptData naming the file otherwise."""
    expected = {ledger.ledger_id: ledger.last_entry_id for ledger in ledgers}
    following: dict[int, int] = {}  # ledger -> the next entry expected
    current = None
    for f in read_order(manifest):
        for ledger_id, first, last in f.ranges:
            if ledger_id not in expected:
                raise CorruptData(f"{f.path}: holds entries of ledger {ledger_id}, which the backup does not list")
            if ledger_id != current and ledger_id in following:
                raise CorruptData(f"{f.path}: entries of ledger {ledger_id} come after another ledger's")
            if first != following.get(ledger_id, 0) or last < first:
                raise CorruptData(
                    f"{f.path}: ledger {ledger_id} entries {first}..{last} where entry "
                    f"{following.get(ledger_id, 0)} comes next"
                )
            current, following[ledger_id] = ledger_id, last + 1
    for ledger_id, last in expected.items():
        if following.get(ledger_id, 0) != last + 1:
            raise CorruptData(
                f"the backup's data files hold entries 0..{following.get(ledger_id, 0) - 1} of ledger {ledger_id}, "
                f"its metadata says 0..{last}"
            )


def task_bytes(total: int, parallelism: int) -> int:
    """Payload per task: about two tasks per core (one restoring while another waits on its bookies), from 4 to 64
    MB. 67 MB of 8 ledgers in tasks of 64 MB on local[2] ran one task of 7 ledgers beside one of 1."""
    return max(MIN_TASK_BYTES, min(TASK_BYTES, total // max(1, 2 * parallelism)))


def tasks(manifest: Manifest, ledgers: list[RestoreLedger], task_bytes: int = TASK_BYTES) -> list[TaskSpec]:
    """Groups of files that share no ledger with another group, packed into tasks of about ``task_bytes``."""
    wanted = {lg.source_id: lg for lg in ledgers if lg.action != "skip" and lg.entries > 0}
    groups: list[tuple[list[str], list[int]]] = []
    for f in read_order(manifest):
        held = [lid for lid, _, _ in f.ranges if lid in wanted]
        if not held:
            continue
        # files come in read order: a ledger continued from the previous file joins its group
        if groups and groups[-1][1] and held[0] == groups[-1][1][-1]:
            groups[-1][0].append(f.path)
            groups[-1][1].extend(i for i in held[1:] if i not in groups[-1][1])
        else:
            groups.append(([f.path], list(dict.fromkeys(held))))
    result: list[TaskSpec] = []
    files: list[str] = []
    ids: list[int] = []
    size = 0
    for group_files, group_ids in groups:
        if files and size + sum(wanted[i].bytes for i in group_ids) > task_bytes:
            result.append(_task(len(result), files, ids, wanted))
            files, ids, size = [], [], 0
        files += group_files
        ids += group_ids
        size += sum(wanted[i].bytes for i in group_ids)
    if files:
        result.append(_task(len(result), files, ids, wanted))
    return result


def _task(index: int, files: list[str], ids: list[int], wanted: dict[int, RestoreLedger]) -> TaskSpec:
    return TaskSpec(
        index,
        tuple(files),
        tuple(ids),
        sum(wanted[i].entries for i in ids),
        sum(wanted[i].bytes for i in ids),
    )


# ---- the target ----


def restored_as(target: LedgerMetadata, ledger: BackedUpLedger, password: bytes) -> bool:
    """Whether the target's ledger is this backup's ledger, restored and closed: what a rerun skips."""
    return (
        target.state == LedgerState.CLOSED
        and MARKER_KEY not in target.custom_metadata
        and not ledger_differs(target, ledger.metadata, password, MARKER_KEY)
        and (target.last_entry_id, target.length) == (ledger.last_entry_id, ledger.length)
    )


def redo_of(target: LedgerMetadata, ledger: BackedUpLedger, password: bytes) -> bool:
    """Whether the target's ledger is this backup's ledger claimed by a restore that did not close it: OPEN, marked
    by a run, and written from it (another ledger's entries are never written under its metadata)."""
    return (
        target.state == LedgerState.OPEN
        and MARKER_KEY in target.custom_metadata
        and not ledger_differs(target, ledger.metadata, password, MARKER_KEY)
    )


def assign_ids(
    ledgers: list[BackedUpLedger],
    passwords: dict[int, bytes],
    existing: dict[int, LedgerMetadata | None],
    id_map: dict[int, int] | None,
    new_ids: bool,
) -> list[RestoreLedger]:
    """Each ledger's target id and action, given the target's ledgers under the candidate ids (``existing``; None:
    metadata that cannot be read).
    Unsafe for ids taken by other ledgers (with neither --id-map nor --new-ids, or taken by --id-map's)."""
    known = {ledger.ledger_id for ledger in ledgers}
    if id_map:
        unknown = sorted(set(id_map) - known)
        if unknown:
            raise InvalidArgument(f"the id map names ledgers the backup does not hold: {_first(unknown)}")
    mapped = {ledger.ledger_id: (id_map or {}).get(ledger.ledger_id, ledger.ledger_id) for ledger in ledgers}
    owners: dict[int, int] = {}
    for source_id, target_id in mapped.items():
        if target_id in owners:
            raise InvalidArgument(
                f"ledgers {owners[target_id]} and {source_id} would both be restored as ledger {target_id}"
            )
        owners[target_id] = source_id
    result, collisions = [], []
    for ledger in ledgers:
        target_id = mapped[ledger.ledger_id]
        password = passwords[ledger.ledger_id]
        action = "create"
        if target_id in existing:
            there = existing[target_id]
            if there is not None and redo_of(there, ledger, password):
                action = "redo"
            elif there is not None and restored_as(there, ledger, password):
                action = "skip"
            elif new_ids:
                result.append(RestoreLedger(ledger, None, password))
                continue
            else:
                collisions.append(target_id)
        result.append(RestoreLedger(ledger, target_id, password, action))
    if collisions:
        how = "change them in --id-map" if id_map else "pass --id-map FILE or --new-ids"
        raise Unsafe(
            f"{len(collisions)} ledger ids of the backup exist in the target (ledger {_first(collisions)}): {how}"
        )
    return result


def check_target(plan_ledgers: list[RestoreLedger], manager: str, room: Callable[[], dict[str, int]]) -> None:
    """The target can take the ledgers: its layout holds every id; its writable bookies (``room()``: each one's
    room, :func:`~admin.restore.room.room_of`, asked only when there is something to write) are enough for the
    widest ensemble and have room for every replica."""
    if manager == "legacyhierarchical":
        too_big = sorted(
            lg.target_id for lg in plan_ledgers if lg.target_id is not None and lg.target_id >= SHORT_ID_LIMIT
        )
        if too_big:
            raise Unsafe(
                f"the target's ledger manager (legacyhierarchical) holds ids below {SHORT_ID_LIMIT} only: "
                f"{len(too_big)} ledgers are above (ledger {_first(too_big)}); map them with --id-map"
            )
    writing = [
        wanted(lg.source_id, lg.source.metadata, lg.entries, lg.bytes) for lg in plan_ledgers if lg.action != "skip"
    ]
    if writing:
        check_room(room(), writing)


def plan_restore(
    path: str,
    manifest: Manifest,
    backed_up: list[BackedUpLedger],
    core: Any,
    room: Callable[[], dict[str, int]],
    password_file: bytes | None,
    id_map: dict[int, int] | None,
    new_ids: bool,
) -> RestorePlan:
    """Every check that needs the target (a :class:`~bookie.client.core.ClientCore`: its ledgers, read only; and its
    writable bookies' room, :func:`~admin.restore.room.room_of`), and the plan. The backup's files are checked
    before (``Manifest.check_files``)."""
    left_out = set(manifest.ledgers.open_left_out)
    ledgers = [ledger for ledger in backed_up if ledger.ledger_id not in left_out]
    check_ranges(manifest, ledgers)
    passwords = resolve_passwords(ledgers, password_file)
    candidates = [(id_map or {}).get(ledger.ledger_id, ledger.ledger_id) for ledger in ledgers]
    existing: dict[int, LedgerMetadata | None] = {}

    def unreadable(exc: Any) -> None:
        existing[exc.ledger_id] = None

    existing.update(core.ledgers.iter_ledgers(candidates, on_corrupt=unreadable))
    planned = assign_ids(ledgers, passwords, existing, id_map, new_ids)
    check_target(planned, core.ledgers.manager, room)
    return RestorePlan(path, manifest, planned, sorted(left_out))

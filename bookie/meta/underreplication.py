"""Under-replication markers and re-replication locks (BookKeeper: meta/ZkLedgerUnderreplicationManager.java).

Marker of ledger ``id``: ``<root>/underreplication/ledgers/%04x/%04x/%04x/%04x/urL%010d`` (the four 16-bit groups of
the id, high bits first), holding TextFormat ``UnderreplicatedLedgerFormat`` (missing replicas, mark time in ms).
Lock of a ledger being re-replicated: EPHEMERAL ``<root>/underreplication/locks/urL%010d``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from google.protobuf import text_format
from google.protobuf.message import Message
from kazoo.exceptions import NodeExistsError

from bookie._proto.data_formats_pb2 import (
    AuditorVoteFormat,
    CheckAllLedgersFormat,
    LedgerRereplicationLayoutFormat,
    LockDataFormat,
    PlacementPolicyCheckFormat,
    ReplicasCheckFormat,
    UnderreplicatedLedgerFormat,
)
from bookie.errors import AutoRecoveryDisabled, CorruptData, MetadataVersionConflict, NotFound
from bookie.meta.store import MetadataStore, zk_errors


def _text(message: Message) -> bytes:
    """``message`` in protobuf TextFormat, as BookKeeper writes these znodes."""
    text: str = text_format.MessageToString(message)
    return text.encode()


def marker_path(ur_root: str, ledger_id: int) -> str:
    groups = "/".join("%04x" % ((ledger_id >> shift) & 0xFFFF) for shift in (48, 32, 16, 0))
    return f"{ur_root}/ledgers/{groups}/urL{ledger_id:010d}"


@dataclass(frozen=True)
class UnderReplicatedLedger:
    ledger_id: int
    replicas: tuple[str, ...]  # the bookies missing a replica
    ctime: int | None  # when it was marked, ms

    def encode(self) -> bytes:
        msg = UnderreplicatedLedgerFormat(replica=self.replicas)
        if self.ctime is not None:
            msg.ctime = self.ctime
        return _text(msg)

    @classmethod
    def decode(cls, ledger_id: int, data: bytes, where: str) -> UnderReplicatedLedger:
        msg = UnderreplicatedLedgerFormat()
        try:
            text_format.Parse(data.decode("utf-8"), msg)
        except (text_format.ParseError, UnicodeDecodeError) as exc:
            raise CorruptData(f"{where}: malformed under-replication marker ({exc})") from None
        return cls(ledger_id, tuple(msg.replica), msg.ctime if msg.HasField("ctime") else None)


@dataclass(frozen=True)
class Lock:
    """A ledger's re-replication lock: who wrote it, the ZooKeeper session holding it, since when (ms)."""

    ledger_id: int
    owner: str  # LockDataFormat.bookieId: the worker's id, as it wrote it
    session: int  # the znode's ephemeralOwner
    ctime: int


class UnderReplicationManager:
    def __init__(self, store: MetadataStore):
        self.store = store
        self.root = store.path("underreplication")

    def ensure_layout(self) -> None:
        """Create ``underreplication/LAYOUT`` (``type: "BASIC"``, version 1) when missing."""
        layout = LedgerRereplicationLayoutFormat(type="BASIC", version=1)
        try:
            with zk_errors("create the under-replication layout"):
                self.store.zk.create(f"{self.root}/LAYOUT", _text(layout), makepath=True)
        except NodeExistsError:
            pass

    def mark(self, ledger_id: int, missing: list[str], now_ms: int | None = None) -> UnderReplicatedLedger:
        """Mark the ledger under-replicated, merging ``missing`` into an existing marker (CAS, retried)."""
        self.ensure_layout()
        path = marker_path(self.root, ledger_id)
        ctime = int(time.time() * 1000) if now_ms is None else now_ms
        while True:
            marker = UnderReplicatedLedger(ledger_id, tuple(dict.fromkeys(missing)), ctime)
            try:
                with zk_errors(f"mark ledger {ledger_id} under-replicated"):
                    self.store.zk.create(path, marker.encode(), makepath=True)
                return marker
            except NodeExistsError:
                pass
            try:
                data, stat = self.store.get(path)
            except NotFound:
                continue  # unmarked meanwhile: create again
            old = UnderReplicatedLedger.decode(ledger_id, data, path)
            merged = UnderReplicatedLedger(ledger_id, tuple(dict.fromkeys(old.replicas + tuple(missing))), old.ctime)
            if merged == old:
                return old
            try:
                with zk_errors(f"mark ledger {ledger_id} under-replicated"):
                    self.store.zk.set(path, merged.encode(), version=stat.version)
                return merged
            except (MetadataVersionConflict, NotFound):
                continue

    def get(self, ledger_id: int) -> UnderReplicatedLedger | None:
        found = self.get_marked(ledger_id)
        return found[0] if found is not None else None

    def get_marked(self, ledger_id: int) -> tuple[UnderReplicatedLedger, int] | None:
        """The marker and when it was marked, in ms: its ``ctime`` field, else (a marker written without one) its
        znode's creation time."""
        path = marker_path(self.root, ledger_id)
        try:
            data, stat = self.store.get(path)
        except NotFound:
            return None
        marker = UnderReplicatedLedger.decode(ledger_id, data, path)
        return marker, marker.ctime if marker.ctime is not None else stat.ctime

    def unmark(self, ledger_id: int) -> None:
        """Remove the marker (versioned, so a concurrent re-mark is not lost), then the folders left empty."""
        path = marker_path(self.root, ledger_id)
        try:
            _, stat = self.store.get(path)
            with zk_errors(f"unmark ledger {ledger_id}"):
                self.store.zk.delete(path, version=stat.version)
        except NotFound:
            return
        self.store.delete_empty_parents(path, f"{self.root}/ledgers")

    def iter_ledger_ids(self) -> Iterator[int]:
        """Ids of the marked ledgers, ascending, without reading the markers."""

        def walk(path: str, depth: int) -> Iterator[int]:
            for child in sorted(self.store.children(path)):
                if depth == 0:
                    if child.startswith("urL") and child[3:].isdigit():
                        yield int(child[3:])
                else:
                    yield from walk(f"{path}/{child}", depth - 1)

        yield from walk(f"{self.root}/ledgers", 4)

    def iter_marked(self) -> Iterator[UnderReplicatedLedger]:
        for ledger_id in self.iter_ledger_ids():
            marker = self.get(ledger_id)
            if marker is not None:
                yield marker

    def count(self) -> int:
        return sum(1 for _ in self.iter_ledger_ids())

    # kind -> (znode under underreplication/, its message, the message's one field)
    CHECK_TIMES: ClassVar[dict[str, tuple[str, type[Message], str]]] = {
        "placement": ("placementpolicycheckctime", PlacementPolicyCheckFormat, "placementPolicyCheckCTime"),
        "replicas": ("replicascheckctime", ReplicasCheckFormat, "replicasCheckCTime"),
        "all": ("checkallledgersctime", CheckAllLedgersFormat, "checkAllLedgersCTime"),
    }

    def set_check_time(self, kind: str, when_ms: int) -> None:
        """Record when a check completed (binary protobuf, one int64 field 1), as BookKeeper's auditor does."""
        name, message, field = self.CHECK_TIMES[kind]
        data = message(**{field: when_ms}).SerializeToString()
        path = f"{self.root}/{name}"
        with zk_errors(f"record the {kind} check time"):
            try:
                self.store.zk.create(path, data, makepath=True)
            except NodeExistsError:
                self.store.zk.set(path, data)

    def check_time(self, kind: str) -> int | None:
        name, message, field = self.CHECK_TIMES[kind]
        try:
            data, _ = self.store.get(f"{self.root}/{name}")
        except NotFound:
            return None
        parsed = message()
        parsed.ParseFromString(data)
        when: int = getattr(parsed, field)
        return when

    # ---- autorecovery controls ----
    def is_enabled(self) -> bool:
        """Autorecovery runs unless ``underreplication/disable`` exists."""
        return self.store.exists(f"{self.root}/disable") is None

    def set_enabled(self, enabled: bool) -> None:
        path = f"{self.root}/disable"
        if enabled:
            try:
                with zk_errors("enable autorecovery"):
                    self.store.zk.delete(path)
            except NotFound:
                pass
            return
        try:
            with zk_errors("disable autorecovery"):
                self.store.zk.create(path, b"", makepath=True)
        except NodeExistsError:
            pass

    def lost_bookie_recovery_delay(self, default: int | None = 0) -> int:
        """Seconds the auditor waits before marking a lost bookie's ledgers (0: at once); ``default`` when no
        auditor or operator has set it yet (None: raise :class:`NotFound`)."""
        try:
            data, _ = self.store.get(f"{self.root}/lostBookieRecoveryDelay")
        except NotFound:
            if default is None:
                raise
            return default
        text = data.decode().strip()
        if not text.lstrip("-").isdigit():
            raise CorruptData(f"{self.root}/lostBookieRecoveryDelay: not a number of seconds: {text!r}")
        return int(text)

    def set_lost_bookie_recovery_delay(self, seconds: int) -> None:
        """Write the delay (rewriting the same value is how an audit is triggered: the auditor watches it)."""
        path = f"{self.root}/lostBookieRecoveryDelay"
        with zk_errors("set lostBookieRecoveryDelay"):
            try:
                self.store.zk.create(path, str(seconds).encode(), makepath=True)
            except NodeExistsError:
                self.store.zk.set(path, str(seconds).encode())

    def trigger_audit(self) -> str:
        """Make the auditor audit now, as BookKeeperAdmin.triggerAudit does: rewrite the delay, whose znode it
        watches. Return the auditor's id; :class:`AutoRecoveryDisabled` when autorecovery is disabled,
        :class:`NotFound` when no auditor is elected."""
        if not self.is_enabled():
            raise AutoRecoveryDisabled("autorecovery is disabled: `bkctl autorecovery enable` first")
        auditor = self.auditor()
        if auditor is None:
            raise NotFound("no auditor to trigger: no `bkctl autorecovery run` is running")
        self.set_lost_bookie_recovery_delay(self.lost_bookie_recovery_delay())
        return auditor[1]

    def vote(self, bookie_id: str) -> str:
        """Stand in the auditor election: an EPHEMERAL_SEQUENTIAL vote; return its path."""
        data = _text(AuditorVoteFormat(bookieId=bookie_id))
        with zk_errors("vote for the auditor"):
            return self.store.zk.create(
                f"{self.root}/auditorelection/V_", data, ephemeral=True, sequence=True, makepath=True
            )

    def auditor(self) -> tuple[str, str] | None:
        """``(vote path, id)`` of the elected auditor (the lowest vote), or None when nobody stands."""
        folder = f"{self.root}/auditorelection"
        votes = sorted(self.store.children(folder), key=lambda name: name.rsplit("_", 1)[-1])
        for name in votes:
            try:
                data, _ = self.store.get(f"{folder}/{name}")
            except NotFound:
                continue
            vote = AuditorVoteFormat()
            text_format.Parse(data.decode(), vote)
            return f"{folder}/{name}", vote.bookieId
        return None

    def workers(self) -> int:
        """How many autorecovery processes stand in the auditor election: each runs a replication worker (ours and
        BookKeeper's AutoRecoveryMain alike)."""
        return sum(1 for name in self.store.children(f"{self.root}/auditorelection") if name.startswith("V_"))

    def lock_path(self, ledger_id: int) -> str:
        return f"{self.root}/locks/urL{ledger_id:010d}"

    def try_lock(self, ledger_id: int, owner: str) -> bool:
        """Take the ledger's re-replication lock (ephemeral); False when someone holds it."""
        data = _text(LockDataFormat(bookieId=owner))
        try:
            with zk_errors(f"lock ledger {ledger_id}"):
                self.store.zk.create(self.lock_path(ledger_id), data, ephemeral=True, makepath=True)
            return True
        except NodeExistsError:
            return False

    def holds_lock(self, ledger_id: int) -> bool:
        """Whether this session holds the ledger's re-replication lock."""
        return self.store.owns(self.lock_path(ledger_id))

    def locks(self) -> dict[int, Lock]:
        """The re-replication locks held now, by ledger id."""
        found = {}
        for name in self.store.children(f"{self.root}/locks"):
            if name.startswith("urL") and name[3:].isdigit():
                lock = self.lock(int(name[3:]))
                if lock is not None:
                    found[lock.ledger_id] = lock
        return found

    def lock(self, ledger_id: int) -> Lock | None:
        """Who holds the ledger's re-replication lock, or None."""
        try:
            data, stat = self.store.get(self.lock_path(ledger_id))
        except NotFound:
            return None
        owner = LockDataFormat()
        try:
            text_format.Parse(data.decode("utf-8"), owner)
        except (text_format.ParseError, UnicodeDecodeError):
            owner.bookieId = ""  # a lock's data is informative only: who holds it is its session
        return Lock(ledger_id, owner.bookieId, stat.ephemeralOwner, stat.ctime)

    def release_lock_of(self, ledger_id: int, session: int) -> bool:
        """Delete the ledger's lock if ``session`` holds it (a dead holder's, released for it); False when someone
        else holds it now, or nobody. ZooKeeper deletes by data version only: a lock taken by another session
        between the check and the delete would go too; that needs ``session`` to expire within that round trip."""
        path = self.lock_path(ledger_id)
        stat = self.store.exists(path)
        if stat is None or stat.ephemeralOwner != session:
            return False
        try:
            with zk_errors(f"release the lock of ledger {ledger_id}"):
                self.store.zk.delete(path, version=stat.version)
        except (NotFound, MetadataVersionConflict):
            return False
        return True

    def voters(self) -> dict[int, str]:
        """The autorecovery processes standing in the auditor election: their ZooKeeper session -> their id."""
        folder = f"{self.root}/auditorelection"
        found = {}
        for name in self.store.children(folder):
            try:
                data, stat = self.store.get(f"{folder}/{name}")
            except NotFound:
                continue
            vote = AuditorVoteFormat()
            try:
                text_format.Parse(data.decode("utf-8"), vote)
            except (text_format.ParseError, UnicodeDecodeError):
                vote.bookieId = name
            found[stat.ephemeralOwner] = vote.bookieId
        return found

    def release_lock(self, ledger_id: int) -> None:
        """Let the ledger's lock go, if this session holds it (one taken by another after ours expired stays)."""
        self.store.delete_own(self.lock_path(ledger_id))

"""One bookie's admin operations, whatever carries them: :class:`BookieAdmin`, and its answers.

Answers are dataclasses made from the admin service's protobuf messages by field name (``of``), or by the HTTP
client; ``doc()`` gives the JSON shape of the CLI (BookKeeper's camelCase field names); a field the transport cannot
report is None. Transports: bookie/client/admin_client.py (our gRPC admin service), http_admin_client.py
(BookKeeper's HTTP admin API).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, Self

from bookie.codec.storage_view import StorageView


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class _Typed:
    """From a flat protobuf message by field name; to a JSON document with camelCase names."""

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]  # every subclass is a dataclass

    @classmethod
    def of(cls, message: Any) -> Self:
        values = {}
        for field in dataclasses.fields(cls):
            name = _camel(field.name)
            value = getattr(message, name)
            if field.name == "entry_logs":
                value = tuple(EntryLogUsage.of(u) for u in value)
            elif field.name == "stalled_logs":
                value = tuple(StalledLog.of(s) for s in value)
            elif field.name == "ledger_dirs":
                value = tuple(LedgerDirState.of(d) for d in value)
            elif field.name == "last_run":
                value = GcRun.of(value) if message.HasField("lastRun") else None
            values[field.name] = value
        return cls(**values)

    def doc(self) -> dict[str, Any]:
        doc = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, _Typed):
                value = value.doc()
            elif isinstance(value, tuple):
                value = [v.doc() for v in value]
            doc[_camel(field.name)] = value
        return doc


@dataclass(frozen=True)
class BookieState(_Typed):
    read_only: bool
    read_only_by_operator: bool | None  # None: not reported (HTTP)
    shutting_down: bool


@dataclass(frozen=True)
class GcTrigger(_Typed):
    started: bool | None  # False: a forced run was already pending or running; that one does it (None: HTTP)
    run_id: int | None  # the run that does it: GcStatus.last_run reaches this id when it is done (None: HTTP)


@dataclass(frozen=True)
class EntryLogUsage(_Typed):
    log_id: int
    total_size: int
    remaining_size: int
    directory: str  # the ledger directory holding it ("": not reported)

    @property
    def usage(self) -> float:
        return self.remaining_size / self.total_size if self.total_size else 0.0

    def doc(self) -> dict[str, Any]:
        return {**super().doc(), "usage": round(self.usage, 4)}


@dataclass(frozen=True)
class LedgerDirState(_Typed):
    """One ledger (or index) directory, as the bookie's disk checker saw it last."""

    path: str
    usage: float  # used share of its filesystem
    writable: bool  # False: full, it takes no new entry log or index file
    index: bool  # an index directory set apart (indexDirectories)

    def doc(self) -> dict[str, object]:
        return {**super().doc(), "usage": round(self.usage, 4)}


@dataclass(frozen=True)
class StalledLog(_Typed):
    """An entry log whose last compaction failed or made no progress (the runs go on with the others)."""

    log_id: int
    error: str
    since: int  # ms since the epoch
    directory: str  # the ledger directory holding it ("": not known)


@dataclass(frozen=True)
class CompactionPlan(_Typed):
    """The logs a targeted compaction takes, with their usage when asked, and the run that compacts them (None:
    a dry run)."""

    logs: tuple[EntryLogUsage, ...]
    run_id: int | None


@dataclass(frozen=True)
class GcRun(_Typed):
    """What a run did; over BookKeeper's HTTP API only that it ended (the rest None)."""

    run_id: int | None
    forced: bool
    kind: str | None  # "major", "minor", or "": no compaction in that run
    ledgers_deleted: int | None
    logs_deleted: int | None
    logs_compacted: int | None
    entries_copied: int | None
    bytes_copied: int | None
    bytes_reclaimed: int | None
    start_time: int | None  # ms since the epoch
    duration_ms: int | None
    error: str


@dataclass(frozen=True)
class GcStatus(_Typed):
    is_in_force: bool
    major_compacting: bool
    minor_compacting: bool
    last_major_compaction_time: int
    last_minor_compaction_time: int
    major_compaction_counter: int
    minor_compaction_counter: int
    major_suspended: bool
    minor_suspended: bool
    # not in BookKeeper's HTTP admin API: None over HTTP
    bytes_reclaimed: int | None
    logs_compacted: int | None
    running: bool | None
    runs: int | None
    major_enabled: bool | None
    minor_enabled: bool | None
    last_run: GcRun | None
    entry_logs: tuple[EntryLogUsage, ...] | None
    ledger_dirs: tuple[LedgerDirState, ...] | None  # the ledger and index directories (None: HTTP)
    stalled_logs: tuple[StalledLog, ...] | None  # logs whose compaction failed or made no progress (None: HTTP)


class BookieAdmin(Protocol):
    """One bookie's admin operations, over either transport (a context manager)."""

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...

    def close(self) -> None: ...

    def state(self) -> BookieState: ...

    def set_read_only(self, read_only: bool) -> BookieState: ...

    def trigger_gc(self, major: bool = False, minor: bool = False) -> GcTrigger: ...

    def gc_status(self) -> GcStatus: ...

    def set_compaction_suspended(self, suspended: bool, major: bool = False, minor: bool = False) -> GcStatus: ...

    def storage_usage(self, ledger_id: int | None = None) -> StorageView: ...
    def compact_logs(
        self, log_ids: list[int], ledger_ids: list[int], dry_run: bool = False, ignore_suspension: bool = False
    ) -> CompactionPlan: ...

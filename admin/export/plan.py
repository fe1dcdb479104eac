"""What an export reads, decided from metadata only: the ledgers, the entries of each, and the Spark partitions.

A ledger is cut into entry ranges of about ``partition_bytes`` (its length over its entry count gives the average
entry size). Consecutive ranges are packed into partitions of about ``partition_bytes`` too, so ten thousand small
ledgers make a few tasks, not ten thousand. A closed ledger is read up to its last entry. An open ledger (or one in
recovery) is left out unless asked for; then it is read up to its LAC at planning time, learnt from its bookies
with READ_LAC, which fences nothing: its writer carries on.

Export reads as an administrator: with each ledger's password from its metadata, the way recovery and the cluster
check read, so one export can span ledgers of many applications.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from bookie.client.reader import LedgerReader
from bookie.codec.digest import DigestType
from bookie.errors import CorruptData, InvalidArgument, NoSuchLedger
from bookie.meta.ledger_metadata import LedgerMetadata
from bookie.meta.paths import parse_ledger_id

DEFAULT_PARTITION_BYTES = 64 << 20
MAX_RANGES_PER_PARTITION = 512  # each range costs a few round trips to its bookies: keep tiny-ledger tasks short
LAC_READS_AT_ONCE = 32
SIZE_UNITS = {
    "": 1,
    "b": 1,
    "k": 1 << 10,
    "kb": 1 << 10,
    "kib": 1 << 10,
    "m": 1 << 20,
    "mb": 1 << 20,
    "mib": 1 << 20,
    "g": 1 << 30,
    "gb": 1 << 30,
    "gib": 1 << 30,
}


@dataclass(frozen=True)
class Selection:
    """The ledgers asked for: single ids, which must exist, and inclusive id ranges, which take what exists."""

    ids: tuple[int, ...] = ()
    ranges: tuple[tuple[int, int], ...] = ()

    def covers(self, ledger_id: int) -> bool:
        return ledger_id in self.ids or any(low <= ledger_id <= high for low, high in self.ranges)


def parse_selection(items: list[str] | tuple[str, ...] | str) -> Selection:
    """``"1,2,10-20"`` (or several such items): ledger ids and inclusive ranges of ids."""
    ids, ranges = [], []
    for item in [items] if isinstance(items, str) else items:
        for token in item.split(","):
            low, dash, high = token.strip().partition("-")
            if dash:
                first, last = parse_ledger_id(low), parse_ledger_id(high)
                if first > last:
                    raise InvalidArgument(f"invalid ledger range {token.strip()!r}: its start is after its end")
                ranges.append((first, last))
            elif token.strip():
                ids.append(parse_ledger_id(token))
    if not ids and not ranges:
        raise InvalidArgument("no ledger ids given: expected ids and ranges such as 1,2,10-20")
    return Selection(tuple(dict.fromkeys(ids)), tuple(ranges))


def parse_custom_metadata(items: list[str] | tuple[str, ...] | str) -> dict[str, bytes]:
    """``"key=value"`` pairs (several items, or comma-separated in one): a ledger must carry all of them."""
    pairs = {}
    for item in [items] if isinstance(items, str) else items:
        for token in item.split(","):
            key, sep, value = token.partition("=")
            if not sep or not key.strip():
                raise InvalidArgument(f"invalid custom metadata filter {token!r}: expected KEY=VALUE")
            pairs[key.strip()] = value.encode()
    return pairs


def parse_size(text: str) -> int:
    """``"64MB"``, ``"512k"``, ``"1GiB"`` or plain bytes; units are powers of 1024, as in Spark's settings."""
    value = str(text).strip().lower()
    digits = value.rstrip("abgikm ")
    unit = value[len(digits) :].strip()
    if not digits.isdigit() or unit not in SIZE_UNITS or int(digits) <= 0:
        raise InvalidArgument(f"invalid size {text!r}: expected a positive number of bytes such as 64MB or 512k")
    return int(digits) * SIZE_UNITS[unit]


@dataclass(frozen=True)
class PlannedLedger:
    """A ledger to export: its metadata, and the entries ``0..last_entry_id`` (``length`` payload bytes)."""

    ledger_id: int
    metadata: LedgerMetadata
    last_entry_id: int  # the last entry of a closed ledger; the LAC of an open one
    length: int

    @property
    def entries(self) -> int:
        return self.last_entry_id + 1

    @property
    def password(self) -> bytes:
        return self.metadata.password or b""


@dataclass(frozen=True)
class EntryRange:
    ledger: PlannedLedger
    first: int
    last: int
    bytes: int  # estimated from the ledger's average entry size


@dataclass(frozen=True)
class Partition:
    """One Spark task's share: whole entry ranges, in ledger and entry order."""

    index: int
    ranges: tuple[EntryRange, ...]

    @property
    def entries(self) -> int:
        return sum(r.last - r.first + 1 for r in self.ranges)

    @property
    def bytes(self) -> int:
        return sum(r.bytes for r in self.ranges)


@dataclass
class ExportPlan:
    ledgers: list[PlannedLedger]
    partitions: list[Partition]
    # missing or unreadable ledgers (by id) and empty ranges (by "FIRST-LAST"), with skip_missing
    skipped: dict[int | str, str] = field(default_factory=dict)
    left_open: list[int] = field(default_factory=list)  # open ledgers, without include_open

    @property
    def entries(self) -> int:
        return sum(ledger.entries for ledger in self.ledgers)

    @property
    def bytes(self) -> int:
        return sum(ledger.length for ledger in self.ledgers)

    def doc(self) -> dict:
        return {
            "ledgers": len(self.ledgers),
            "entries": self.entries,
            "bytes": self.bytes,
            "partitions": len(self.partitions),
            "openLedgers": sum(not ledger.metadata.is_closed for ledger in self.ledgers),
            "leftOpen": self.left_open,
            "skipped": {str(k): v for k, v in self.skipped.items()},
        }


def split(ledger: PlannedLedger, partition_bytes: int) -> list[EntryRange]:
    """The ledger's entries in ranges of about ``partition_bytes`` (at least one entry each)."""
    if ledger.entries <= 0:
        return []
    per_range = max(1, partition_bytes * ledger.entries // max(ledger.length, 1))
    ranges = []
    for first in range(0, ledger.entries, per_range):
        last = min(first + per_range, ledger.entries) - 1
        ranges.append(EntryRange(ledger, first, last, ledger.length * (last - first + 1) // ledger.entries))
    return ranges


def pack(ranges: list[EntryRange], partition_bytes: int) -> list[Partition]:
    """Consecutive ranges grouped into partitions of about ``partition_bytes``, order kept."""
    groups: list[list[EntryRange]] = []
    size = 0
    for entry_range in ranges:
        full = groups and (size + entry_range.bytes > partition_bytes or len(groups[-1]) >= MAX_RANGES_PER_PARTITION)
        if not groups or full:
            groups.append([])
            size = 0
        groups[-1].append(entry_range)
        size += entry_range.bytes
    return [Partition(index, tuple(group)) for index, group in enumerate(groups)]


def _readable(md: LedgerMetadata) -> LedgerMetadata:
    # Format v1 metadata names no digest type; BookKeeper clients then used their default, CRC32.
    return md if md.digest_type is not None else md.with_changes(digest_type=DigestType.CRC32)


async def _lacs(core, ledgers: list[tuple[int, LedgerMetadata]]) -> dict[int, tuple[int, int]]:
    """``{ledgerId: (LAC, length up to it)}`` of open ledgers, from their bookies; nothing is fenced."""
    gate = asyncio.Semaphore(LAC_READS_AT_ONCE)

    async def one(ledger_id: int, md: LedgerMetadata) -> tuple[int, int, int]:
        async with gate:
            reader = LedgerReader(core, ledger_id, md, md.password or b"", -1)
            lac = await reader.read_lac()
            length = (await reader.read_entry(lac)).length if lac >= 0 else 0
            return ledger_id, lac, length

    found = await asyncio.gather(*(one(lid, md) for lid, md in ledgers))
    return {lid: (lac, length) for lid, lac, length in found}


def plan_export(
    bk,
    selection: Selection | None = None,
    custom_metadata: dict[str, bytes] | None = None,
    include_open: bool = False,
    partition_bytes: int = DEFAULT_PARTITION_BYTES,
    skip_missing: bool = False,
) -> ExportPlan:
    """Plan an export of the selected ledgers (all when ``selection`` is None) that carry ``custom_metadata``.

    A named ledger that does not exist, or whose metadata cannot be parsed, raises :class:`NoSuchLedger` naming
    it; with ``skip_missing`` it is left out and listed in ``skipped``.
    """
    if partition_bytes < 1:
        raise InvalidArgument(f"partition size must be positive, got {partition_bytes}")
    manager = bk.core.ledgers
    all_ids = manager.iter_ledger_ids()
    if selection is None:
        candidates = list(all_ids)
    else:
        in_ranges = [lid for lid in all_ids if selection.covers(lid)] if selection.ranges else []
        candidates = sorted(set(selection.ids) | set(in_ranges))
    corrupt: dict[int | None, CorruptData] = {}
    found = dict(manager.iter_ledgers(candidates, on_corrupt=lambda exc: corrupt.setdefault(exc.ledger_id, exc)))
    skipped: dict[int | str, str] = {}
    # A range is sparse by nature (ids are not dense), so it takes what exists; but a range with no ledger at all
    # is as missing as a named ledger that does not exist: most likely a typo, never silently nothing.
    for low, high in selection.ranges if selection is not None else ():
        if not any(low <= lid <= high for lid in candidates):
            reason = f"no ledger in range {low}-{high}"
            if not skip_missing:
                raise NoSuchLedger(reason)
            skipped[f"{low}-{high}"] = reason
    for lid in (lid for lid in candidates if lid not in found):
        problem = corrupt.get(lid)
        if problem is None and (selection is None or lid not in selection.ids):
            continue  # deleted while we listed: it is simply not there any more
        reason = f"ledger {lid} does not exist" if problem is None else f"ledger {lid} cannot be read: {problem}"
        if not skip_missing:
            raise NoSuchLedger(reason, ledger_id=lid)
        skipped[lid] = reason
    wanted = {
        lid: md
        for lid, md in sorted(found.items())
        if all(md.custom_metadata.get(k) == v for k, v in (custom_metadata or {}).items())
    }
    plan = plan_ledgers(bk, wanted, include_open, partition_bytes)
    plan.skipped = skipped
    return plan


def plan_ledgers(
    bk, wanted: dict[int, LedgerMetadata], include_open: bool = False, partition_bytes: int = DEFAULT_PARTITION_BYTES
) -> ExportPlan:
    """Plan an export of ledgers whose metadata is already read (``{ledgerId: metadata}``): open ones up to their
    LAC (read now) with ``include_open``, else listed in ``left_open``."""
    wanted = {lid: _readable(md) for lid, md in sorted(wanted.items())}
    left_open = [lid for lid, md in wanted.items() if not md.is_closed and not include_open]
    lacs = bk.run(_lacs(bk.core, [(lid, md) for lid, md in wanted.items() if not md.is_closed and include_open]))
    ledgers = []
    for lid, md in wanted.items():
        if md.is_closed:
            ledgers.append(PlannedLedger(lid, md, md.last_entry_id, md.length))
        elif lid in lacs:
            ledgers.append(PlannedLedger(lid, md, *lacs[lid]))
    ranges = [r for ledger in ledgers for r in split(ledger, partition_bytes)]
    return ExportPlan(ledgers, pack(ranges, partition_bytes), {}, left_open)

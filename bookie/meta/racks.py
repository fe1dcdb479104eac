"""Pulsar's bookie rack mapping (apache/pulsar: BookieRackAffinityMapping, BookiesRackConfiguration,
BookieInfoImpl), which BookKeeper's rack-aware placement reads through ``reppDnsResolverClass=
org.apache.pulsar.zookeeper.ZkBookieRackAffinityMapping``.

The znode ``bookies`` at Pulsar's metadata root, the parent of the ledgers root (``/ledgers`` -> ``/bookies``), holds
one JSON document: group -> bookie address (``host:port``, or a bookie id) -> info, groups and addresses sorted (Java
TreeMaps), a null field left out (Pulsar's ObjectMapper is ``Include.NON_NULL``), written compact::

    {"default":{"10.0.0.1:3181":{"rack":"/rack-a","hostname":"bk1.example"},"10.0.0.2:3181":{"rack":"/rack-b"}}}

Setting a bookie's rack removes its address from every group first (``updateBookie``); removing it drops a group
left empty (``removeBookie``). When read, an empty or ``/`` rack means none (the policy's default rack) and a rack
without a leading ``/`` gets one (``getRack``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from kazoo.exceptions import NodeExistsError

from bookie.errors import CorruptData, InvalidArgument, MetadataVersionConflict, NotFound
from bookie.meta.store import MetadataStore, zk_errors

ZNODE = "bookies"  # BookieRackAffinityMapping.BOOKIE_INFO_ROOT_PATH
WRITE_ATTEMPTS = 20


@dataclass(frozen=True)
class BookieRack:
    """One address's entry: its ``group`` and BookieInfo (``rack`` and ``hostname`` as stored)."""

    group: str
    rack: str | None
    hostname: str | None = None

    @property
    def location(self) -> str | None:
        """The rack BookKeeper is given: None for an empty or ``/`` rack, else with a leading ``/``."""
        rack = (self.rack or "").strip()
        if not rack or rack == "/":
            return None
        return rack if rack.startswith("/") else "/" + rack


@dataclass(frozen=True)
class RackMapping:
    """The parsed ``/bookies`` document (a group left empty is no group). :meth:`updated` and :meth:`removed`
    return new mappings."""

    groups: dict[str, dict[str, BookieRack]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "groups", {g: dict(bookies) for g, bookies in self.groups.items() if bookies})

    @classmethod
    def decode(cls, data: bytes, where: str = ZNODE) -> RackMapping:
        """Parse the znode's data (empty data: an empty mapping). :class:`CorruptData` when it is not the layout."""
        if not data.strip():
            return cls()
        try:
            doc = json.loads(data)
        except (UnicodeDecodeError, ValueError) as exc:
            raise CorruptData(f"{where}: not JSON ({exc})") from None
        if not isinstance(doc, dict):
            raise CorruptData(f"{where}: expected an object of groups, got {type(doc).__name__}")
        groups: dict[str, dict[str, BookieRack]] = {}
        for group, bookies in doc.items():
            if bookies is None:
                continue
            if not isinstance(bookies, dict):
                raise CorruptData(f"{where}: group {group!r} is not an object of bookies")
            for address, info in bookies.items():
                if not isinstance(info, dict):
                    raise CorruptData(f"{where}: bookie {address!r} of group {group!r} is not an object")
                rack, hostname = info.get("rack"), info.get("hostname")
                if not isinstance(rack, (str, type(None))) or not isinstance(hostname, (str, type(None))):
                    raise CorruptData(f"{where}: bookie {address!r} of group {group!r}: rack and hostname are strings")
                groups.setdefault(group, {})[address] = BookieRack(group, rack, hostname)
        return cls(groups)

    def encode(self) -> bytes:
        """The document as Pulsar writes it: sorted, compact, null fields left out, UTF-8."""
        doc = {
            group: {
                address: {k: v for k, v in (("rack", e.rack), ("hostname", e.hostname)) if v is not None}
                for address, e in sorted(bookies.items())
            }
            for group, bookies in sorted(self.groups.items())
        }
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()

    def get(self, address: str) -> BookieRack | None:
        """The entry of ``address`` (the first group's that has it, in order, as ``getBookie``)."""
        for _, bookies in sorted(self.groups.items()):
            if address in bookies:
                return bookies[address]
        return None

    def addresses(self) -> list[str]:
        return sorted({a for bookies in self.groups.values() for a in bookies})

    def items(self) -> list[tuple[str, BookieRack]]:
        """(address, entry) of every address, sorted by group then address, as stored."""
        return [(a, e) for _, bookies in sorted(self.groups.items()) for a, e in sorted(bookies.items())]

    def removed(self, address: str) -> RackMapping:
        """Without ``address`` in any group; a group left empty goes."""
        return RackMapping(
            {g: {a: e for a, e in bookies.items() if a != address} for g, bookies in self.groups.items()}
        )

    def updated(self, group: str, address: str, rack: str, hostname: str | None = None) -> RackMapping:
        """``address`` in ``group`` only, on ``rack``."""
        groups = self.removed(address).groups
        groups.setdefault(group, {})[address] = BookieRack(group, rack, hostname)
        return RackMapping(groups)

    def rack_of(self, bookie_id: str, address: str | None = None) -> BookieRack | None:
        """The entry naming a bookie: by its id, else by its ``host:port`` address (a key is parsed as a bookie id
        and resolved to its address, as ``updateRacksWithHost`` does)."""
        entry = self.get(bookie_id)
        if entry is None and address is not None and address != bookie_id:
            entry = self.get(address)
        return entry


def check_rack(rack: str, others: RackMapping | None = None) -> None:
    """Refuse a rack Pulsar's broker refuses (``Bookies.updateBookieRackInfo``): empty, ``/``, or with more than one
    ``/`` inside (trimmed of those at both ends): ``/rack`` is a rack-aware rack, ``/region/rack`` a region-aware
    one. The cluster's placement policy is not stored anywhere bkctl can read, so both are accepted, but not mixed
    with the racks of ``others`` (the rest of the mapping): BookKeeper's network topology refuses racks of
    different depths."""
    if not rack.strip() or rack.strip() == "/":
        raise InvalidArgument(f"invalid rack {rack!r}: give a rack name such as /rack-a (or /region/rack)")
    inner = rack.strip("/").count("/")
    if inner > 1:
        raise InvalidArgument(
            f"invalid rack {rack!r}: /rack (rack-aware placement) or /region/rack (region-aware) only, "
            "no more '/' inside"
        )
    depths = {e.location.strip("/").count("/") for _, e in (others.items() if others else []) if e.location}
    if depths and inner not in depths:
        form = "/region/rack" if inner == 0 else "/rack"
        raise InvalidArgument(
            f"invalid rack {rack!r}: the mapping's other racks are of the form {form}, and BookKeeper's topology "
            "refuses racks of different depths"
        )


def mapping_path(store: MetadataStore) -> str:
    """``/bookies`` beside the ledgers root: at Pulsar's metadata root, its parent."""
    return f"{store.root.rsplit('/', 1)[0]}/{ZNODE}"


def read_mapping(store: MetadataStore) -> tuple[RackMapping, int | None]:
    """The mapping and its znode version (None: no znode)."""
    path = mapping_path(store)
    try:
        data, stat = store.get(path)
    except NotFound:
        return RackMapping(), None
    return RackMapping.decode(data, path), stat.version


def update_mapping(store: MetadataStore, change: Callable[[RackMapping], RackMapping]) -> RackMapping:
    """Read, apply ``change``, write at the version read (create when absent); again on a conflict, as Pulsar's
    ``readModifyUpdateOrCreate``. Returns the mapping written (nothing is written when ``change`` changes nothing)."""
    path = mapping_path(store)
    for _ in range(WRITE_ATTEMPTS):
        current, version = read_mapping(store)
        new = change(current)
        if new == current:
            return current
        try:
            with zk_errors(f"write {path}"):
                if version is None:
                    store.zk.create(path, new.encode(), makepath=True)
                else:
                    store.zk.set(path, new.encode(), version=version)
            return new
        except (MetadataVersionConflict, NodeExistsError):
            continue
    raise MetadataVersionConflict(f"write {path}: changed concurrently {WRITE_ATTEMPTS} times; try again")

"""Bookie registration (BookKeeper: discover/ZKRegistrationManager.java).

A writable bookie owns the EPHEMERAL ``<root>/available/<bookieId>``; a read-only one
``<root>/available/readonly/<bookieId>``. The data is a binary ``BookieServiceInfoFormat`` (endpoints and a
properties map, where we publish the rack); Apache BookKeeper bookies before 4.11 wrote no data at all.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field, replace

from google.protobuf.message import DecodeError
from kazoo.exceptions import NodeExistsError

from bookie._proto.data_formats_pb2 import BookieServiceInfoFormat
from bookie.errors import CorruptData, NotFound, OperationTimeout, ServiceUnavailable, Unauthorized, Unsafe
from bookie.meta.racks import BookieRack, RackMapping, read_mapping
from bookie.meta.store import MetadataStore, zk_errors

log = logging.getLogger(__name__)

# A bookie's state, spelled so in every command's output (tables and JSON) and in the registry's znode
# (available/readonly); UNREGISTERED is what a bookie's own SERVER_STATUS gauge says before it registers, MISSING
# what the cluster's metadata says of a bookie it knows that is not registered (bookie/meta/membership.py).
WRITABLE, READONLY, UNREGISTERED, MISSING = "writable", "readonly", "unregistered", "missing"
STATES = {
    WRITABLE: "registered under available/: takes new ledgers",
    READONLY: "registered under available/readonly/: serves reads, takes no new entries",
    UNREGISTERED: "running but not registered (starting, or its ZooKeeper session lost)",
    MISSING: "not registered, and known to the cluster: it has a cookie, or a ledger's ensemble names it",
}
# Ours: a property saying why a read-only bookie is read-only (comma-separated). A Java bookie publishes none.
READ_ONLY_REASON = "readOnlyReason"
OPERATOR, DISK_THRESHOLD, JOURNAL_FAILURE = "operator", "disk-threshold", "journal-failure"
READ_ONLY_REASONS = {
    OPERATOR: "set by an operator (bkctl bookie readonly --on, the HTTP API's state/readonly)",
    DISK_THRESHOLD: "every ledger (or index) directory is over diskUsageThreshold",
    JOURNAL_FAILURE: "a journal failed to write; read-only until the bookie is restarted",
}
DEFAULT_RACK = "/default-rack"
# Ours: the endpoint of a bookie's gRPC admin service (state, read-only, GC, compaction). A Java bookie has none.
ADMIN_ENDPOINT, ADMIN_PROTOCOL = "bkctl-admin", "grpc"
HTTP_ENDPOINT, HTTP_PROTOCOL = "httpserver", "http"  # as BookKeeper's HttpService.publishInfo
METRICS_PORT = "metricsPort"  # ours: a property naming the bookie's prometheusStatsHttpPort


@dataclass(frozen=True)
class Endpoint:
    id: str
    host: str
    port: int
    protocol: str
    auth: tuple[str, ...] = ()
    extensions: tuple[str, ...] = ()


@dataclass(frozen=True)
class BookieServiceInfo:
    endpoints: tuple[Endpoint, ...] = ()
    properties: dict[str, str] = field(default_factory=dict)

    @classmethod
    def for_bookie(
        cls,
        host: str,
        port: int,
        tls: bool = False,
        admin_port: int | None = None,
        http: tuple[str, int] | None = None,
        **properties: str,
    ) -> BookieServiceInfo:
        """``http``: the HTTP admin API's (httpServerHost, port), published as BookKeeper does."""
        endpoints = [Endpoint("bookie", host, port, "bookie-rpc", extensions=("tls",) if tls else ())]
        if admin_port:
            endpoints.append(Endpoint(ADMIN_ENDPOINT, host, admin_port, ADMIN_PROTOCOL))
        if http:
            endpoints.append(Endpoint(HTTP_ENDPOINT, http[0], http[1], HTTP_PROTOCOL))
        return cls(tuple(endpoints), {k: str(v) for k, v in properties.items()})

    @property
    def rack(self) -> str | None:
        return self.properties.get("rack")

    def endpoint(self, endpoint_id: str) -> Endpoint | None:
        return next((e for e in self.endpoints if e.id == endpoint_id), None)

    def bookie_endpoint(self) -> Endpoint | None:
        return self.endpoint("bookie")

    def encode(self) -> bytes:
        msg = BookieServiceInfoFormat()
        for e in self.endpoints:
            msg.endpoints.add(
                id=e.id, host=e.host, port=e.port, protocol=e.protocol, auth=e.auth, extensions=e.extensions
            )
        msg.properties.update(self.properties)
        data: bytes = msg.SerializeToString()
        return data

    @classmethod
    def decode(cls, data: bytes, where: str = "bookie registration") -> BookieServiceInfo:
        msg = BookieServiceInfoFormat()
        try:
            msg.ParseFromString(data)
        except DecodeError as exc:
            raise CorruptData(f"{where}: malformed BookieServiceInfoFormat ({exc})") from None
        endpoints = tuple(
            Endpoint(e.id, e.host, e.port, e.protocol, tuple(e.auth), tuple(e.extensions)) for e in msg.endpoints
        )
        return cls(endpoints, dict(msg.properties))


@dataclass(frozen=True)
class RegisteredBookie:
    bookie_id: str
    state: str  # WRITABLE or READONLY
    info: BookieServiceInfo | None  # None: the bookie published no data (older BookKeeper)
    mapped: BookieRack | None = None  # its entry in Pulsar's rack mapping, read with the listing

    @property
    def rack(self) -> str:
        """Its rack: the one rule of writers, recovery, re-replication and checks."""
        return self.rack_and_source[0]

    @property
    def rack_and_source(self) -> tuple[str, str]:
        """Its rack and where it comes from, the first found: Pulsar's rack mapping ("mapping", bookie.meta.racks),
        the "rack" property of its registration ("registration": ours publish their bookieRack setting), the
        default rack ("default")."""
        if self.mapped is not None and self.mapped.location:
            return self.mapped.location, "mapping"
        if self.info and self.info.rack:
            return self.info.rack, "registration"
        return DEFAULT_RACK, "default"

    @property
    def read_only_reasons(self) -> list[str] | None:
        """Why it is read-only (READ_ONLY_REASONS' keys): [] when writable, None when it does not say (a Java
        bookie)."""
        if self.state != READONLY:
            return []
        published = self.info.properties.get(READ_ONLY_REASON) if self.info else None
        return published.split(",") if published else None

    def address(self) -> tuple[str, int]:
        """Where to reach its bookie service: the published endpoint, else ``host:port`` of the id."""
        endpoint = self.info.bookie_endpoint() if self.info else None
        if endpoint:
            return endpoint.host, endpoint.port
        host, _, port = self.bookie_id.rpartition(":")
        return host, int(port)

    @property
    def tls(self) -> bool:
        """Whether it serves TLS (its bookie endpoint's "tls" extension, as BookKeeper publishes it); ours then
        serve their admin port over TLS only."""
        endpoint = self.info.bookie_endpoint() if self.info else None
        return endpoint is not None and "tls" in endpoint.extensions

    def admin_address(self) -> tuple[str, int] | None:
        """Where to reach its gRPC admin service, or None: a bookie that advertises none (a Java bookie)."""
        endpoint = self.info.endpoint(ADMIN_ENDPOINT) if self.info else None
        return (endpoint.host, endpoint.port) if endpoint else None

    def http_address(self) -> tuple[str, int] | None:
        """Where to reach BookKeeper's HTTP admin API on it, or None: not published. BookKeeper publishes its
        ``httpServerHost``, by default 0.0.0.0: then the bookie's own host."""
        endpoint = self.info.endpoint(HTTP_ENDPOINT) if self.info else None
        if endpoint is None:
            return None
        host = endpoint.host if endpoint.host not in ("", "0.0.0.0", "::") else self.address()[0]
        return host, endpoint.port

    def metrics_url(self, port: int | None = None) -> str | None:
        """Where its ``/metrics`` is served, None when it does not say: on ``port`` of its host when given; else
        on BookKeeper's HTTP admin API when it publishes that (with it on, a Java bookie's Prometheus provider
        serves there and not on prometheusStatsHttpPort, which BookKeeper never publishes); else on the
        prometheusStatsHttpPort that ours publish as a property (first, when ours is a TLS bookie: its HTTP admin API
        is then HTTPS with client certificates, and prometheusStatsHttpPort is plain HTTP, as in BookKeeper)."""
        host = self.address()[0]
        if port is None and self.tls and self.info and self.info.properties.get(METRICS_PORT, "").isdigit():
            port = int(self.info.properties[METRICS_PORT])
        if port is None:
            if (http := self.http_address()) is not None:
                host, port = http
            elif self.info and self.info.properties.get(METRICS_PORT, "").isdigit():
                port = int(self.info.properties[METRICS_PORT])
            else:
                return None
        return f"http://{host}:{port}/metrics"

    def over_http(self, port: int) -> RegisteredBookie:
        """This bookie as reached on BookKeeper's HTTP admin API at ``port`` of its host, and not on our gRPC
        admin service (``--http-port``)."""
        host = self.address()[0]
        kept = tuple(
            e for e in (self.info.endpoints if self.info else ()) if e.id not in (ADMIN_ENDPOINT, HTTP_ENDPOINT)
        )
        info = BookieServiceInfo(
            (*kept, Endpoint(HTTP_ENDPOINT, host, port, HTTP_PROTOCOL)), self.info.properties if self.info else {}
        )
        return RegisteredBookie(self.bookie_id, self.state, info, self.mapped)


class BookieRegistry:
    def __init__(self, store: MetadataStore):
        self.store = store
        self.available = store.path("available")
        self.readonly = store.path("available", "readonly")

    def _node(self, bookie_id: str, state: str) -> str:
        return f"{self.readonly if state == READONLY else self.available}/{bookie_id}"

    def owner(self, bookie_id: str) -> int | None:
        """The session whose node registers the bookie (writable or read-only); None when it is not registered."""
        for state in (WRITABLE, READONLY):
            stat = self.store.exists(self._node(bookie_id, state))
            if stat is not None:
                return int(stat.ephemeralOwner)
        return None

    def _wait_for_stale(self, path: str, timeout: float) -> None:
        """Wait until a node left by an earlier session of this bookie expires.

        The node is read again on any event of its watch and every half second, not only on NodeDeleted: when
        kazoo reconnects it re-arms an exists-watch, which ZooKeeper answers at once with NodeCreated for a node
        that exists, and that consumes the watch; a waiter listening for NodeDeleted alone then never heard of
        the expiry. A ZooKeeper that is away for a moment is waited for too, within ``timeout``.
        """
        deadline = time.monotonic() + timeout
        changed = threading.Event()

        def watch(_event: object) -> None:
            changed.set()

        while True:
            changed.clear()
            try:
                with zk_errors(f"check {path}"):
                    stat = self.store.zk.exists(path, watch=watch)
            except ServiceUnavailable:
                pass  # ZooKeeper is away: ask again until the deadline
            else:
                if stat is None or stat.ephemeralOwner == self.store.session_id:
                    return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise OperationTimeout(f"{path} of an earlier session did not expire within {timeout:g} s")
            changed.wait(min(0.5, remaining))

    def register(
        self, bookie_id: str, info: BookieServiceInfo, state: str = WRITABLE, stale_timeout: float = 30.0
    ) -> None:
        """Publish the bookie as writable or read-only (and remove its node of the other state)."""
        path = self._node(bookie_id, state)
        data = info.encode()
        for _ in range(2):
            self._wait_for_stale(path, stale_timeout)
            try:
                with zk_errors(f"register {bookie_id}"):
                    self.store.zk.create(path, data, ephemeral=True, makepath=True)
                break
            except NodeExistsError:
                with zk_errors(f"register {bookie_id}"):
                    stat = self.store.zk.exists(path)
                if stat is not None and stat.ephemeralOwner == self.store.session_id:
                    with zk_errors(f"register {bookie_id}"):
                        self.store.zk.set(path, data)  # ours already: its data may have changed (the read-only reason)
                    break
        self.store.delete_own(self._node(bookie_id, WRITABLE if state == READONLY else READONLY))

    def unregister(self, bookie_id: str) -> None:
        """Remove this session's registration of the bookie; another session's node is left alone."""
        self.store.delete_own(self._node(bookie_id, WRITABLE))
        self.store.delete_own(self._node(bookie_id, READONLY))

    def rack_mapping(self) -> RackMapping:
        """Pulsar's rack mapping, or an empty one when it cannot be read (said in the log): a damaged or forbidden
        /bookies must not stop writers and bookies from listing the cluster."""
        try:
            return read_mapping(self.store)[0]
        except (CorruptData, Unauthorized) as exc:
            log.error("rack mapping ignored: %s", exc)
            return RackMapping()

    def _list(self, state: str, mapping: RackMapping) -> list[RegisteredBookie]:
        folder = self.readonly if state == READONLY else self.available
        bookies = []
        for name in sorted(self.store.children(folder)):
            if name == "readonly":
                continue
            try:
                data, _ = self.store.get(f"{folder}/{name}")
            except NotFound:
                continue  # went away while listing
            info = BookieServiceInfo.decode(data, f"{folder}/{name}") if data else None
            bookie = RegisteredBookie(name, state, info)
            host, port = bookie.address()
            bookies.append(replace(bookie, mapped=mapping.rack_of(name, f"{host}:{port}")))
        return bookies

    def list(self, writable: bool = True, readonly: bool = False) -> list[RegisteredBookie]:
        """The registered bookies, with their racks (the rack mapping is read once per listing)."""
        mapping = self.rack_mapping()
        return (self._list(WRITABLE, mapping) if writable else []) + (self._list(READONLY, mapping) if readonly else [])

    def get(self, bookie_id: str) -> RegisteredBookie:
        for bookie in self.list(writable=True, readonly=True):
            if bookie.bookie_id == bookie_id:
                return bookie
        raise NotFound(f"bookie {bookie_id} is not registered")


def require_not_registered(store: MetadataStore, bookie_id: str, action: str) -> None:
    """Refuse (Unsafe: exit 3) to ``action`` while the bookie is registered, writable or read-only."""
    try:
        state = BookieRegistry(store).get(bookie_id).state
    except NotFound:
        return
    raise Unsafe(f"bookie {bookie_id} is running (registered {state}): stop it before you {action}")

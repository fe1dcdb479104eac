"""Metadata service URIs: ``zk+<manager>://host:port[;host:port...]/<root>``.

``zk://`` (no manager) means "whatever the cluster's LAYOUT says" (hierarchical when initialising). Hosts are
separated by ``;`` or ``,``; a host without a port gets ZooKeeper's 2181.
"""

from __future__ import annotations

from dataclasses import dataclass

from bookie.errors import InvalidArgument

MANAGERS = ("hierarchical", "longhierarchical", "legacyhierarchical")  # the flat manager is not supported
DEFAULT_ZK_PORT = 2181
EXPECTED = "expected zk+hierarchical://HOST:PORT[;HOST:PORT...]/ledgers"


@dataclass(frozen=True)
class ServiceUri:
    manager: str | None  # None: take it from LAYOUT
    hosts: tuple[tuple[str, int], ...]
    root: str

    @property
    def zk_hosts(self) -> str:
        """The hosts in kazoo's ``host:port,host:port`` form."""
        return ",".join(f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in self.hosts)

    def __str__(self) -> str:
        scheme = f"zk+{self.manager}" if self.manager else "zk"
        hosts = ";".join(f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in self.hosts)
        return f"{scheme}://{hosts}{self.root}"


def _host(text: str, uri: str) -> tuple[str, int]:
    if text.startswith("["):  # [ipv6]:port
        host, bracket, rest = text[1:].partition("]")
        if not bracket:
            raise InvalidArgument(
                f"malformed service URI {uri!r}: no ']' after IPv6 address {text[1:]!r}; write [ADDRESS]:PORT"
            )
        if rest and not rest.startswith(":"):
            raise InvalidArgument(f"malformed service URI {uri!r}: {rest!r} after [{host}]; write [ADDRESS]:PORT")
        if host and ":" not in host:
            raise InvalidArgument(f"malformed service URI {uri!r}: [{host}] is not an IPv6 address")
        port_text = rest[1:]
        if rest == ":":
            raise InvalidArgument(f"malformed service URI {uri!r}: empty port after [{host}]; {EXPECTED}")
    elif text.count(":") > 1:  # ::1:2181 cannot say where the address ends
        raise InvalidArgument(f"malformed service URI {uri!r}: IPv6 address {text!r} needs brackets: [ADDRESS]:PORT")
    else:
        host, _, port_text = text.rpartition(":") if ":" in text else (text, "", "")
    if not host:
        raise InvalidArgument(f"malformed service URI {uri!r}: empty host; {EXPECTED}")
    if not port_text:
        return host, DEFAULT_ZK_PORT
    if not (port_text.isascii() and port_text.isdigit()) or not 0 < int(port_text) < 65536:
        raise InvalidArgument(f"malformed service URI {uri!r}: bad port {port_text!r}; {EXPECTED}")
    return host, int(port_text)


def parse_service_uri(uri: str) -> ServiceUri:
    """Parse a metadata service URI, or raise :class:`InvalidArgument` naming what is wrong."""
    scheme, sep, rest = uri.strip().partition("://")
    if not sep:
        raise InvalidArgument(f"malformed service URI {uri!r}: no scheme; {EXPECTED}")
    backend, _, manager = scheme.lower().partition("+")
    if backend != "zk":
        raise InvalidArgument(f"unsupported metadata service {backend!r} in {uri!r}: only ZooKeeper (zk) is supported")
    if manager and manager not in MANAGERS:
        raise InvalidArgument(f"unknown ledger manager {manager!r} in {uri!r}: expected one of {', '.join(MANAGERS)}")
    hosts_text, slash, path = rest.partition("/")
    hosts = tuple(_host(h.strip(), uri) for h in hosts_text.replace(",", ";").split(";") if h.strip())
    if not hosts:
        raise InvalidArgument(f"malformed service URI {uri!r}: no ZooKeeper hosts; {EXPECTED}")
    root = "/" + path.strip("/")
    if not slash or root == "/" or "//" in root:
        raise InvalidArgument(f"malformed service URI {uri!r}: a ledgers root path is needed; {EXPECTED}")
    return ServiceUri(manager or None, hosts, root)

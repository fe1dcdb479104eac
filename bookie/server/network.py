"""Who a bookie is and where it listens, with Apache BookKeeper 4.17's meaning of its keys, so that one
``bk_server.conf`` gives a Java bookie and ours the same bookie id and the same listening address.

From ``BookieImpl.getBookieAddress`` / ``getBookieId``, ``net/DNS.java`` and ``BookieNettyServer``:

- the bookie address: ``advertisedAddress`` when set. Else the host name of ``listeningInterface`` (of the machine
  when none is set): ``DNS.getDefaultHost``, the first of the interface's addresses that has a reverse name, else the
  machine's canonical host name. That name resolved is the bookie address's IP; the bookie address is that IP, or
  with ``useHostNameAsBookieID`` its canonical host name (cut at the first dot with ``useShortHostName``). A loopback
  address is refused unless ``allowLoopback`` (an advertised address is never checked), even when ``bookieId`` is
  set: BookKeeper's bookie server computes the address all the same.
- the bookie id: ``bookieId`` when set, else the bookie address ``host:bookiePort``.
- ours only: a ``listeningInterface`` that names no interface of this machine is refused, also with an advertised
  address (BookKeeper then never looks at the name, and would run with a typo unnoticed).
- the bookie port binds every interface when ``listeningInterface`` is unset, else the bookie address's IP: with an
  advertised address, that address (as BookieNettyServer binds ``bookieAddress.getSocketAddress()``). Our gRPC admin
  port binds alike.

IPv4 only, as BookKeeper runs: its scripts start Java with ``-Djava.net.preferIPv4Stack=true``, so its
``NetworkInterface`` lists IPv4 addresses and names resolve to IPv4 ones (and its wildcard bind is 0.0.0.0).

Interfaces are listed with the standard library (``socket.if_nameindex`` and the ``SIOCGIFADDR`` ioctl): psutil is no
dependency of ours, and a C extension on every bookie host for one ioctl is not worth it. ``SIOCGIFADDR`` gives an
interface's primary IPv4 address, not secondary ones (Java lists those too, for the reverse lookups only).
Reverse names come from the system resolver (``gethostbyaddr``: /etc/hosts, then DNS) where BookKeeper asks DNS
servers only (JNDI); they differ only for an interface address that /etc/hosts names and DNS does not.
"""

from __future__ import annotations

import fcntl
import ipaddress
import socket
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bookie.errors import InvalidArgument
from bookie.server.claim import StartRefused

if TYPE_CHECKING:
    from bookie.server.config import BookieConfig

SIOCGIFADDR = 0x8915  # linux/sockios.h
ANY_ADDRESS = "0.0.0.0"


def interfaces() -> dict[str, str | None]:
    """The machine's network interfaces: name -> primary IPv4 address (None: it has none)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        return {name: _ipv4_of(sock, name) for _, name in socket.if_nameindex()}


def _ipv4_of(sock: socket.socket, name: str) -> str | None:
    try:
        answer = fcntl.ioctl(sock.fileno(), SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
    except OSError:  # EADDRNOTAVAIL: no IPv4 address; ENODEV: no such interface
        return None
    return socket.inet_ntoa(answer[20:24])


def interface_address(name: str, port: int = 3181) -> str | None:
    """The IPv4 address of interface ``name`` (an alias such as ``eth0:1`` too, as DNS.getSubinterface finds it)."""
    known = interfaces()
    if name in known:
        return known[name]
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        if (address := _ipv4_of(sock, name)) is not None:
            return address
    raise InvalidArgument(_unknown_interface(name, port, known))


def _unknown_interface(name: str, port: int, known: dict[str, str | None]) -> str:
    names = ", ".join(known) or "none"
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return f"listeningInterface={name}: no such network interface on this machine (it has {names})"
    # what bkctl's own configurations meant by it before it meant what it means in BookKeeper
    owner = next((n for n, a in known.items() if a == str(address)), None)
    fix = (
        f"listeningInterface={owner} and advertisedAddress={address}"
        if owner
        else f"listeningInterface to one of {names}, and advertisedAddress={address}"
    )
    return (
        f"listeningInterface={name} is an address, but listeningInterface names a network interface, as in "
        f"BookKeeper: to listen on {address} and be bookie {address}:{port}, set {fix}"
    )


def _canonical_name(address: str) -> str:
    """InetAddress.getCanonicalHostName: the reverse name, if it resolves back to the address; else the address."""
    try:
        name = socket.gethostbyaddr(address)[0]
        if address in socket.gethostbyname_ex(name)[2]:
            return name
    except OSError:
        pass
    return address


def _machine_host_name() -> str:
    """DNS.cachedHostname: InetAddress.getLocalHost().getCanonicalHostName(), "localhost" when it fails."""
    try:
        return _canonical_name(socket.gethostbyname(socket.gethostname()))
    except OSError:
        return "localhost"


def _default_host(interface: str | None, port: int) -> str:
    """DNS.getDefaultHost: the interface's reverse name, else the machine's host name."""
    if interface is None:
        return _machine_host_name()
    address = interface_address(interface, port)
    if address is not None:
        try:
            return socket.gethostbyaddr(address)[0]
        except OSError:
            pass
    return _machine_host_name()


@dataclass(frozen=True)
class BookieAddress:
    """BookieSocketAddress: the host (an address, or a name) and port that identify a bookie and that it publishes."""

    host: str
    port: int
    ip: str  # the host resolved

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


def _resolve(host: str, what: str) -> str:
    try:
        return socket.gethostbyname(host)
    except OSError as exc:
        raise StartRefused(f"cannot resolve {host} ({what}): {exc.strerror or exc}") from None


def bookie_address(config: BookieConfig) -> BookieAddress:
    """BookieImpl.getBookieAddress of a configuration (see the module's docstring)."""
    if config.listeningInterface and config.advertisedAddress:
        # BookKeeper does not look at the name then; a name that is no interface here is a typo, or a
        # configuration from another machine: refused all the same
        interface_address(config.listeningInterface, config.bookiePort)
    if config.advertisedAddress:
        host = config.advertisedAddress
        return BookieAddress(host, config.bookiePort, _resolve(host, "advertisedAddress"))
    interface = config.listeningInterface or None
    name = _default_host(interface, config.bookiePort)
    ip = _resolve(name, f"the host name of listeningInterface={interface}" if interface else "this machine's name")
    host = ip
    if config.useHostNameAsBookieID:
        host = _canonical_name(ip)
        if config.useShortHostName:
            host = host.split(".", 1)[0]
    address = BookieAddress(host, config.bookiePort, ip)
    if ipaddress.ip_address(ip).is_loopback and not config.allowLoopback:
        raise InvalidArgument(
            f"bookie address {address} is a loopback address, which BookKeeper refuses unless allowLoopback=true: "
            "set listeningInterface (e.g. eth0) or advertisedAddress to an address that clients and other bookies "
            "reach, or allowLoopback=true"
        )
    return address


@dataclass(frozen=True)
class BookieNetwork:
    """A bookie's id, its address, and where its bookie port binds."""

    bookie_id: str
    address: BookieAddress
    bind_host: str  # the bookie port's and the gRPC admin port's

    @classmethod
    def of(cls, config: BookieConfig) -> BookieNetwork:
        """Derived before anything is claimed or written: a setting that cannot be honoured leaves no trace."""
        address = bookie_address(config)
        bind_host = address.ip if config.listeningInterface else ANY_ADDRESS
        return cls(config.bookieId or str(address), address, bind_host)

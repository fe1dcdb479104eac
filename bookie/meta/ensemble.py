"""Which ZooKeeper sessions are connected, asked of every server of the ensemble with four-letter words.

A session is connected to one server at a time, and ``cons`` on a server lists only its own connections. So "this
session is connected nowhere" holds only when every member of the ensemble was asked, not only the servers of a
connect string: that may name a single load-balanced address (a Kubernetes Service such as Pulsar's
``pulsar-zookeeper:2181``, which reaches one pod), or some of the servers only, or leave out the observers.

The members come from ``conf``. A server of a quorum ends its answer with ``membership:`` and one line per member, as
ZooKeeper 3.5+ writes them (QuorumPeer.QuorumServer.toString)::

    server.1=zk1:2888:3888:participant;0.0.0.0:2181
    server.4=zk4:2888:3888:observer

with the client address after ``;`` only when it is set on that line; ``clientPort=`` in the same answer is the port
otherwise (every member is then asked on that port, and must say it is that member: ``serverId=``). A wildcard
client host (``0.0.0.0``, ``::``) means the member's own host; a member listed by a wildcard only (its own line,
``server.1=0.0.0.0:2888:3888;2181`` as the official Docker image writes it) is asked where another member lists it,
else where it was asked and answered as itself (``serverId=``), else not at all. A standalone server lists no
members: it is the ensemble. So does a quorum's server in read-only mode (ReadOnlyZooKeeperServer) or before
ZooKeeper 3.5, which says ``peerType=``: its members are then not known. A member that does not answer (down,
restarting, ``cons`` or ``conf`` not in ``4lw.commands.whitelist``) leaves the connected sessions unknown.
"""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

Ask = Callable[[str, int, bytes], bytes]  # (host, port, word) -> the server's answer, b"" when none

# The least time between two samples of `cons` (the gap is 2 x tickTime, 4 s with ZooKeeper's default tickTime): a
# healthy Java client waits up to 1 s before each reconnect, 1 s more once it has tried every host of its list.
SAMPLE_GAP_S = 2.0
_MEMBER = re.compile(r"^server\.(\d+)=([^;\s]+)(?:;(\S+))?\s*$", re.MULTILINE)
_WILDCARD = {"0.0.0.0", "::", "[::]", "0:0:0:0:0:0:0:0"}


def four_letters(host: str, port: int, command: bytes, timeout: float = 5.0) -> bytes:
    """The server's answer to a four-letter word, b"" when it gives none (down, or the word not whitelisted). The
    timeout is generous: a loaded server that answers late must not be taken for one that cannot say."""
    try:
        with socket.create_connection((host, port), timeout) as s:
            s.sendall(command)
            answer = b""
            while chunk := s.recv(4096):
                answer += chunk
            return answer
    except OSError:
        return b""


def parse_sessions(answer: bytes) -> set[int] | None:
    """The session ids of a ``cons`` answer; None for no answer (not whitelisted, or not serving)."""
    if b"sid=" not in answer and b"queued=" not in answer:
        return None
    return {int(sid, 16) for sid in re.findall(rb"sid=0x([0-9a-f]+)", answer)}


def connected_sessions(host: str, port: int, timeout: float = 5.0) -> set[int] | None:
    """The ids of the sessions connected to this one server now (``cons``); None when it does not say. A session
    restored from disk after a restart keeps its ephemeral znodes until it expires, connected or not: only this tells
    a live registration from one about to vanish."""
    return parse_sessions(four_letters(host, port, b"cons", timeout))


def _setting(conf: str, name: str) -> str | None:
    found = re.search(rf"^{name}=(\S*)\s*$", conf, re.MULTILINE)
    return found.group(1) if found else None


def _host(address: str) -> str:
    """The host of ``host:port...`` or ``[v6]:port...``; the first of a multi-address member (``a:1:2|b:1:2``)."""
    address = address.split("|")[0]
    if address.startswith("["):
        return address[1 : address.index("]")]
    return address.split(":")[0]


def _client_address(member_host: str, client: str) -> tuple[str, int]:
    host, _, port = client.rpartition(":")
    if not host or host in _WILDCARD:
        host = member_host
    return host.strip("[]"), int(port)


@dataclass(frozen=True)
class Member:
    """One server to ask: its client address, and the ``serverId`` it must answer with (None: a standalone)."""

    host: str
    port: int
    server_id: int | None = None

    def __str__(self) -> str:
        where = f"{self.host}:{self.port}"
        return where if self.server_id is None else f"server.{self.server_id} ({where})"


@dataclass(frozen=True)
class Ensemble:
    members: tuple[Member, ...]
    tick_ms: int  # the largest tickTime the servers say


def members(hosts: Iterable[tuple[str, int]], ask: Ask = four_letters) -> Ensemble | str:
    """Every member of the ensemble behind the connect string's ``hosts``, from ``conf`` on each; a sentence saying
    why they are not known otherwise."""
    found: dict[object, Member | int] = {}  # a quorum member by its sid until its address is chosen
    listed: dict[int, tuple[str, int]] = {}  # a member's address as some server lists it
    reached: dict[int, tuple[str, int]] = {}  # where a server that lists itself by a wildcard address was asked
    tick = 0
    for host, port in hosts:
        conf = ask(host, port, b"conf").decode(errors="replace")
        client_port = _setting(conf, "clientPort")
        if client_port is None:
            return f"{host}:{port} does not answer `conf` (down, not serving, or not in 4lw.commands.whitelist)"
        tick = max(tick, int(_setting(conf, "tickTime") or 0))
        if "membership:" not in conf:
            if _setting(conf, "peerType") is not None:  # read-only mode, or before 3.5: no members listed
                return f"{host}:{port} serves a quorum but lists no members (read-only mode, or ZooKeeper < 3.5)"
            found[(host, port)] = Member(host, port)
            continue
        lines = _MEMBER.findall(conf.split("membership:", 1)[1])
        if not lines:
            return f"{host}:{port} lists no member in its answer to `conf`"
        for sid, quorum, client in lines:
            member_host = _host(quorum)
            address = _client_address(member_host, client) if client else (member_host, int(client_port))
            found.setdefault(int(sid), int(sid))
            if address[0] not in _WILDCARD:
                listed.setdefault(int(sid), address)
            elif sid == _setting(conf, "serverId"):
                reached.setdefault(int(sid), (host, port))
    chosen: list[Member] = []
    for entry in found.values():
        if isinstance(entry, Member):
            chosen.append(entry)
            continue
        where = listed.get(entry) or reached.get(entry)
        if where is None:
            return f"server.{entry} is listed by a wildcard address only, and was not asked as itself"
        chosen.append(Member(*where, entry))
    return Ensemble(tuple(chosen), tick)


def sample(ensemble: Ensemble, ask: Ask = four_letters) -> set[int] | str:
    """The sessions connected to any member now (``cons`` on each); a sentence naming the first member that did not
    say otherwise."""
    sessions: set[int] = set()
    for member in ensemble.members:
        if member.server_id is not None:
            conf = ask(member.host, member.port, b"conf").decode(errors="replace")
            if _setting(conf, "serverId") != str(member.server_id):
                return f"{member} does not answer `conf` as that member"
        connected = parse_sessions(ask(member.host, member.port, b"cons"))
        if connected is None:
            return f"{member} does not answer `cons` (down, restarting, or not in 4lw.commands.whitelist)"
        sessions |= connected
    return sessions


def live_sessions(
    hosts: Iterable[tuple[str, int]],
    watched: Collection[int] = (),
    *,
    ask: Ask = four_letters,
    sleep: Callable[[float], None] = time.sleep,
) -> set[int] | str:
    """The sessions connected to some member of the ensemble, or a sentence saying why that is not known. When one
    of ``watched`` is connected nowhere, every member is asked again after ``max(SAMPLE_GAP_S, 2 x tickTime)`` and
    the sessions of both samples are returned: a healthy client that was reconnecting (a server restarted under it)
    shows up in the second, and only a session absent from both counts as connected nowhere."""
    ensemble = members(hosts, ask)
    if isinstance(ensemble, str):
        return ensemble
    first = sample(ensemble, ask)
    if isinstance(first, str) or all(s in first for s in watched):
        return first
    sleep(max(SAMPLE_GAP_S, 2 * ensemble.tick_ms / 1000))
    second = sample(ensemble, ask)
    return second if isinstance(second, str) else first | second

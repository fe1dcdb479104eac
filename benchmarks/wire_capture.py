"""A bookie's own time per add, seen on the wire the same way for any bookie (Java's or ours): a tcpdump capture on
the loopback of the bookies' ports, and for each v3 add the time from the packet that completes its request frame to
the packet that begins its answer; and an entry's, from its first request packet to the answer that completes its ack
quorum, so that what is left of the client's latency is the client's own. It needs no statistics from the bookie, so
Java's bookies and ours are timed alike (the oracle's jar has no Prometheus provider; its Codahale one slows the
bookies it measures). Used by ``vs_bookkeeper.py --wire``; not a script of its own.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import struct
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from bookie._proto import bookkeeper_protocol_pb2 as pb

PCAP_NANO = 0xA1B23C4D  # pcap's magic number with nanosecond timestamps (tcpdump --time-stamp-precision=nano)
LINK_HEADER = {1: 14, 113: 16}  # pcap link types: Ethernet (lo), Linux cooked capture
TCP = 6


def missing() -> str | None:
    """Why a capture cannot run here, or None."""
    if shutil.which("tcpdump") is None:
        return "--wire needs tcpdump (apt-get install tcpdump)"
    if os.geteuid() != 0:
        return "--wire needs root: tcpdump captures the loopback"
    return None


@contextlib.contextmanager
def capture(path: Path, ports: list[int]) -> Iterator[None]:
    """tcpdump on lo, the TCP traffic of ``ports``, whole packets into ``path``, while the body runs."""
    where = " or ".join(f"port {port}" for port in ports)
    command = ["tcpdump", "-i", "lo", "-s", "0", "-B", "65536", "--time-stamp-precision=nano"]
    dump = subprocess.Popen(
        [*command, "-w", str(path), f"tcp and ({where})"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        assert dump.stderr is not None
        said = dump.stderr.readline().decode(errors="replace").strip()
        if "listening on" not in said:  # capturing from that line on
            raise RuntimeError(f"tcpdump did not start: {said}")
        yield
    finally:
        dump.send_signal(signal.SIGINT)
        dump.wait(timeout=60)


def segments(pcap: bytes) -> Iterator[tuple[float, int, int, int, bytes]]:
    """``(time, source port, destination port, sequence number, payload)`` of each IPv4 TCP packet with a payload."""
    magic, link = struct.unpack_from("<I", pcap)[0], struct.unpack_from("<I", pcap, 20)[0]
    scale, skip = (1e-9 if magic == PCAP_NANO else 1e-6), LINK_HEADER[link]
    position = 24
    while position + 16 <= len(pcap):
        seconds, fraction, length, _ = struct.unpack_from("<IIII", pcap, position)
        ip = memoryview(pcap)[position + 16 + skip : position + 16 + length]
        position += 16 + length
        if ip[0] >> 4 != 4 or ip[9] != TCP:
            continue
        tcp = ip[(ip[0] & 15) * 4 : struct.unpack_from(">H", ip, 2)[0]]
        source, destination, sequence = struct.unpack_from(">HHI", tcp)
        payload = bytes(tcp[(tcp[12] >> 4) * 4 :])
        if payload:
            yield seconds + fraction * scale, source, destination, sequence, payload


class _Stream:
    """One direction of one connection: bytes not yet a whole frame, the next sequence number, and when the
    packet that began the frame in progress arrived."""

    __slots__ = ("began", "buffer", "next")

    def __init__(self) -> None:
        self.buffer = b""
        self.next: int | None = None
        self.began = 0.0


def frames(pcap: bytes, ports: set[int]) -> Iterator[tuple[float, float, tuple[int, int], bool, bytes]]:
    """Each v3 frame to or from ``ports``: ``(when its first packet came, when its last did, (client port, bookie
    port), whether it is a request, its body)``. A retransmitted segment is skipped (loopback loses none)."""
    streams: dict[tuple[int, int, bool], _Stream] = {}
    for when, source, destination, sequence, payload in segments(pcap):
        if destination in ports:
            connection, request = (source, destination), True
        elif source in ports:
            connection, request = (destination, source), False
        else:
            continue
        stream = streams.setdefault((*connection, request), _Stream())
        if stream.next is not None and (sequence - stream.next) % 2**32 > 2**31:
            continue
        stream.next = (sequence + len(payload)) % 2**32
        if not stream.buffer:
            stream.began = when
        stream.buffer += payload
        while len(stream.buffer) >= 4:
            size = struct.unpack_from(">i", stream.buffer)[0]
            if len(stream.buffer) < 4 + size:
                break
            yield stream.began, when, connection, request, stream.buffer[4 : 4 + size]
            stream.buffer = stream.buffer[4 + size :]
            stream.began = when


class AddTimes(NamedTuple):
    """Seconds: per bookie port, each add inside that bookie; per entry, until its ack quorum answered."""

    bookies: dict[int, list[float]]
    quorum: list[float]


def add_times(pcap: bytes, ports: set[int], ack_quorum: int, since: float = 0.0) -> AddTimes:
    """The seconds each add sent from ``since`` on (epoch seconds) took, seen on the wire: inside each bookie
    (requests and answers matched by connection and txnId), and for the client, until ``ack_quorum`` bookies had
    begun to answer EOK (matched by ledger and entry; an entry that never gets them is left out)."""
    sent: dict[tuple[tuple[int, int], int], float] = {}
    first: dict[tuple[int, int], float] = {}  # per (ledger, entry): its first request's first packet
    answered: Counter[tuple[int, int]] = Counter()  # EOK answers per entry
    bookies: dict[int, list[float]] = {}
    quorum: list[float] = []
    for began, completed, connection, request, body in frames(pcap, ports):
        if request:
            message = pb.Request.FromString(body)
            if message.header.operation == pb.ADD_ENTRY and completed >= since:
                sent[connection, message.header.txnId] = completed
                entry = (message.addRequest.ledgerId, message.addRequest.entryId)
                first[entry] = min(began, first.get(entry, began))  # frames complete in any order
            continue
        answer = pb.Response.FromString(body)
        asked = sent.pop((connection, answer.header.txnId), None)
        if asked is None:
            continue
        bookies.setdefault(connection[1], []).append(began - asked)
        entry = (answer.addResponse.ledgerId, answer.addResponse.entryId)
        if answer.status == answer.addResponse.status == pb.EOK and entry in first:
            answered[entry] += 1
            if answered[entry] == ack_quorum:
                quorum.append(began - first[entry])
    return AddTimes(bookies, quorum)

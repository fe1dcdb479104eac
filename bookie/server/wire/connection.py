"""A connection of the bookie port: the framing stage, one asyncio ``Protocol`` per connection.

Per ``data_received``, every complete frame is cut from one buffer and decoded, v3 or v2, told apart per connection
as BookKeeper's ``RequestDecoder`` does: plain adds and reads by bookie/codec/frames.py (in C), the rest by
bookie/codec/wire.py, and handed to the request processor (bookie/server/wire/requests.py). All the adds among them
go to ledger storage as one batch; plain reads are answered in the same pass, in one write. Before authentication,
frames go to bookie/server/wire/admission.py instead.

Back-pressure, as BookKeeper's ``maxAddsInProgressLimit`` / ``maxReadsInProgressLimit`` and its response
back-pressure do it by turning off a channel's auto-read: a connection stops reading while it has more than
``MAX_ADDS_IN_PROGRESS`` adds or ``MAX_READS_IN_PROGRESS`` waiting reads in flight, or while its peer does not take
the answers (the transport's write buffer above ``WRITE_BUFFER_HIGH``); it reads again once all are below their
resume marks. What it does not read stays in the kernel's socket buffer, and TCP pushes back on the client. No queue
in the bookie grows with what a client sends. (BookKeeper's limits are 0, unbounded, by default; ours are always on.)
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any, cast

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.codec import frames, wire
from bookie.errors import MalformedFrame
from bookie.server.wire.adds import AddBatch, Adds, Answer
from bookie.server.wire.admission import Admission, StartTls, address
from bookie.server.wire.requests import RequestProcessor

log = logging.getLogger("bookie.server.wire")

MAX_ADDS_IN_PROGRESS = 10_000  # per connection: ~10 MB of 1 KiB entries waiting for the journal
MAX_READS_IN_PROGRESS = 10_000  # per connection: fence reads and LAC long polls waiting
SCANS = {True: frames.scan_requests_v3, False: frames.scan_requests_v2}  # by whether the connection speaks v3


class Pause(enum.Enum):
    """Why a connection stopped reading; the adds' and reads' bounds are BookKeeper's blocked waits."""

    ADDS = "ADD_ENTRY_BLOCKED_WAIT"
    READS = "READ_ENTRY_BLOCKED_WAIT"
    PEER = None  # it does not take the answers


class BookieConnection(asyncio.Protocol):
    WRITE_BUFFER_HIGH = 4 << 20  # answers the peer has not taken yet

    def __init__(self, server: Any) -> None:  # WireServer
        self.server = server
        self.handlers = server.handlers
        self.storage = server.storage
        self.bookie = server.bookie
        self.stats = server.bookie.stats
        self.buffer = bytearray()
        self.decoder = wire.RequestDecoder()
        self.transport: asyncio.Transport | None = None
        self.reads_in_flight = 0
        self.reading = True
        self.peer_slow = False
        self.tasks: set[asyncio.Future[Any]] = set()
        self.read_only = False  # the bookie's, once per pass
        self.paused_for: Pause | None = None
        self.paused_at = 0.0
        self.admission = Admission(self)
        self.adds = Adds(self)
        self.requests = RequestProcessor(self)

    @property
    def adds_in_flight(self) -> int:
        return self.adds.in_flight

    def added(self, answers: list[Answer], statuses: list[int]) -> None:
        """Adds answered: those the bookie took showed their ledger's master key (admission's read check)."""
        self.admission.added(answers, statuses)

    # ---- connection ----
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport = cast(asyncio.Transport, transport)
        transport.set_write_buffer_limits(high=self.WRITE_BUFFER_HIGH)
        self.server.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        """An expected event, one INFO line when it cut something short (as BookKeeper's "Client died before
        request could be completed"); the requests still waiting are cancelled, quietly."""
        self.server.connections.discard(self)
        in_flight = self.adds.in_flight + len(self.tasks)
        if (exc is not None or in_flight) and not self.bookie.shutting_down:
            reason = f" ({exc})" if exc is not None else ""
            log.info("client %s went away%s with %d requests in flight", self.peer(), reason, in_flight)
        for task in self.tasks:
            task.cancel()
        self.transport = None

    def peer(self) -> str:
        return address(self.transport.get_extra_info("peername") if self.transport else None)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def pause_writing(self) -> None:
        self.peer_slow = True
        self.pace()

    def resume_writing(self) -> None:
        self.peer_slow = False
        self.pace()

    def pace(self) -> None:
        """Read while every bound holds; stop at a bound, start again below half of it. The time a connection
        stopped at the adds' or reads' bound is BookKeeper's ADD_ENTRY_BLOCKED_WAIT / READ_ENTRY_BLOCKED_WAIT (its
        request thread blocks, with the channel's auto-read off, until the semaphore lets the request in)."""
        if self.transport is None:
            return
        if self.reading:
            reason = (
                Pause.PEER
                if self.peer_slow
                else Pause.ADDS
                if self.adds.in_flight >= MAX_ADDS_IN_PROGRESS
                else Pause.READS
                if self.reads_in_flight >= MAX_READS_IN_PROGRESS
                else None
            )
            if reason is not None:
                self.reading = False
                self.paused_for, self.paused_at = reason, time.perf_counter()
                self.transport.pause_reading()
        elif (
            not self.peer_slow
            and self.adds.in_flight <= MAX_ADDS_IN_PROGRESS // 2
            and self.reads_in_flight <= MAX_READS_IN_PROGRESS // 2
        ):
            self.reading = True
            if self.paused_for is not None and self.paused_for.value is not None:
                self.stats.op(self.paused_for.value).event(time.perf_counter() - self.paused_at)
            self.paused_for = None
            self.transport.resume_reading()

    def write(self, frames: list[bytes]) -> None:
        if frames and self.transport is not None and not self.transport.is_closing():
            self.transport.write(b"".join(frames))

    def drop(self, reason: Exception) -> None:
        """Framing or decoding failed: BookKeeper closes such a connection (the bytes that follow mean nothing)."""
        log.warning("closing the connection from %s: %s", self.peer(), reason)
        self.close()

    # ---- frames ----
    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        buffer += data
        if not self.admission.admitted:
            try:
                bodies = wire.cut_frames(buffer, self.server.max_frame_size)
            except MalformedFrame as exc:
                self.drop(exc)
                return
            self.admission.unadmitted(bodies)
            return
        out: list[bytes] = []
        started = time.perf_counter()
        batch = AddBatch(started)
        self.read_only = self.bookie.read_only  # once per pass, not per add
        requests = self.requests
        requests.begin(started)
        max_size, offset = self.server.max_frame_size, 0
        try:
            while True:
                # plain adds and reads through bookie/codec/frames.py, the rest one frame at a time through wire.py
                # (everything, on a connection whose reads are checked against the keys it showed)
                scan = frames.scan_none if self.admission.proven is not None else SCANS[self.decoder.v3]
                offset, items, stop = scan(buffer, offset, max_size)
                if items:
                    batch = requests.items(items, out, batch)
                if stop == frames.STOP_END:
                    break
                if stop != frames.STOP_OTHER:
                    raise frames.framing_error(buffer, offset, stop, max_size)
                body, offset = frames.next_frame(buffer, offset)
                request = self.decoder.decode(body)
                if isinstance(request, pb.Request):
                    batch = requests.v3(request, out, batch)
                else:
                    batch = requests.v2(request, out, batch)
        except MalformedFrame as exc:
            self.adds.submit(batch)
            self.write(out)
            self.drop(exc)
            return
        except StartTls as start:
            self.adds.submit(batch)
            self.write(out)
            self.admission.start_tls(start.header, trailing=offset < len(buffer))
            return
        finally:
            del buffer[:offset]
        self.adds.submit(batch)
        self.write(out)
        reads = requests.reads
        if reads.ok or reads.failed:  # answered together: one latency, their arrival to the write
            self.stats.reads_answered(reads.ok, reads.failed, reads.size, reads.seconds, time.perf_counter() - started)
        self.pace()

    # ---- operations that wait ----
    def later(
        self,
        work: Coroutine[Any, Any, Any],
        answer: Callable[[Any], bytes],
        read_wait: bool = False,
        stats: str | None = None,
    ) -> None:
        """Run ``work`` as a task and write ``answer(its result)`` when it is done. ``read_wait``: a read that
        counts against ``MAX_READS_IN_PROGRESS``; ``stats``: the RequestStats of the operation, from its arrival to
        the answer written."""
        if read_wait:
            self.reads_in_flight += 1
        arrived = self.requests.started
        task = asyncio.ensure_future(work)
        self.tasks.add(task)

        def done(task: asyncio.Future[Any]) -> None:
            self.tasks.discard(task)
            if read_wait:
                self.reads_in_flight -= 1
            if task.cancelled():
                return
            if (exc := task.exception()) is not None:
                log.error("request failed: %r", exc, exc_info=exc)
                self.close()
                return
            result = task.result()
            self.write([answer(result)])
            if stats is not None:
                self.stats.op(stats).event(time.perf_counter() - arrived, result.status == pb.EOK)
            self.pace()

        task.add_done_callback(done)

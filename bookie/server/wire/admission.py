"""Authentication, TLS and the per-ledger read check of a connection (bookie/server/auth.py says who may do what).

TLS, as BookKeeper negotiates it (``BookieRequestProcessor.processStartTLSRequestV3``): a v3 START_TLS request is
answered EOK in the clear, and the TLS handshake follows on the same connection (``loop.start_tls``); a bookie
without TLS answers EBADREQ and the connection goes on in the clear. The client sends nothing after START_TLS
until its answer, so bytes that follow it in the same read are a protocol error (the connection is closed: they
were neither read in the clear nor lost silently).

Before authentication (``AuthHandler.ServerSideHandler``, with BookieAuthZFactory), frames go through
:meth:`Admission.unadmitted` instead of the request processor. With ``bkctlReadRequiresMasterKey``, a principal
without an admin role reads only the ledgers whose master key its connection showed (:attr:`Admission.proven`).
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import ssl
from collections.abc import Iterable
from typing import Any, Protocol

from bookie._proto import bookkeeper_protocol_pb2 as pb
from bookie.codec import wire
from bookie.errors import MalformedFrame
from bookie.server.wire.operations import OPERATIONS, ReadCheck
from bookie.tls import ou_of_subject

log = logging.getLogger("bookie.server.wire")

HANDSHAKE_TIMEOUT = 10.0  # seconds: the Java client's startTLSTimeoutSecs


def eua_v2(request: wire.AddRequestV2 | wire.ReadRequestV2 | wire.BatchReadRequestV2) -> bytes:
    """The EUA answer of a v2 add, read or batch read."""
    rc = wire.v2_status(pb.EUA)
    if isinstance(request, wire.AddRequestV2):
        return wire.add_response_v2(rc, request.ledger_id, request.entry_id)
    if isinstance(request, wire.ReadRequestV2):
        return wire.read_response_v2(rc, request.ledger_id, request.entry_id)
    return wire.encode_response_v2(
        wire.BatchReadResponseV2(rc, request.ledger_id, request.entry_id, request.request_id)
    )


def address(peer: Any) -> str:
    return f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)


class StartTls(Exception):
    """Raised by the request processor at a START_TLS request: the connection's pass ends there."""

    def __init__(self, header: pb.BKPacketHeader) -> None:
        self.header = header


class Connection(Protocol):
    """What admission needs of its connection (bookie/server/wire/connection.py), an asyncio protocol."""

    WRITE_BUFFER_HIGH: int
    server: Any  # WireServer: tls, authorizer, read_requires_key
    storage: Any
    decoder: wire.RequestDecoder
    buffer: bytearray
    transport: asyncio.Transport | None
    tasks: set[asyncio.Future[Any]]

    @property
    def adds_in_flight(self) -> int: ...

    def write(self, frames: list[bytes]) -> None: ...

    def drop(self, reason: Exception) -> None: ...

    def close(self) -> None: ...

    def peer(self) -> str: ...

    def connection_lost(self, exc: Exception | None) -> None: ...


class Admission:
    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.server = connection.server
        self.authorizer = connection.server.authorizer
        self.admitted = not self.authorizer.enabled  # authenticated (AuthHandler.ServerSideHandler)
        self.secure = False  # TLS done
        self.principal: str | None = None  # the client certificate's role, with BookieAuthZFactory
        # with bkctlReadRequiresMasterKey, for a principal without an admin role: the ledgers whose master key
        # this connection showed, the only ones it may read (None: it may read any, as in BookKeeper)
        self.proven: set[int] | None = None
        self.refusing_logged = False

    # ---- before authentication ----
    def unadmitted(self, bodies: list[bytes]) -> None:
        """AuthHandler.ServerSideHandler before authentication: START_TLS goes through; AUTH naming another
        plugin closes the connection (BookieAuthZFactory never answers its own); v3 requests and v2 adds and
        reads are answered EUA; anything else closes the connection."""
        connection = self.connection
        out: list[bytes] = []
        plugin = self.authorizer.plugin
        remaining = iter(bodies)
        for body in remaining:
            try:
                request = connection.decoder.decode(body)
            except MalformedFrame as exc:
                connection.write(out)
                connection.drop(exc)
                return
            if isinstance(request, pb.Request):
                header = request.header
                if header.operation == pb.START_TLS and request.HasField("startTLSRequest"):
                    connection.write(out)
                    if self.server.tls is None or self.secure:
                        connection.write([wire.response_v3(header, pb.EBADREQ)])
                        continue
                    self.start_tls(header, trailing=next(remaining, None) is not None or bool(connection.buffer))
                    return
                if header.operation == pb.AUTH and request.HasField("authRequest"):
                    if request.authRequest.authPluginName != plugin:
                        log.error(
                            "Received message from incompatible auth plugin. Local = %s, Remote = %s, Channel = %s",
                            plugin,
                            request.authRequest.authPluginName,
                            connection.peer(),
                        )
                        connection.write(out)
                        connection.close()
                        return
                    continue
                out.append(wire.encode_v3(pb.Response(header=header, status=pb.EUA)))
            elif isinstance(request, wire.AddRequestV2 | wire.ReadRequestV2):
                out.append(eua_v2(request))
            elif isinstance(request, wire.AuthRequestV2) and request.plugin_name == plugin:
                continue
            else:
                connection.write(out)
                connection.close()
                return
        if out and not self.refusing_logged:
            self.refusing_logged = True
            log.warning(
                "refusing the requests of %s (EUA): not authenticated; this bookie serves TLS clients whose "
                "certificate has one of the roles %s",
                connection.peer(),
                ", ".join(self.authorizer.authorized_roles),
            )
        connection.write(out)

    # ---- TLS ----
    def start_tls(self, header: pb.BKPacketHeader, trailing: bool) -> None:
        """Answer START_TLS in the clear, then hand the connection to the TLS handshake."""
        connection = self.connection
        if trailing:
            connection.drop(MalformedFrame("bytes sent after START_TLS before its answer"))
            return
        if connection.adds_in_flight or connection.tasks:
            log.warning("START_TLS from %s with requests in flight: refused (EBADREQ)", connection.peer())
            connection.write([wire.response_v3(header, pb.EBADREQ)])
            return
        transport = connection.transport
        if transport is None or transport.is_closing():
            return
        # written before the handshake: start_tls keeps the order
        transport.write(wire.response_v3(header, pb.EOK, "startTLSResponse", pb.StartTLSResponse()))
        connection.transport = None  # nothing is written in the clear from now on
        connection.tasks.add(asyncio.ensure_future(self._handshake(transport, header)))

    async def _handshake(self, transport: asyncio.Transport, header: pb.BKPacketHeader) -> None:
        connection, tls = self.connection, self.server.tls
        assert tls is not None
        peer = address(transport.get_extra_info("peername"))
        try:
            secure = await asyncio.get_running_loop().start_tls(
                transport,
                connection,  # type: ignore[arg-type]  # an asyncio.Protocol
                tls.context(),
                server_side=True,
                ssl_handshake_timeout=HANDSHAKE_TIMEOUT,
            )
        except (ssl.SSLError, OSError, TimeoutError) as exc:
            log.warning("TLS handshake with %s failed: %s", peer, exc)
            transport.close()
            connection.connection_lost(None)
            return
        finally:
            connection.tasks.discard(asyncio.current_task())  # this task
        if secure is None:  # the connection went away during the handshake
            return
        connection.transport, self.secure = secure, True
        secure.set_write_buffer_limits(high=connection.WRITE_BUFFER_HIGH)
        authorizer = self.authorizer
        if authorizer.enabled:
            certificate = secure.get_extra_info("peercert")
            if not certificate:
                log.error("AuthZ failed: Certificate missing; host: %s", peer)
            else:
                self.principal = authorizer.principal(ou_of_subject(certificate.get("subject", ())), peer)
            if self.principal is None:
                # processStartTLSRequestV3: "TLS Handshake failed: Could not authenticate."; the connection stays,
                # and each of its requests gets EUA
                connection.write([wire.encode_v3(pb.Response(header=header, status=pb.EIO))])
                return
            self.admitted = True
            if self.server.read_requires_key and not authorizer.is_admin(self.principal):
                self.proven = set()
        cipher = secure.get_extra_info("cipher")
        log.info(
            "connection from %s protected by %s%s",
            peer,
            cipher[0] if cipher else "TLS",
            f", authenticated as {self.principal}" if self.principal else "",
        )

    # ---- the per-ledger read check (only when ``proven`` is a set) ----
    def may_read(self, ledger_id: int, master_key: bytes | None) -> bool:
        """Whether this connection may read ``ledger_id``: it showed the ledger's master key before, or shows it
        now."""
        proven = self.proven
        if proven is None or ledger_id in proven:
            return True
        if master_key is None:
            return False
        known = self.connection.storage.master_key(ledger_id)
        if known is not None and hmac.compare_digest(known, master_key):
            proven.add(ledger_id)
            return True
        return False

    def refusal(self, request: pb.Request) -> bytes | None:
        """The EUA answer of a v3 request that reads a ledger this connection has not shown the key of, or None."""
        header = request.header
        operation = OPERATIONS.get(header.operation)
        if operation is None or not request.HasField(operation.request):
            return None
        message = getattr(request, operation.request)
        if operation.check is ReadCheck.SHOWS_KEY:
            self.may_read(message.ledgerId, message.masterKey)
        elif operation.check is ReadCheck.READS:
            key = message.masterKey if operation.code == pb.READ_ENTRY and message.HasField("masterKey") else None
            if not self.may_read(message.ledgerId, key):
                if operation.code == pb.READ_ENTRY:
                    return wire.read_response_v3(header.txnId, pb.EUA, message.ledgerId, message.entryId, None, None)
                answer = pb.Response(header=wire.reply_header(header), status=pb.EUA)
                getattr(answer, operation.response).status = pb.EUA
                getattr(answer, operation.response).ledgerId = message.ledgerId
                return wire.encode_v3(answer)
        return None

    def added(self, answers: Iterable[tuple[Any, int, int]], statuses: list[int]) -> None:
        """An add the bookie took showed the ledger's master key."""
        if self.proven is not None:
            self.proven.update(a[1] for a, status in zip(answers, statuses, strict=True) if status == pb.EOK)

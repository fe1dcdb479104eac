"""A synchronous gRPC channel to one bookie's admin service. gRPC errors are translated here, at the stub
boundary, into the core's exceptions; a non-OK BookKeeper status becomes the exception registered for it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import grpc

from bookie._proto import bookie_admin_pb2_grpc
from bookie.errors import (
    AdminOperationMissing,
    BKError,
    OperationTimeout,
    ServiceUnavailable,
    Unauthorized,
    error_for_status,
)
from bookie.meta.registration import RegisteredBookie
from bookie.tls import TlsSettings, read_material

MAX_MESSAGE = 64 * 1024 * 1024
_Response = TypeVar("_Response")
OPTIONS = [("grpc.max_receive_message_length", MAX_MESSAGE), ("grpc.max_send_message_length", MAX_MESSAGE)]


def translate_rpc_error(exc: grpc.RpcError, bookie: str, what: str) -> BKError:
    code = exc.code() if hasattr(exc, "code") else None
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return OperationTimeout(f"{what} on bookie {bookie} timed out")
    if code == grpc.StatusCode.UNAVAILABLE:
        return ServiceUnavailable(f"bookie {bookie} is unreachable ({what})")
    if code == grpc.StatusCode.UNIMPLEMENTED:
        return AdminOperationMissing(bookie, what)
    if code == grpc.StatusCode.PERMISSION_DENIED:
        return Unauthorized(f"{what} on bookie {bookie} refused: {exc.details() if hasattr(exc, 'details') else exc}")
    details = exc.details() if hasattr(exc, "details") else str(exc)
    return BKError(f"{what} on bookie {bookie} failed: {code.name if code else 'error'} {details}")


def channel_credentials(tls: TlsSettings) -> grpc.ChannelCredentials:
    """gRPC's TLS from a client's settings (gRPC always checks that the bookie's certificate names its address)."""
    material = read_material(tls, "client")
    return grpc.ssl_channel_credentials(material.trusted, material.key, material.chain)


class BookieChannel:
    def __init__(self, bookie_id: str, address: tuple[str, int], timeout: float = 10.0, tls: TlsSettings | None = None):
        self.bookie_id = bookie_id
        self.timeout = timeout
        target = f"{address[0]}:{address[1]}"
        if tls is None:
            self._channel = grpc.insecure_channel(target, options=OPTIONS)
        else:
            self._channel = grpc.secure_channel(target, channel_credentials(tls), options=OPTIONS)
        self.admin = bookie_admin_pb2_grpc.BookieAdminStub(self._channel)

    @classmethod
    def to(cls, registered: RegisteredBookie, timeout: float = 10.0, tls: TlsSettings | None = None) -> BookieChannel:
        return cls(registered.bookie_id, registered.admin_address() or registered.address(), timeout, tls)

    def __enter__(self) -> BookieChannel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._channel.close()

    def call(
        self, method: Callable[..., _Response], request: Any, what: str, timeout: float | None = None
    ) -> _Response:
        """Call a unary method of a stub (a protobuf message in, one out); raise the core's exception for an RPC
        failure or a non-OK ``status``."""
        try:
            response = method(request, timeout=timeout or self.timeout)
        except grpc.RpcError as exc:
            raise translate_rpc_error(exc, self.bookie_id, what) from None
        status = getattr(response, "status", 0)
        if status:
            raise error_for_status(status, f"{what} on bookie {self.bookie_id}: status {status}")
        return response

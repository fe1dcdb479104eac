"""The roles of bookie/server/auth.py on our gRPC admin port, checked before any handler runs: the principal is the
client certificate's role (gRPC's TLS, with the bookie's tls* keys).

With BookieAuthZFactory on: every call needs an admitted principal, and the calls that change the bookie need an
admin role. PERMISSION_DENIED otherwise, in one line.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import grpc

from bookie.server.auth import Authorizer
from bookie.tls import ou_of_pem

# methods any admitted principal may call; every other method needs an admin role
ADMITTED = frozenset(
    {
        "/bookkeeper.admin.BookieAdmin/GetBookieState",
        "/bookkeeper.admin.BookieAdmin/GetGcStatus",
    }
)
HOW = "TLS on the admin port, from the bookie's tls* keys"


def principal(context: grpc.aio.ServicerContext, authorizer: Authorizer) -> str | None:
    certificates = context.auth_context().get("x509_pem_cert")
    if not certificates:
        return None
    return authorizer.principal(ou_of_pem(certificates[0]), context.peer())


class RoleInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]  # grpc has no type information
    def __init__(self, authorizer: Authorizer) -> None:
        self.authorizer = authorizer

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Any],
        details: grpc.HandlerCallDetails,
    ) -> Any:  # an RpcMethodHandler
        handler = await continuation(details)
        if handler is None or not self.authorizer.enabled:
            return handler
        need_admin = details.method not in ADMITTED
        authorizer = self.authorizer

        async def check(context: grpc.aio.ServicerContext) -> None:
            who = principal(context, authorizer)
            message: str | None
            if who is None:
                message = f"this bookie serves clients with a certificate of an authorized role ({HOW})"
            else:
                message = authorizer.admin_refusal(who, HOW) if need_admin else None
            if message is not None:
                await context.abort(grpc.StatusCode.PERMISSION_DENIED, message)

        if not handler.unary_unary:  # the admin service's calls are all unary: nothing else is served unchecked
            return None
        behavior = handler.unary_unary

        @functools.wraps(behavior)
        async def checked(request: Any, context: grpc.aio.ServicerContext) -> Any:
            await check(context)
            return await behavior(request, context)

        return grpc.unary_unary_rpc_method_handler(checked, handler.request_deserializer, handler.response_serializer)


def server_credentials(tls: Any) -> grpc.ServerCredentials:  # tls: bookie.tls.Tls
    """The gRPC port's TLS, from the bookie's: its key and chain, a client certificate required with
    tlsClientAuthentication, and the files reloaded as the bookie port's are (gRPC asks as a connection starts)."""

    def configuration() -> Any:
        material = tls.material
        return grpc.ssl_server_certificate_configuration(
            [(material.key, material.chain)], root_certificates=material.trusted
        )

    seen = [tls.generation]

    def fetch() -> Any:
        tls.refresh()
        if tls.generation == seen[0]:
            return None
        seen[0] = tls.generation
        return configuration()

    return grpc.dynamic_ssl_server_credentials(
        configuration(), fetch, require_client_authentication=tls.settings.client_authentication
    )

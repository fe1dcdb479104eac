"""Apache BookKeeper's HTTP admin API on our bookies (``httpServerEnabled``, ``httpServerPort``, ``httpServerHost``):
the paths, methods, parameters, bodies and status codes of BookKeeper 4.17.4's ``server/http/service/*.java``,
written as its ``JsonUtil`` writes them (bookie.codec.jackson). One router; the handlers by group:

- :mod:`.bookie`: this bookie — probes, metrics, configuration, state, read-only, GC and compaction, its files, the
  sanity test;
- :mod:`.bookies`: the cluster's bookies — list_bookies, list_bookie_info, cluster_info;
- :mod:`.ledger`: delete, list, metadata, read;
- :mod:`.autorecovery`: status, bookie (recover), list_under_replicated_ledger, who_is_auditor, trigger_audit,
  lost_bookie_recovery_delay, decommission.

aiohttp serves it, on the bookie's event loop: a maintained HTTP server that keeps the event loop's model (one loop,
no thread per request), and whose handlers can await the bookie's own coroutines (read-only transitions). Nothing
here blocks that loop: ZooKeeper calls run in threads, and the cluster-wide operations run on a BookKeeper client of
the bookie's (its own loop thread, on the bookie's ZooKeeper session), as BKHttpServiceProvider keeps a
BookKeeperAdmin. Long ones (recover, decommission) are started and answered at once, as BookKeeper does.

Security: as in BookKeeper, without ``httpServerTlsEnable`` every endpoint is unauthenticated, and many change the
bookie or the cluster (read-only, GC, delete a ledger, recover, decommission, autorecovery): they are as open as the
address they listen on, ``httpServerHost`` (the sandbox binds 127.0.0.1). With it, as BookKeeper's Vert.x server:
HTTPS, a client certificate signed by the trust store required of every client (``httpServerKeyStorePath``,
``httpServerKeyStorePassword``, ``httpServerTrustStorePath``, ``httpServerTrustStorePassword``: PKCS12 stores here,
JKS in BookKeeper). Where we go further: with BookieAuthZFactory on (bookie/server/auth.py), a request that changes
something (any method but GET and HEAD), reads ledger entries (``ledger/read``) or writes a ledger (``sanity``)
needs a client certificate with an admin role (403 otherwise) — refused without HTTPS, as no certificate is seen.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import ssl
from collections.abc import Callable, Coroutine
from typing import Any

from aiohttp import web

from bookie.errors import InvalidArgument
from bookie.server.http.autorecovery import AutoRecoveryApi
from bookie.server.http.bookie import BookieApi
from bookie.server.http.bookies import BookiesApi
from bookie.server.http.common import Failed, Handler, text
from bookie.server.http.ledger import LedgerApi
from bookie.tls import Tls, TlsSettings, ou_of_subject

log = logging.getLogger(__name__)
ADMIN_GETS = frozenset({"/api/v1/ledger/read", "/api/v1/bookie/sanity"})  # reads without a password; writes


class HttpAdmin:
    """The server, over a :class:`bookie.server.bookie.BookieServer`."""

    def __init__(self, bookie: Any) -> None:
        self.bookie = bookie
        self.runner: web.AppRunner | None = None
        self._client: Any = None  # bookie.client.BookKeeper, made on first use
        self._client_lock = asyncio.Lock()
        self._background: set[concurrent.futures.Future[Any]] = set()
        app = web.Application(middlewares=[self._roles, self._errors])
        for group in (BookieApi(self), BookiesApi(self), LedgerApi(self), AutoRecoveryApi(self)):
            for path, handler in group.routes().items():
                app.router.add_route("*", path, handler)
        self.app = app

    async def start(self, host: str, port: int) -> int:
        """Listen; return the port (``port`` 0 picks a free one)."""
        self.runner = web.AppRunner(self.app, access_log=None, handle_signals=False)
        await self.runner.setup()
        site = web.TCPSite(self.runner, host, port, reuse_address=True, ssl_context=self._ssl_context())
        await site.start()
        return int(self.runner.addresses[0][1])  # (host, port[, ...]) of the one site

    def _ssl_context(self) -> ssl.SSLContext | None:
        """HTTPS with httpServerTlsEnable: a client certificate required (Vert.x's ClientAuth.REQUIRED)."""
        config = self.bookie.config
        if not config.httpServerTlsEnable:
            return None
        if not config.httpServerKeyStorePath or not config.httpServerTrustStorePath:
            raise InvalidArgument("httpServerTlsEnable=true needs httpServerKeyStorePath and httpServerTrustStorePath")
        settings = TlsSettings(
            key_store_type="PKCS12",
            key_store=config.httpServerKeyStorePath,
            key_store_password=config.httpServerKeyStorePassword.encode(),
            trust_store_type="PKCS12",
            trust_store=config.httpServerTrustStorePath,
            trust_store_password=config.httpServerTrustStorePassword.encode(),
            client_authentication=True,
            refresh_seconds=(
                config.properties.get("tlsCertFilesRefreshDurationSeconds", "0").isdigit()
                and int(config.properties.get("tlsCertFilesRefreshDurationSeconds", "0"))
            )
            or 0,
        )
        tls = Tls(settings, "server")
        context = tls.context()

        # per handshake: the current key and chain
        def reloaded(connection: Any, _server_name: str | None, _context: ssl.SSLContext) -> None:
            connection.context = tls.context()

        context.sni_callback = reloaded
        return context

    @web.middleware
    async def _roles(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        authorizer = self.bookie.config.authorizer
        if authorizer.enabled and (request.method not in ("GET", "HEAD") or request.path in ADMIN_GETS):
            certificate = request.transport.get_extra_info("peercert") if request.transport else None
            who = None
            if certificate:
                who = authorizer.principal(ou_of_subject(certificate.get("subject", ())), str(request.remote))
            refusal = authorizer.admin_refusal(who, "over HTTPS: httpServerTlsEnable=true")
            if refusal is not None:
                log.warning("HTTP %s %s from %s refused: %s", request.method, request.path, request.remote, refusal)
                return text(403, refusal)
        return await handler(request)

    async def close_client(self) -> None:
        """Before the bookie closes its ZooKeeper session: end the client and what runs on it (a recovery)."""
        async with self._client_lock:
            client, self._client = self._client, None
        if client is not None:
            await asyncio.to_thread(client.close)

    async def stop(self) -> None:
        await self.close_client()
        if self.runner is not None:
            await self.runner.cleanup()

    @web.middleware
    async def _errors(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            return await handler(request)
        except web.HTTPException:
            raise
        except Exception as exc:  # noqa: BLE001 - as BookKeeper: any failure is a 500, empty body; the reason is logged
            log.warning("HTTP %s %s failed: %s", request.method, request.path_qs, exc or type(exc).__name__)
            return text(500, "")

    # ---- the cluster-wide operations' client ----
    async def client(self) -> Any:
        """The bookie's BookKeeper client (made on first use: most bookies never need it)."""
        async with self._client_lock:
            if self._client is None:
                if self.bookie.shutting_down:
                    raise Failed("the bookie is shutting down")
                from bookie.client import BookKeeper
                from bookie.client.config import ClientConfig

                config = ClientConfig(tls=self.bookie.config.client_tls())  # its certificate, to TLS-only bookies
                self._client = await asyncio.to_thread(BookKeeper, store=self.bookie.store, config=config)
        return self._client

    async def run(self, operation: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> Any:
        """``operation(core, *args)``, a coroutine of the client's async core, run on the client's loop."""
        client = await self.client()
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(operation(client.core, *args), client.loop))

    async def start_background(self, what: str, operation: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        """Start ``operation(core, *args)`` on the client's loop and return: BookKeeper answers such requests at
        once, from its single background executor. How it ended goes to the log."""
        client = await self.client()
        future = asyncio.run_coroutine_threadsafe(operation(client.core, *args), client.loop)
        self._background.add(future)
        future.add_done_callback(lambda done: self._ended(what, done))

    def _ended(self, what: str, future: concurrent.futures.Future[Any]) -> None:
        self._background.discard(future)
        if future.cancelled():
            log.info("%s: stopped with the bookie", what)
        elif future.exception() is not None:
            log.warning("%s failed: %s", what, future.exception())

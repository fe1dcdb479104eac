"""The bookie process: cookie check, journal replay, serving, registration, read-only mode, shutdown.

Start-up order (BookKeeper: bookie/BookieImpl.java): lock the directories and check the ports are free (claim.py), check
cookies, replay the journal and flush, serve, write a new bookie's cookie, then register — so a bookie is visible to
clients only once everything it acknowledged before a crash is back in place, and a start that fails leaves nothing
behind that would refuse the next one.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import threading
from dataclasses import replace
from functools import partial
from http.server import ThreadingHTTPServer
from typing import TYPE_CHECKING

import grpc

from bookie._proto import bookie_admin_pb2_grpc
from bookie.codec import frames
from bookie.daemon import collect_less
from bookie.errors import BookieIOError
from bookie.meta.ledger_manager import LedgerManager
from bookie.meta.registration import (
    DISK_THRESHOLD,
    JOURNAL_FAILURE,
    METRICS_PORT,
    OPERATOR,
    READ_ONLY_REASON,
    READONLY,
    WRITABLE,
    BookieRegistry,
    BookieServiceInfo,
)
from bookie.meta.store import MetadataStore
from bookie.meta.uri import parse_service_uri
from bookie.server.admin import BookieAdminServicer
from bookie.server.claim import DirectoryLocks, address_in_use, check_port_free
from bookie.server.config import BookieConfig
from bookie.server.cookie_check import check_cookies, write_cookies
from bookie.server.handlers import BookieHandlers
from bookie.server.metrics import BookieStats
from bookie.server.network import BookieNetwork
from bookie.server.overreplication import remove_over_replicated
from bookie.server.wire import WireServer
from bookie.storage.db.storage import DbLedgerStorage
from bookie.storage.dirs import LedgerDirs
from bookie.storage.gc import GarbageCollector
from bookie.storage.gc_group import GarbageCollectors
from bookie.storage.interleaved import InterleavedLedgerStorage
from bookie.storage.ledger_storage import LedgerStorage

if TYPE_CHECKING:
    from bookie.server.http import HttpAdmin

log = logging.getLogger(__name__)
MAX_MESSAGE = 64 * 1024 * 1024
# The journal and sync threads wait on fsync without the GIL; getting it back took up to CPython's 5 ms switch
# interval while the event loop was busy, and acknowledgements queued behind it. With 0.5 ms, the Java client at a
# fixed 10k adds/s on three of our bookies (benchmarks/java/JavaClientBench.java paced, 2 cores, alternating
# restarts): p99 518 / 412 ms -> 146 / 139 ms; bkctl bench write at max rate was within the run-to-run noise.
GIL_SWITCH_INTERVAL = 0.0005
GRPC_OPTIONS = [
    ("grpc.max_receive_message_length", MAX_MESSAGE),
    ("grpc.max_send_message_length", MAX_MESSAGE),
    ("grpc.so_reuseport", 0),
]


class BookieServer:
    def __init__(self, config: BookieConfig, network: BookieNetwork):
        self.config = config
        self.network = network
        self.bookie_id = network.bookie_id
        self.stats = BookieStats(len(config.journal_dirs))
        self.store: MetadataStore | None = None
        self.storage: LedgerStorage | None = None
        self.collectors: GarbageCollectors | None = None
        self.server: grpc.aio.Server | None = None
        self.read_only_by_operator = False
        self.read_only_by_disk = False
        self.journal_failure: str | None = None  # a journal write or fsync failed: read-only until restarted
        self.disks_failed: str | None = None  # why the ledger disks were declared failed: the bookie stops
        self.stopping = asyncio.Event()  # set when the bookie stops itself (failed disks)
        self.shutting_down = False
        self.metrics_port: int | None = None
        self.metrics_server: ThreadingHTTPServer | None = None  # serves /metrics on prometheusStatsHttpPort
        # the ledger and index directories and their disks' state (the index ones are the ledger ones unless
        # indexDirectories is set apart), checked every diskCheckInterval
        self.ledger_dirs = LedgerDirs(config.ledger_dirs, config.disk_thresholds())
        self.index_dirs = (
            self.ledger_dirs
            if config.index_dirs == config.ledger_dirs
            else LedgerDirs(config.index_dirs, config.disk_thresholds())
        )
        self.admin_port: int | None = None
        self.wire: WireServer | None = None
        self.http: HttpAdmin | None = None  # with httpServerEnabled
        self.http_port: int | None = None
        self.running = False  # serving and registered: /api/v1/bookie/is_ready
        self.locks = DirectoryLocks()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._registered_state: str | None = None
        self._registered_reasons: list[str] = []
        self._register_lock = threading.Lock()

    @property
    def read_only(self) -> bool:
        return bool(self.read_only_reasons)

    @property
    def read_only_reasons(self) -> list[str]:
        """Why it is read-only, as published in its registration (registration.READ_ONLY_REASONS)."""
        causes = {
            OPERATOR: self.read_only_by_operator,
            DISK_THRESHOLD: self.read_only_by_disk,
            JOURNAL_FAILURE: self.journal_failure is not None,
        }
        return [reason for reason, applies in causes.items() if applies]

    async def start(self) -> None:
        """Claim the directories and ports, check cookies, replay, serve, write a new bookie's cookie, register.

        Nothing is read or written in the directories, nor in ZooKeeper, before the directories are locked and the
        ports are known to be free: a second bookie on the same disks or ports must be refused without a trace."""
        config, host = self.config, self.network.bind_host
        self._loop = asyncio.get_running_loop()
        self.locks.acquire(config.all_dirs)
        check_port_free(host, config.bookiePort, "bookiePort", "bookie")
        if config.admin_port is not None:
            check_port_free(host, config.admin_port, "bkctlAdminPort", "bookie admin")
        if config.prometheusStatsHttpPort >= 0:  # served from now on: holds the port for the process's life
            self.metrics_server = self.stats.serve(config.prometheusStatsHttpPort, config.prometheusStatsHttpAddress)
            self.metrics_port = self.metrics_server.server_port
        if config.httpServerEnabled:  # from now on too: /heartbeat answers, and is_ready says 503, during replay
            from bookie.server.http import HttpAdmin  # aiohttp: imported only by bookies that serve it

            self.http = HttpAdmin(self)
            try:
                self.http_port = await self.http.start(config.httpServerHost, config.httpServerPort)
            except OSError:
                raise address_in_use(
                    config.httpServerHost, config.httpServerPort, "httpServerPort", "HTTP admin"
                ) from None
        # off the event loop from here: the HTTP admin server answers its probes while ZooKeeper is slow
        self.store = await asyncio.to_thread(
            MetadataStore,
            parse_service_uri(config.metadataServiceUri),
            session_timeout=config.zkTimeout / 1000,
            security=config.zk_security,
        )
        cookies = await asyncio.to_thread(check_cookies, self.store, self.bookie_id, config)
        # as BookieImpl's dirsMonitor.init(): the disks are checked before storage opens, so that no new entry log
        # or index file goes to a directory already full
        self._check_disks()
        storage = await asyncio.to_thread(self._open_storage)
        replayed = await asyncio.to_thread(storage.start)
        self.storage = storage  # only now: a replay that failed must not be checkpointed by stop()
        for journal in storage.journals:
            journal.on_failure = self._journal_failed
        storage.disk_errors.on_failed = self._disks_failed
        log.info("bookie %s: storage ready (%d journal records replayed)", self.bookie_id, replayed)
        self.collectors = GarbageCollectors(
            [
                GarbageCollector(
                    unit,
                    config.gc(),
                    self._live_ledgers,
                    where,
                    partial(remove_over_replicated, self._metadata(), self.bookie_id, where=where),
                )
                for unit, where in storage.gc_units()
            ]
        )
        db_dirs = storage.dirs if isinstance(storage, DbLedgerStorage) else None
        self.stats.watch_gc(self.collectors, db_dirs)
        self.collectors.start()
        self.stats.watch(self.storage)
        self.stats.start(config.prometheusStatsLatencyRolloverSeconds)

        if config.admin_port is not None:  # the gRPC admin service (bkctlAdminPort -1: none)
            from bookie.server.grpc_auth import RoleInterceptor

            self.server = grpc.aio.server(options=GRPC_OPTIONS, interceptors=[RoleInterceptor(config.authorizer)])
            servicer = BookieAdminServicer(self)
            bookie_admin_pb2_grpc.add_BookieAdminServicer_to_server(servicer, self.server)
            self.admin_port = self._bind(self.server, config.admin_port, "bkctlAdminPort", "bookie admin")
            await self.server.start()
        address = _host_port(host, config.bookiePort)
        self.wire = WireServer(self, BookieHandlers(self), config.nettyMaxFrameSizeBytes)
        if not frames.ACCELERATED:  # said before the bookie registers: whoever sees it registered can read this
            log.warning(
                "BookKeeper's protocol runs in Python here: the C frame codec (bookie.codec._frames) was not built "
                "when bkctl was installed, and each add or read costs the bookie ~4x the CPU; reinstall bkctl "
                "where a C compiler and Python's headers are (e.g. apt-get install gcc libc6-dev python3-dev)"
            )
        try:
            await self.wire.start(host, config.bookiePort)
        except OSError:
            raise address_in_use(host, config.bookiePort, "bookiePort", "bookie") from None
        self._check_disks()
        self._watch_server(self.wire)
        await asyncio.to_thread(write_cookies, self.store, cookies)  # last: see cookie_check
        await asyncio.to_thread(self._register)
        self.running = True
        self.store.on_session(lost=self._session_lost, connected=self._session_connected)
        log.info(
            "bookie %s serving on %s (admin port %s, metrics port %s, HTTP port %s)",
            self.bookie_id,
            address,
            self.admin_port,
            self.metrics_port,
            self.http_port,
        )
        collect_less()

    def _open_storage(self) -> LedgerStorage:
        """The ledger storage ledgerStorageClass names: DbLedgerStorage, or InterleavedLedgerStorage (which also
        serves SortedLedgerStorage's files)."""
        if self.config.db_storage:
            return DbLedgerStorage(self.config.storage(), self.config.db(), self.stats)
        return InterleavedLedgerStorage(self.config.storage(), self.stats, self.ledger_dirs, self.index_dirs)

    def _watch_server(self, wire: WireServer) -> None:
        """The metrics read from the bookie itself: its state, its directories, its connections."""
        # BookieStateManager's SERVER_STATUS: -1 while not registered (no state)
        states: dict[str | None, int] = {WRITABLE: 1, READONLY: 0}
        self.stats.watch_server(lambda: states.get(self._registered_state, -1), wire.connections)
        self.stats.watch_dirs("ledger", self.ledger_dirs)
        if self.index_dirs is not self.ledger_dirs:  # BookKeeper's index dirs manager, when apart
            self.stats.watch_dirs("index", self.index_dirs)

    def _bind(self, server: grpc.aio.Server, port: int, key: str, what: str) -> int:
        host = self.network.bind_host
        try:
            if self.config.tls is None:
                bound = server.add_insecure_port(_host_port(host, port))
            else:  # the admin port is as secure as the bookie port
                from bookie.server.grpc_auth import server_credentials

                bound = server.add_secure_port(_host_port(host, port), server_credentials(self.config.tls))
        except RuntimeError:
            bound = 0
        if bound == 0:
            raise address_in_use(host, port, key, what)
        return int(bound)

    def _metadata(self) -> MetadataStore:
        """The metadata store: open from early in start(), before anything registers or collects garbage."""
        assert self.store is not None, "the bookie has not started"
        return self.store

    # ---- registration and read-only mode ----
    def _info(self) -> BookieServiceInfo:
        props = {"pid": str(os.getpid())}
        if self.metrics_port:
            props[METRICS_PORT] = str(self.metrics_port)
        if self.config.bookieRack:
            props["rack"] = self.config.bookieRack
        if self.read_only_reasons:
            props[READ_ONLY_REASON] = ",".join(self.read_only_reasons)
        address = self.network.address  # BookieService publishes BookieServer.getLocalAddress(): this
        http = (self.config.httpServerHost, self.http_port) if self.http_port else None
        endpoints = BookieServiceInfo.for_bookie(
            address.host, address.port, tls=self.config.tls is not None, admin_port=self.admin_port, http=http
        )
        return replace(endpoints, properties=props)

    def _register(self) -> None:
        with self._register_lock:
            state = READONLY if self.read_only else WRITABLE
            BookieRegistry(self._metadata()).register(self.bookie_id, self._info(), state, stale_timeout=30.0)
            self._registered_state = state
            self._registered_reasons = self.read_only_reasons
            log.info("bookie %s registered as %s", self.bookie_id, state)

    def _session_lost(self) -> None:
        self._registered_state = None  # the registration was ephemeral: gone with the session

    def _session_connected(self) -> None:
        """After a session expiry kazoo reconnects with a new session: register again (off kazoo's thread)."""
        if self._registered_state is None and not self.shutting_down:
            threading.Thread(target=self._reregister, name="reregister", daemon=True).start()

    def _reregister(self) -> None:
        try:
            self._register()
        except Exception:
            log.exception("re-registration failed")

    async def _apply_read_only(self) -> None:
        wanted = READONLY if self.read_only else WRITABLE
        if wanted != self._registered_state or self.read_only_reasons != self._registered_reasons:
            await asyncio.to_thread(self._register)

    def _journal_failed(self, exc: BaseException) -> None:
        """On a journal thread: the bookie turns read-only (BookKeeper's stops); it still serves what it holds."""
        self.journal_failure = str(exc)
        log.error(
            "bookie %s: going read-only: a journal failed (%s); restart it once its disk is fixed", self.bookie_id, exc
        )
        if self._loop is not None and not self.shutting_down:
            self._loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self._apply_read_only()))

    def _disks_failed(self, reason: str) -> None:
        """On a reading thread: the ledger disks failed; the bookie stops (BookKeeper's diskFailed)."""
        self.disks_failed = reason
        log.error("bookie %s: its ledger disks failed: %s; shutting down", self.bookie_id, reason)
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self.stopping.set)

    async def set_read_only_by_operator(self, read_only: bool) -> None:
        self.read_only_by_operator = read_only
        await self._apply_read_only()

    def _live_ledgers(self, local: list[int]) -> set[int]:
        """For ledger GC: which of the bookie's ledgers the metadata store still has. A scan of every ledger id,
        then a direct look at each local ledger the scan missed (created after the scan passed its range)."""
        manager = LedgerManager(self._metadata())
        listed = set(manager.iter_ledger_ids())
        return {lid for lid in local if lid in listed or manager.exists(lid)}

    def _check_disks(self) -> None:
        """Check every ledger and index directory (LedgerDirsMonitor): a full one takes no new file; the bookie turns
        read-only once no ledger (or index) directory is writable, and writable again once one is. Only those disks
        count, as in BookKeeper: GC can free them, and the journal's do not make a bookie read-only."""
        managers = dict.fromkeys([self.ledger_dirs, self.index_dirs])
        for dirs in managers:
            dirs.check()
        full = not all(dirs.has_writable for dirs in managers)
        if full and self.config.readOnlyModeEnabled:
            if not self.read_only_by_disk:
                usage = ", ".join(f"{d} {100 * dirs.usage(d):.1f}%" for dirs in managers for d in dirs.all)
                log.warning(
                    "every ledger directory is over diskUsageThreshold %.1f%% (%s): going read-only",
                    self.config.diskUsageThreshold * 100,
                    usage,
                )
            self.read_only_by_disk = True
        elif not full and self.read_only_by_disk:
            log.info("ledger directories writable again (%s): writable", ", ".join(map(str, self.ledger_dirs.writable)))
            self.read_only_by_disk = False

    async def watch_disks(self) -> None:
        while not self.shutting_down:
            await asyncio.sleep(self.config.diskCheckInterval / 1000.0)
            self._check_disks()
            await self._apply_read_only()

    # ---- shutdown ----
    async def stop(self) -> None:
        """Unregister, stop serving, flush everything to disk."""
        if self.shutting_down:
            return
        self.shutting_down = True
        # Unregister first: a collector in the middle of a run (a ZooKeeper call while the session reconnects, a
        # compaction's flush) may take a while to stop, and until the node is gone the cluster takes this bookie
        # for a live one (decommission refuses it, placement chooses it).
        if self.store is not None and self.store.connected:  # else the node goes with the session
            try:
                BookieRegistry(self.store).unregister(self.bookie_id)
            except Exception:
                log.exception("unregister failed")
        if self.collectors is not None:  # before the store closes: their ledger GC uses it
            await asyncio.to_thread(self.collectors.stop)
        if self.wire is not None:
            await self.wire.stop(grace=2)
        if self.server is not None:
            await self.server.stop(grace=2)
        if self.http is not None:  # its client's work (a recovery) uses the ZooKeeper session
            await self.http.close_client()
        if self.store is not None:
            self.store.close()
        if self.storage is not None:
            await asyncio.to_thread(self.storage.shutdown)
            log.info("bookie %s stopped", self.bookie_id)
        if self.http is not None:  # last: probes see shuttingDown until the end
            await self.http.stop()
        if self.metrics_server is not None:
            await asyncio.to_thread(self.metrics_server.shutdown)
            self.metrics_server.server_close()
        self.stats.stop()
        self.locks.release()


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


async def serve(config: BookieConfig, network: BookieNetwork) -> None:
    """Run a bookie until SIGTERM or SIGINT, then shut down cleanly."""
    bookie = BookieServer(config, network)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await bookie.start()
        watcher = asyncio.ensure_future(bookie.watch_disks())
        signalled, failed = asyncio.ensure_future(stop.wait()), asyncio.ensure_future(bookie.stopping.wait())
        await asyncio.wait([signalled, failed], return_when=asyncio.FIRST_COMPLETED)
        for waiter in (watcher, signalled, failed):
            waiter.cancel()
    finally:
        await bookie.stop()
    if bookie.disks_failed:
        raise BookieIOError(f"bookie {bookie.bookie_id} stopped: its ledger disks failed: {bookie.disks_failed}")


def run(config: BookieConfig, network: BookieNetwork) -> None:
    sys.setswitchinterval(GIL_SWITCH_INTERVAL)
    try:
        import uvloop  # less CPU per add than asyncio's own loop (pyproject.toml has the figure)
    except ImportError:  # only the import: an ImportError raised by the bookie itself must not start it twice
        asyncio.run(serve(config, network))
    else:
        uvloop.run(serve(config, network))

"""Local bookie processes: the harness under the sandbox, the tests and the benchmarks.

Each bookie is a real bookie process (``python -m bookie.server``) in its own process group, with its own
directories, ports and ``bk_server.conf``; it can be stopped (SIGTERM, graceful), killed (SIGKILL), and started
again on the same disks.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Container
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bookie.errors import ServiceUnavailable
from bookie.files import private_dirs, write_private
from bookie.local.process import free_port, running, spawn, stop_process_group, tail
from bookie.meta.ensemble import connected_sessions

# Every server of a local bookie on 127.0.0.1 only, in BookKeeper's keys, as the oracle's bin/bk-conf writes them:
# the bookie and admin ports bind the bookie address (advertisedAddress, as listeningInterface is set), which is its
# id's host; the loopback address is allowed.
LOOPBACK_ONLY = {
    "listeningInterface": "lo",
    "advertisedAddress": "127.0.0.1",
    "allowLoopback": "true",
    "prometheusStatsHttpAddress": "127.0.0.1",
    "httpServerHost": "127.0.0.1",
}


@dataclass
class LocalBookie:
    index: int
    directory: str
    port: int
    metrics_port: int
    pid: int | None = None
    admin_port: int = 0  # 0 in the state of a sandbox made before bookies had an admin port: bookiePort + 1
    http_port: int = 0  # BookKeeper's HTTP admin API; 0 in a sandbox made before bookies served it: none
    settings: dict[str, str] = field(default_factory=dict)

    @property
    def bookie_id(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def conf_path(self) -> Path:
        return Path(self.directory) / "bk_server.conf"

    @property
    def log_path(self) -> Path:
        return Path(self.directory) / "bookie.log"

    @property
    def journal_dirs(self) -> list[str]:
        """``journalDirectories``: ``<directory>/journal`` unless the settings name others."""
        return self._dirs("journalDirectories") or [str(Path(self.directory) / "journal")]

    @property
    def ledger_dirs(self) -> list[str]:
        """``ledgerDirectories``: ``<directory>/ledgers`` unless the settings name others."""
        return self._dirs("ledgerDirectories") or [str(Path(self.directory) / "ledgers")]

    @property
    def journal_dir(self) -> str:
        return self.journal_dirs[0]

    @property
    def ledger_dir(self) -> str:
        return self.ledger_dirs[0]

    def _dirs(self, key: str) -> list[str]:
        return [d.strip() for d in self.settings.get(key, "").split(",") if d.strip()]

    @property
    def markers(self) -> tuple[tuple[str, ...], ...]:
        """What names this bookie in its command line (see :func:`bookie.local.process.running`): its configuration,
        in the bookie process that :meth:`start` runs, or in a ``bookie run`` of the CLI on the same configuration
        (an operator's, a test's, or one an earlier sandbox started) — not, say, an editor open on the file."""
        conf = str(self.conf_path)
        return (("bookie.server", "--conf", conf), ("bookie", "run", "--conf", conf))

    @property
    def data_dirs(self) -> list[str]:
        return list(dict.fromkeys([*self.journal_dirs, *self.ledger_dirs, *self._dirs("indexDirectories")]))

    @classmethod
    def create(
        cls,
        index: int,
        directory: Path,
        service_uri: str,
        settings: dict[str, str] | None = None,
        taken: Container[int] = frozenset(),
        http: bool = False,
    ):
        """``taken``: ports of the sandbox's other servers, some perhaps stopped (not bound now, theirs still).
        ``http``: serve BookKeeper's HTTP admin API (aiohttp adds ~0.3 s to a start: not for every test bookie)."""
        bookie = cls(
            index,
            str(directory),
            free_port(taken),
            free_port(taken),
            admin_port=free_port(taken),
            http_port=free_port(taken) if http else 0,
            settings=dict(settings or {}),
        )
        bookie.write_conf(service_uri)
        return bookie

    def write_conf(self, service_uri: str) -> None:
        private_dirs(self.directory)
        conf = {
            "metadataServiceUri": service_uri,
            "bookiePort": str(self.port),
            **LOOPBACK_ONLY,
            "journalDirectories": ",".join(self.journal_dirs),
            "ledgerDirectories": ",".join(self.ledger_dirs),
            "prometheusStatsHttpPort": str(self.metrics_port),
            "bkctlAdminPort": str(self.admin_port),
            "zkTimeout": "6000",
            **({"httpServerEnabled": "true", "httpServerPort": str(self.http_port)} if self.http_port else {}),
            **self.settings,
        }
        write_private(self.conf_path, "".join(f"{k}={v}\n" for k, v in conf.items()).encode())

    def start(self) -> int:
        self.pid = spawn([sys.executable, "-m", "bookie.server", "--conf", str(self.conf_path)], self.log_path)
        return self.pid

    def running(self) -> bool:
        return running(self.pid, *self.markers)

    STOP_TIMEOUT = 20.0  # seconds a clean shutdown may take before the bookie is killed

    def stop(self, kill: bool = False) -> bool:
        """Stop the bookie (SIGTERM, or SIGKILL with ``kill``). Returns whether a SIGTERM had to be followed by a
        SIGKILL: it did not shut down within STOP_TIMEOUT."""
        killed = False
        if self.pid is not None and self.running():
            killed = stop_process_group(self.pid, timeout=self.STOP_TIMEOUT, kill=kill)
        self.pid = None
        return killed

    def to_dict(self) -> dict:
        return asdict(self)


def wait_registered(store, bookies: list[LocalBookie], timeout: float = 60.0) -> None:
    """Wait until every bookie process is registered (writable or read-only) — by its own session, not a stale
    node of the process before it — and fail early, with its log, if one exits."""
    from bookie.meta.registration import BookieRegistry

    registry = BookieRegistry(store)
    host, _, port = store.uri.zk_hosts.split(",")[0].split("/")[0].rpartition(":")
    deadline = time.monotonic() + timeout
    waiting = {b.bookie_id: b for b in bookies}
    while waiting:
        registered = {
            b.bookie_id
            for b in registry.list(writable=True, readonly=True)
            if b.bookie_id in waiting and b.info and b.info.properties.get("pid") == str(waiting[b.bookie_id].pid)
        }
        # ...and by a session connected now: after a ZooKeeper restart a bookie's node comes back with its session,
        # which expires unless the bookie reconnects in time (then it registers again, on a new session)
        live = connected_sessions(host, int(port))
        if live is not None:
            registered = {b for b in registered if registry.owner(b) in live}
        for bookie_id in list(waiting):
            if bookie_id in registered:
                del waiting[bookie_id]
            elif not waiting[bookie_id].running():
                bookie = waiting[bookie_id]
                raise ServiceUnavailable(
                    f"bookie {bookie_id} exited while starting (log {bookie.log_path}):\n{tail(bookie.log_path)}"
                )
        if waiting and time.monotonic() > deadline:
            raise ServiceUnavailable(f"bookies {', '.join(waiting)} did not register within {timeout:g} s")
        if waiting:
            time.sleep(0.1)

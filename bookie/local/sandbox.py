"""The sandbox: an embedded ZooKeeper and N bookie processes under one state directory.

State lives in ``<dir>/sandbox.json``; ZooKeeper's data in ``<dir>/zookeeper/``, bookie ``i``'s in
``<dir>/bookie-<i>/``. Stopping keeps the data, so a later ``start`` of the same directory brings back the same
cluster, on the same ports.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bookie.errors import BKError, ClusterAlreadyInitialised, NotFound
from bookie.local.bookies import LocalBookie, wait_registered
from bookie.local.process import free_port, pid_alive, spawn, stop_process_group
from bookie.local.zookeeper import EmbeddedZooKeeper

STATE_FILE = "sandbox.json"
LEDGERS_ROOT = "/ledgers"
# BookKeeper's settings for low add latency, on new sandbox bookies (``--set`` overrides them): commit the journal as
# soon as its queue is empty, and write entry logs back every 512 KB. p99 add latency at 10k entries/s went from
# 9.5-15.2 ms with the defaults to 5.0-7.2 ms with both, in alternating runs (benchmarks/add_latency.py).
BOOKIE_SETTINGS = {"journalFlushWhenQueueEmpty": "true", "flushEntrylogBytes": str(512 << 10)}


def default_state_dir() -> Path:
    """``$BKCTL_SANDBOX_DIR``, else ``$XDG_STATE_HOME/bkctl/sandbox`` (``~/.local/state/bkctl/sandbox``)."""
    if os.environ.get("BKCTL_SANDBOX_DIR"):
        return Path(os.environ["BKCTL_SANDBOX_DIR"])
    base = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(base) / "bkctl" / "sandbox"


class SandboxRunning(BKError):
    """A sandbox is already running in this directory."""


@dataclass
class SandboxState:
    state_dir: str
    zk_port: int
    zk_pid: int | None = None
    bookies: list[dict] = field(default_factory=list)  # LocalBookie fields
    autorecovery_pid: int | None = None

    @property
    def service_uri(self) -> str:
        return f"zk+hierarchical://127.0.0.1:{self.zk_port}{LEDGERS_ROOT}"

    def local_bookies(self) -> list[LocalBookie]:
        return [LocalBookie(**b) for b in self.bookies]

    def to_status(self, registered: dict[str, str] | None = None) -> dict:
        """The ``sandbox status -o json`` document; ``registered`` maps bookie ids to writable/readonly."""
        registered = registered or {}
        bookies = []
        for bookie in self.local_bookies():
            state = "stopped" if not bookie.running() else registered.get(bookie.bookie_id, "starting")
            bookies.append(
                {
                    "bookieId": bookie.bookie_id,
                    "pid": bookie.pid if bookie.running() else None,
                    "port": bookie.port,
                    "state": state,
                    "journalDir": bookie.journal_dir,
                    "ledgerDir": bookie.ledger_dir,
                    "metricsPort": bookie.metrics_port,
                }
            )
        return {
            "serviceUri": self.service_uri,
            "stateDir": self.state_dir,
            "zookeeper": {"address": f"127.0.0.1:{self.zk_port}", "pid": self.zk_pid},
            "bookies": bookies,
            "autorecovery": {"pid": self.autorecovery_pid} if pid_alive(self.autorecovery_pid) else None,
        }


class Sandbox:
    def __init__(self, state_dir: Path | str | None = None):
        self.dir = Path(state_dir) if state_dir else default_state_dir()
        self.dir = self.dir.absolute()
        self.state_file = self.dir / STATE_FILE

    def load(self) -> SandboxState | None:
        try:
            return SandboxState(**json.loads(self.state_file.read_text()))
        except FileNotFoundError:
            return None

    def save(self, state: SandboxState) -> None:
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(state), indent=2))
        os.replace(tmp, self.state_file)

    def running(self) -> SandboxState | None:
        """The state of the running sandbox, or None when its ZooKeeper is not running."""
        state = self.load()
        return state if state and pid_alive(state.zk_pid) else None

    def require_running(self) -> SandboxState:
        state = self.running()
        if state is None:
            raise NotFound(f"no sandbox is running in {self.dir}")
        return state

    def start(
        self, bookies: int = 3, zk_port: int | None = None, init: bool = True, settings: dict[str, str] | None = None,
        autorecovery: bool = False,
    ) -> SandboxState:
        """Start ZooKeeper (reusing the directory's earlier port unless ``zk_port`` is given), initialise the
        cluster unless ``init`` is False, and start the bookies (those of an earlier run, plus new ones up to
        ``bookies``; none without a cluster)."""
        if state := self.running():
            raise SandboxRunning(f"a sandbox is already running in {self.dir} (ZooKeeper pid {state.zk_pid})")
        previous = self.load()
        port = zk_port or (previous.zk_port if previous else None) or free_port()
        self.dir.mkdir(parents=True, exist_ok=True)
        state = SandboxState(str(self.dir), port, bookies=previous.bookies if previous else [])
        state.zk_pid = EmbeddedZooKeeper(self.dir / "zookeeper", port).start()
        self.save(state)
        try:
            if init:
                self._init_cluster(state)
                self._start_bookies(state, bookies, settings or {})
                if autorecovery:
                    state.autorecovery_pid = spawn(
                        [sys.executable, "-m", "bkctl", "-u", state.service_uri, "autorecovery", "run"],
                        self.dir / "autorecovery.log",
                    )
                    self.save(state)
        except BaseException:
            self.stop()
            raise
        return state

    def _start_bookies(self, state: SandboxState, count: int, settings: dict[str, str]) -> None:
        local = state.local_bookies()
        for index in range(len(local), count):
            local.append(LocalBookie.create(index + 1, self.dir / f"bookie-{index + 1}", state.service_uri,
                                            {**BOOKIE_SETTINGS, **settings}))
        for bookie in local:
            if settings:
                bookie.settings.update(settings)
            bookie.write_conf(state.service_uri)
            bookie.start()
        state.bookies = [b.to_dict() for b in local]
        self.save(state)
        self._wait(state, local)

    def _wait(self, state: SandboxState, bookies: list[LocalBookie]) -> None:
        from bookie.meta.store import MetadataStore
        from bookie.meta.uri import parse_service_uri

        with MetadataStore(parse_service_uri(state.service_uri)) as store:
            wait_registered(store, bookies)

    @staticmethod
    def _init_cluster(state: SandboxState) -> None:
        from bookie.meta.layout import init_cluster
        from bookie.meta.store import MetadataStore
        from bookie.meta.uri import parse_service_uri

        with MetadataStore(parse_service_uri(state.service_uri)) as store:
            try:
                init_cluster(store)
            except ClusterAlreadyInitialised:
                pass

    def status(self) -> dict:
        from bookie.meta.registration import BookieRegistry
        from bookie.meta.store import MetadataStore
        from bookie.meta.uri import parse_service_uri

        state = self.require_running()
        with MetadataStore(parse_service_uri(state.service_uri)) as store:
            registered = {b.bookie_id: b.state for b in BookieRegistry(store).list(writable=True, readonly=True)}
        return state.to_status(registered)

    def _find(self, state: SandboxState, name: str) -> LocalBookie:
        for bookie in state.local_bookies():
            if name in (bookie.bookie_id, str(bookie.index)):
                return bookie
        known = ", ".join(f"{b.index} ({b.bookie_id})" for b in state.local_bookies()) or "none"
        raise NotFound(f"no sandbox bookie {name!r}: the sandbox has {known}")

    def _update(self, state: SandboxState, bookie: LocalBookie) -> None:
        state.bookies = [bookie.to_dict() if b["index"] == bookie.index else b for b in state.bookies]
        self.save(state)

    def stop_bookie(self, name: str, kill: bool = False) -> LocalBookie:
        """Stop one bookie: SIGTERM and a clean shutdown, or SIGKILL with ``kill`` (a crash)."""
        state = self.require_running()
        bookie = self._find(state, name)
        if not bookie.running():
            raise NotFound(f"sandbox bookie {bookie.bookie_id} is not running")
        bookie.stop(kill=kill)
        self._update(state, bookie)
        return bookie

    def start_bookie(self, name: str) -> LocalBookie:
        """Start one stopped bookie again, on its disks, and wait until it is registered."""
        state = self.require_running()
        bookie = self._find(state, name)
        if bookie.running():
            raise SandboxRunning(f"sandbox bookie {bookie.bookie_id} is already running (pid {bookie.pid})")
        bookie.start()
        self._update(state, bookie)
        self._wait(state, [bookie])
        return bookie

    def stop(self) -> SandboxState:
        """Stop everything the sandbox runs, by pid; keep the data."""
        state = self.load()
        bookies = state.local_bookies() if state else []
        if state is None or not (pid_alive(state.zk_pid) or any(b.running() for b in bookies)):
            raise NotFound(f"no sandbox is running in {self.dir}")
        if pid_alive(state.autorecovery_pid):
            stop_process_group(state.autorecovery_pid)
        state.autorecovery_pid = None
        for bookie in bookies:
            bookie.stop()
        state.bookies = [b.to_dict() for b in bookies]
        if pid_alive(state.zk_pid):
            stop_process_group(state.zk_pid)
        state.zk_pid = None
        self.save(state)
        return state

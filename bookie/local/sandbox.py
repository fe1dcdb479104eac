"""The sandbox: an embedded ZooKeeper (and, with the bookie server, N bookies) under one state directory.

State lives in ``<dir>/sandbox.json``; ZooKeeper's data in ``<dir>/zookeeper/``. Stopping keeps the data, so a
later ``start`` of the same directory brings back the same cluster.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bookie.errors import BKError, ClusterAlreadyInitialised, NotFound
from bookie.local.process import free_port, pid_alive, stop_process_group
from bookie.local.zookeeper import EmbeddedZooKeeper

STATE_FILE = "sandbox.json"
LEDGERS_ROOT = "/ledgers"


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
    bookies: list[dict] = field(default_factory=list)

    @property
    def service_uri(self) -> str:
        return f"zk+hierarchical://127.0.0.1:{self.zk_port}{LEDGERS_ROOT}"

    def to_status(self) -> dict:
        """The ``sandbox status -o json`` document."""
        return {
            "serviceUri": self.service_uri,
            "stateDir": self.state_dir,
            "zookeeper": {"address": f"127.0.0.1:{self.zk_port}", "pid": self.zk_pid},
            "bookies": self.bookies,
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

    def start(self, zk_port: int | None = None, init: bool = True) -> SandboxState:
        """Start ZooKeeper (reusing the directory's earlier port unless ``zk_port`` is given) and initialise the
        cluster unless ``init`` is False or it is initialised already."""
        if state := self.running():
            raise SandboxRunning(f"a sandbox is already running in {self.dir} (ZooKeeper pid {state.zk_pid})")
        previous = self.load()
        port = zk_port or (previous.zk_port if previous else None) or free_port()
        self.dir.mkdir(parents=True, exist_ok=True)
        state = SandboxState(str(self.dir), port)
        state.zk_pid = EmbeddedZooKeeper(self.dir / "zookeeper", port).start()
        self.save(state)
        if init:
            try:
                self._init_cluster(state)
            except BaseException:
                self.stop()
                raise
        return state

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

    def stop(self) -> SandboxState:
        """Stop everything the sandbox runs, by pid; keep the data."""
        state = self.load()
        if state is None or not (pid_alive(state.zk_pid) or any(pid_alive(b.get("pid")) for b in state.bookies)):
            raise NotFound(f"no sandbox is running in {self.dir}")
        for bookie in state.bookies:
            if pid_alive(bookie.get("pid")):
                stop_process_group(bookie["pid"])
            bookie.update(pid=None, state="stopped")
        if pid_alive(state.zk_pid):
            stop_process_group(state.zk_pid)
        stopped = SandboxState(**asdict(state))
        state.zk_pid = None
        self.save(state)
        return stopped
